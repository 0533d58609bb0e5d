"""The Spark engine: session, plan, units, write tasks."""

"""Sends to request rows (frames included) and the run's summary."""

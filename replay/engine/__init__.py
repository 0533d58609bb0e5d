"""The replay's skeleton (deltas to rows) and the one-process engine."""

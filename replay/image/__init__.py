"""The metadata image and its deltas: what each record does (the record-semantics table)."""

"""Reading a metadata history: segments, snapshots, JSON lines, dump text, into batches of records."""

"""Synthetic metadata logs: the generator, its writer and ``ctrlbatch generate-log``."""

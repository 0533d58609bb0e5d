"""The output directory (written atomically) and its report."""

"""One replay run from options to output, and the ``ctrlbatch replay`` command."""

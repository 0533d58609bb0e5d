# Two commands on a fresh machine:
#   make run   - set up .venv and run the main job (the controller-failover demo)
#   make test  - set up .venv and run the tests (lint, types, pytest)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("ctrlbatch needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m ctrlbatch.batch.demo

test: $(STAMP)
	$(BIN)/ruff check requests batch context testing tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/codec_bench.py
	$(BIN)/python benchmarks/failover_bench.py

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis

# Two commands on a fresh machine:
#   make run   - set up .venv and run the main job: the Spark replay of the shipped real KRaft log
#   make test  - set up .venv and run the tests (lint, types, pytest)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE ?= ../shared/samples/kraft-single-node
OUT    ?= replay-out

# Spark's Python workers must run the venv's interpreter; keep Spark on loopback and in UTC.
export PYSPARK_PYTHON        := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export SPARK_LOCAL_IP        := 127.0.0.1
export TZ                    := UTC

.PHONY: run test bench bench-replay java clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("ctrlbatch needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/python -m pip install --quiet -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/python -c 'import ctrlbatch.cli, pyspark, pyarrow, crc32c, kio' # fail here if the install did
	@touch $(STAMP)

# Spark needs Java 17 or newer.
java:
	@sh .ci/check-java

run: java $(STAMP)
	$(BIN)/ctrlbatch replay $(SAMPLE) --out $(OUT)

test: java $(STAMP)
	$(BIN)/ruff check requests batch context testing cli common replay transport sim controller tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

# Speed and memory targets, each against a peer or baseline measured in the same run; the figures
# go to benchmarks/results/*.json and README.md's table is rendered from them.
bench: $(STAMP)
	$(BIN)/python benchmarks/figures.py run
	$(BIN)/python benchmarks/figures.py readme

# The Spark replay at 1M and 10M generated records (the logs are generated under /tmp first; long).
bench-replay: java $(STAMP)
	$(BIN)/python benchmarks/figures.py run --with-replay replay_bench
	$(BIN)/python benchmarks/figures.py readme

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis $(OUT) spark-warehouse

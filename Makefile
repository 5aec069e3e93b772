# `make test` and `make demo` each set up their own virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test demo protos lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/flotilla demo

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

bench: $(STAMP)
	$(BIN)/python bench/store.py
	$(BIN)/python bench/schedule.py
	$(BIN)/python bench/watch_latency.py
	$(BIN)/python bench/rollout.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# `make test` and `make demo` each set up their own virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test fuzz chaos demo protos lint bench clean lock

# Every package, pip and the build backend included, at the version and hash of the lock files
# (requirements/README.md); the project itself is then installed without resolving anything.
$(STAMP): pyproject.toml requirements/build.lock requirements/test.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --require-hashes -r requirements/build.lock
	$(BIN)/python -m pip install -q --require-hashes -r requirements/test.lock
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Re-resolve the lock files after a change to pyproject.toml's dependencies (needs uv).
lock:
	uv pip compile pyproject.toml --extra test --generate-hashes --universal --python-version 3.11 -o requirements/test.lock
	uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 -o requirements/run.lock
	uv pip compile requirements/build.in --generate-hashes --universal --python-version 3.11 -o requirements/build.lock

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	# Three workers on two cores: much of an end-to-end test is waiting on a plane's timers and
	# processes, which a third worker fills (a test file each at a time; every test already awaits
	# its conditions with deadlines made for a loaded machine).
	$(BIN)/pytest -q --durations=25 -n 3 --dist loadfile

# The property tests of admission with many more examples than `make test` runs (minutes, not seconds).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=long $(BIN)/pytest -q --timeout=0 tests/property

# The chaos suite's long versions (tests/chaos: 200 bindings, every service killed in turn, long
# flapping); `make test` runs a short version of each. FLOTILLA_CHAOS_SEED=<seed> repeats a run.
chaos: $(STAMP)
	$(BIN)/pytest -q -s -m long --durations=0 tests/chaos

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

demo: $(STAMP)
	$(BIN)/flotilla demo

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

bench: $(STAMP)
	$(BIN)/python -m flotilla.plane.benchmarks.store
	$(BIN)/python -m flotilla.plane.benchmarks.schedule
	$(BIN)/python -m flotilla.plane.benchmarks.hostile
	$(BIN)/python -m flotilla.plane.benchmarks.authorization
	$(BIN)/python -m flotilla.plane.benchmarks.watch_latency
	$(BIN)/python -m flotilla.plane.benchmarks.rollout
	$(BIN)/python -m flotilla.plane.benchmarks.failover

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# openenv-gen developer tasks. Everything runs in .venv (made on first use).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
GENERATED := $(wildcard generated/*/pyproject.toml)

.PHONY: demo install test test-fast check catalog bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The main job on the embedded default: generate the Wordle package into ./wordle-openenv.
demo: $(BIN)/python
	$(BIN)/pip install -q -c constraints.txt .
	$(BIN)/openenv-gen wordle

# Generator + runtime + every checked-in generated package, editable, with test extras.
install: $(BIN)/python
	$(BIN)/pip install -q -c constraints.txt -e ./runtime -e ".[test]" $(foreach p,$(GENERATED),-e $(dir $(p)))

# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
test: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q; \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran"; exit 1; fi; exit $$rc

test-fast: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -m "not rollout"

check: install
	$(BIN)/openenv-gen check

# Rebuild the catalog's snapshots from the real captures.
catalog: install
	$(BIN)/python -m openenvgen.corpus ../shared/corpus

# Benchmarks P1..P5 (bench/run.py): writes bench/out/results.json and bench/out/results.md.
# `make bench QUICK=1` is the short run (P4 at 16@4 only, P5 once each).
bench: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python bench/run.py $(if $(QUICK),--quick)

clean:
	rm -rf $(VENV) build dist wordle-openenv .pytest_cache .hypothesis

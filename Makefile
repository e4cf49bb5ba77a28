# openenv-gen developer tasks. Everything runs in .venv (made on first use).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
GENERATED := $(wildcard generated/*/pyproject.toml)

.PHONY: demo install lint test test-fast check catalog bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The README's first steps on the embedded default: openenv-gen, the runtime (not on PyPI
# yet) and uv (OpenEnv's UV provider runs envs with it) into .venv; ./wordle-openenv
# generated and installed; a vf-eval dry run (resolves the installed taskset and its
# config, runs nothing) to show that vf-eval finds it.
demo: $(BIN)/python
	$(BIN)/pip install -q -c constraints.txt . ./schemas ./servers ./runtime uv
	$(BIN)/openenv-gen wordle
	$(BIN)/pip install -q -c constraints.txt ./wordle-openenv
	mkdir -p build
	$(BIN)/vf-eval wordle-openenv -m MODEL --no-push --dry-run --output-dir build/demo > build/demo.log 2>&1 \
		|| { cat build/demo.log; exit 1; }
	@echo "ready: . $(VENV)/bin/activate && vf-eval wordle-openenv -m MODEL --no-push"

# Generator + schemas + servers + runtime + every checked-in generated package, editable, with the test,
# docs and lint extras. Installed again only when a project file or the constraints change
# (editable installs follow code edits), not by every target that needs it.
INSTALL_INPUTS := pyproject.toml constraints.txt schemas/pyproject.toml servers/pyproject.toml runtime/pyproject.toml \
	tests/support/pyproject.toml $(GENERATED)

install: $(VENV)/.installed

$(VENV)/.installed: $(BIN)/python $(INSTALL_INPUTS)
	$(BIN)/pip install -q -c constraints.txt -e ./schemas -e ./servers -e ./runtime -e ./tests/support -e ".[test,docs,lint]" $(foreach p,$(GENERATED),-e $(dir $(p)))
	touch $@

# The whole repository, generated/ included: ruff's rules and its formatting (both configured
# in pyproject.toml), then mypy on the packages pyproject.toml's [tool.mypy] names.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# pytest exits 5 when it collected nothing: that is a failure here, never a pass. The 25
# slowest tests are listed at the end, to keep CI inside its time budget. Most tests wait on
# servers and subprocesses, so they run on JOBS pytest-xdist workers (2 by default; whole
# modules per worker, the Docker ones on one: xdist's loadgroup, with the groups
# tests/conftest.py gives): `make test JOBS=0` runs in one process.
JOBS ?= 2
test: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -n $(JOBS) --dist loadgroup --durations=25; \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests ran"; exit 1; fi; exit $$rc

test-fast: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -m "not rollout"

check: install
	$(BIN)/openenv-gen check

# Recapture every upstream env from a huggingface/OpenEnv checkout (each started as the UV
# provider starts it) into the captures the tests replay (with each env's seed verdict
# and its server's validation rulings), and rebuild from them the catalog's snapshots, seed
# verdicts and source commit, and the recordings `openenv-gen replay` serves: `make catalog OPENENV=PATH [COMMIT=SHA]
# [PYTHONS="3.12=/path/to/python3.12"]` (COMMIT when PATH is an export, not a git
# checkout; PYTHONS: VERSION=PATH for each interpreter a catalog entry asks for, e.g.
# grid_world's 3.12, when uv cannot find it). Then regenerate the packages.
catalog: install
	@test -n "$(OPENENV)" || { echo "usage: make catalog OPENENV=PATH-TO-OPENENV-CHECKOUT [COMMIT=SHA] [PYTHONS=VERSION=PATH ...]"; exit 64; }
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/openenv-gen capture "$(OPENENV)" --out tests/fixtures/captures \
		--catalog generator/openenvgen/catalog/data --jobs 2 $(if $(COMMIT),--commit $(COMMIT)) $(foreach p,$(PYTHONS),--python $(p))
	$(BIN)/python -c 'from pathlib import Path; from openenvgen_runtime.replay.recording import write_recordings; \
		write_recordings(Path("tests/fixtures/captures"))'

# The benchmarks (bench/run.py; each in the bench/ module named after its id), each side by
# side in one run: writes bench/out/results.json and run.json; bench/RESULTS.md is rendered
# from saved run.json files (`python bench/run.py --render bench/runs/*.json`).
# `make bench QUICK=1`: smaller sizes, the same comparisons (bench/run.py says which).
bench: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python bench/run.py $(if $(QUICK),--quick)

# The documentation site into build/site (docs/, mkdocs.yml): --strict makes a broken link or
# anchor, a page left out of the nav, or a reference page that cannot be rendered from the
# code fail the build. The two variables silence a banner the docs plugins print.
docs: install
	PATH="$(abspath $(BIN)):$$PATH" NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true \
		$(BIN)/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) build dist wordle-openenv .pytest_cache .hypothesis

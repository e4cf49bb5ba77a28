"""Where things are in the repository, for the tests and the benchmarks alike.

The one definition of the repository's root: tests sit one or two folders below tests/, so
a `Path(__file__).parents[N]` in a test module is a path that breaks when the module moves.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""The repository's root (the support package is installed editable from tests/support)."""
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
"""Env projects (uv_env, uv_task_env) and the upstream envs' captures (captures/) the tests replay."""
HOSTILE = TESTS / "hostile"
"""Schemas that try to break the generated code (odd names, cycles, unions)."""
BROKEN_SPECS = TESTS / "broken_specs"
"""Schema files the generator must refuse, with the expected exit code and message."""
GENERATED = ROOT / "generated"
"""The checked-in generated packages."""
OPENENV_GEN = str(Path(sys.executable).with_name("openenv-gen"))
"""The `openenv-gen` script next to this interpreter (the venv's)."""

UV_FIXTURE_PROJECT = FIXTURES / "uv_env"
"""The guess-the-number env as a uv project (what the UV, Docker and Swarm tests launch)."""
UV_FIXTURE_APP = "guess_env.server:app"
"""Its ASGI app, as uvicorn imports it from inside the project."""
UV_CODE_FIXTURE_PROJECT = FIXTURES / "uv_code_env"
"""An env that runs the model's Python (a code-executing env) as a uv project."""
UV_CODE_FIXTURE_APP = "code_env.server:app"
"""Its ASGI app, as uvicorn imports it from inside the project."""
UV_TASK_FIXTURE_PROJECT = FIXTURES / "uv_task_env"
"""A counting env as an openenv 0.10 uv project whose own server serves the Task API."""
UV_TASK_FIXTURE_APP = "count_env.server:app"
"""Its ASGI app, as uvicorn imports it from inside the project."""

"""Shared fixtures: real OpenEnv servers on loopback, the corpus, and generated packages."""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from openenvgen.render import render_package
from openenvgen.spec import EnvSpec

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
_counter = itertools.count()


def corpus_dirs() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if (p / "schema.json").exists()) if CORPUS.is_dir() else []


@pytest.fixture(scope="session")
def wordle_server() -> Iterator[str]:
    from tests.support.fixture_envs import make_wordle_app
    from tests.support.servers import serve_app

    with serve_app(make_wordle_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="session")
def grid_server() -> Iterator[str]:
    from tests.support.fixture_envs import make_grid_app
    from tests.support.servers import serve_app

    with serve_app(make_grid_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="session")
def mcp_server() -> Iterator[str]:
    from tests.support.fixture_envs import make_mcp_app
    from tests.support.servers import serve_app

    with serve_app(make_mcp_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def wordle_pkg(wordle_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The wordle fixture env's package, generated for this test module; its id."""
    from tests.support.adapters import generate_from_server

    return generate_from_server("wordle", wordle_server, tmp_path_factory.mktemp("pkgs"))


@pytest.fixture(scope="module")
def mcp_pkg(mcp_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The MCP fixture env's package, generated for this test module; its id."""
    from tests.support.adapters import generate_from_server

    return generate_from_server("echo_add", mcp_server, tmp_path_factory.mktemp("pkgs"))


def import_generated(spec: EnvSpec, root: Path) -> ModuleType:
    """Write the package under `root` and import its `models` module under a unique name."""
    files = render_package(spec)
    pkg = root / spec.package
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, "utf-8")
    name = f"_gen{next(_counter)}_{spec.module}_models"
    spec_ = importlib.util.spec_from_file_location(name, pkg / spec.module / "models.py")
    assert spec_ and spec_.loader
    module = importlib.util.module_from_spec(spec_)
    sys.modules[name] = module
    spec_.loader.exec_module(module)
    return module

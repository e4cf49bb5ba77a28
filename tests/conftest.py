"""Shared fixtures: real OpenEnv servers on loopback, the corpus, and generated packages.

It also keeps skips loud. What a run could not test here is listed once in a terminal
summary section: each collected test module's `SUMMARY` lines (e.g. the catalog envs that
have no offline episode), and one line per reason a group of tests skipped. Tests marked
`docker` or `swarm` skip when no Docker daemon answers, and fail instead when
OPENENVGEN_REQUIRE_DOCKER=1 (set by .ci/run, so CI never passes without them).
"""

from __future__ import annotations

import importlib
import itertools
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from openenvgen.render import render_package
from openenvgen.spec import EnvSpec

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
_counter = itertools.count()
REQUIRE_DOCKER = "OPENENVGEN_REQUIRE_DOCKER"
"""Set to 1, a docker/swarm test that would skip for want of a daemon fails instead."""
DOCKER_MARKERS = ("docker", "swarm")
_NOTES = pytest.StashKey[list[str]]()
_DOCKER_PROBLEM = pytest.StashKey[tuple[str | None]]()


# --- what this run did not test, said once --------------------------------------------------


def summary_note(config: pytest.Config, line: str) -> None:
    """Add `line` (once) to this run's terminal summary section."""
    notes = config.stash.setdefault(_NOTES, [])
    if line not in notes:
        notes.append(line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules = {id(m): m for m in (getattr(item, "module", None) for item in items) if m is not None}
    for module in modules.values():
        for line in getattr(module, "SUMMARY", ()):
            summary_note(config, line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    notes = config.stash.get(_NOTES, [])
    if notes:
        terminalreporter.section("not tested on this machine", yellow=True, bold=True)
        for line in notes:
            terminalreporter.write_line(line, yellow=True, bold=True)


def skip_loudly(config: pytest.Config, group: str, reason: str, *, required_by: str | None = None) -> None:
    """Skip the current test for `reason`, with one summary line per (group, reason); fail
    instead when the environment variable `required_by` is 1."""
    if required_by and os.environ.get(required_by) == "1":
        pytest.fail(f"{group} cannot run here ({required_by}=1 requires them): {reason}", pytrace=False)
    summary_note(config, f"SKIPPED {group}: {reason}")
    pytest.skip(f"{group}: {reason}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not any(item.get_closest_marker(m) for m in DOCKER_MARKERS):
        return
    if _DOCKER_PROBLEM not in item.config.stash:
        from tests.support.docker_images import daemon_problem

        item.config.stash[_DOCKER_PROBLEM] = (daemon_problem(),)
    (problem,) = item.config.stash[_DOCKER_PROBLEM]
    if problem:
        skip_loudly(item.config, "docker and swarm tests", f"they need a Docker daemon: {problem}", required_by=REQUIRE_DOCKER)


# --- fixtures --------------------------------------------------------------------------------


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


@pytest.fixture
def token() -> Iterator[str]:
    """A label value (TEST_LABEL) for one docker/swarm test's containers and services;
    whatever a failing test leaves is removed."""
    from tests.support import docker_images

    value = uuid.uuid4().hex
    yield value
    docker_images.remove_labelled(value)


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

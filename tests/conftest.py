"""Shared fixtures: real OpenEnv servers on loopback and packages generated from them.

It also keeps skips loud (the helpers are `openenvgen_testsupport.skips`). What a run could
not test here is listed once in a terminal summary section: each collected test module's
`SUMMARY` lines (e.g. the catalog envs that have no offline episode), and one line per reason
a group of tests skipped. Tests marked `docker` or `swarm` skip when no Docker daemon answers,
and fail instead when OPENENVGEN_REQUIRE_DOCKER=1 (set by .ci/run, so CI never passes without
them). Helpers that tests import live in `openenvgen_testsupport` (tests/support), never here.

`make test` runs on pytest-xdist workers, each taking whole test modules (a module's fixtures,
e.g. a cluster, are built once); the modules that drive Docker (DOCKER_MODULES: the host
daemon, its swarm, the namespaced cluster) form one unit, run one after another on one worker
while the other workers take the rest, slowest folder (e2e) first. Each worker's summary lines
are sent to the controller, which prints them once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.skips import DOCKER_MARKERS, REQUIRE_DOCKER, skip_loudly, summary_note, summary_notes

_DOCKER_PROBLEM = pytest.StashKey[tuple[str | None]]()
_NOTES_KEY = "openenvgen_summary_notes"
DOCKER_MODULES = frozenset(
    {
        "tests/e2e/test_docker.py",
        "tests/e2e/test_sandbox.py",
        "tests/e2e/test_swarm.py",
        "tests/e2e/test_swarm_access.py",
        "tests/e2e/test_swarm_sandbox.py",
        "tests/e2e/test_multinode.py",
        "tests/e2e/test_trl_sandbox.py",
    }
)
"""Test modules that drive Docker for all their tests: one unit of work on one xdist worker."""


# --- what this run did not test, said once --------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules = {id(m): m for m in (getattr(item, "module", None) for item in items) if m is not None}
    for module in modules.values():
        for line in getattr(module, "SUMMARY", ()):
            summary_note(config, line)
        declared = getattr(module, "pytestmark", [])
        marks = {m.name for m in (declared if isinstance(declared, list) else [declared])}
        relative = Path(module.__file__).relative_to(config.rootpath).as_posix()
        if marks & {*DOCKER_MARKERS, "multinode"} and relative not in DOCKER_MODULES:
            raise pytest.UsageError(f"{relative} drives Docker: add it to DOCKER_MODULES in tests/conftest.py")


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker_output = getattr(session.config, "workeroutput", None)  # set on an xdist worker only
    if worker_output is not None:
        worker_output[_NOTES_KEY] = summary_notes(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """On the xdist controller, for `-n N` (the default `--dist load`): whole modules per
    worker, the Docker modules as one unit, in collection order."""
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "docker" if module in DOCKER_MODULES else module

    config.option.loadscopereorder = False  # collection order: tests/e2e, the slowest, first
    return ModuleScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """On the xdist controller: a worker's summary lines, merged into the controller's."""
    for line in getattr(node, "workeroutput", {}).get(_NOTES_KEY, ()):
        summary_note(node.config, line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    notes = summary_notes(config)
    if notes:
        terminalreporter.section("not tested on this machine", yellow=True, bold=True)
        for line in notes:
            terminalreporter.write_line(line, yellow=True, bold=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not any(item.get_closest_marker(m) for m in DOCKER_MARKERS):
        return
    if _DOCKER_PROBLEM not in item.config.stash:
        from openenvgen_testsupport.docker_images import daemon_problem

        item.config.stash[_DOCKER_PROBLEM] = (daemon_problem(),)
    (problem,) = item.config.stash[_DOCKER_PROBLEM]
    if problem:
        skip_loudly(
            item.config, "docker and swarm tests", f"they need a Docker daemon: {problem}", required_by=REQUIRE_DOCKER
        )


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def wordle_server() -> Iterator[str]:
    from openenvgen_testsupport.fixture_envs import make_wordle_app
    from openenvgen_testsupport.servers import serve_app

    with serve_app(make_wordle_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="session")
def grid_server() -> Iterator[str]:
    from openenvgen_testsupport.fixture_envs import make_grid_app
    from openenvgen_testsupport.servers import serve_app

    with serve_app(make_grid_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="session")
def mcp_server() -> Iterator[str]:
    from openenvgen_testsupport.fixture_envs import make_mcp_app
    from openenvgen_testsupport.servers import serve_app

    with serve_app(make_mcp_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def wordle_pkg(wordle_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The wordle fixture env's package, generated for this test module; its id."""
    from openenvgen_testsupport.adapters import generate_from_server

    return generate_from_server("wordle", wordle_server, tmp_path_factory.mktemp("pkgs"))


@pytest.fixture(scope="module")
def mcp_pkg(mcp_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The MCP fixture env's package, generated for this test module; its id."""
    from openenvgen_testsupport.adapters import generate_from_server

    return generate_from_server("echo_add", mcp_server, tmp_path_factory.mktemp("pkgs"))


@pytest.fixture(scope="module")
def guess_pkg(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The UV fixture env's (guess-the-number) package, generated for this test module; its id."""
    from openenvgen_testsupport.adapters import generate_uv_fixture_package

    return generate_uv_fixture_package(tmp_path_factory.mktemp("pkgs"))


@pytest.fixture
def token() -> Iterator[str]:
    """A label value (TEST_LABEL) for one docker/swarm test's containers and services;
    whatever a failing test leaves is removed."""
    from openenvgen_testsupport import docker_images

    value = uuid.uuid4().hex
    yield value
    docker_images.remove_labelled(value)

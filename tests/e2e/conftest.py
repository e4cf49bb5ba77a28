"""The Docker fixtures the e2e modules share. A module that drives Docker sets `RUN` (a fresh
hex value: the run label every container, service and network it makes carries) and marks
itself `usefixtures("host_left_as_found")`; on Swarm, `usefixtures("host_left_as_found",
"swarm")`. With no daemon, tests/conftest.py has skipped these tests already (or, under
OPENENVGEN_REQUIRE_DOCKER=1, failed them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import generate_code_env_package


@pytest.fixture(scope="module")
def host_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """The module leaves the daemon as it found it (nothing with its `RUN` label)."""
    with docker_images.host_left_as_found(request.module.RUN):
        yield


@pytest.fixture(scope="module")
def swarm(host_left_as_found: None) -> Iterator[None]:
    """The host daemon as a single-node swarm for the module."""
    with docker_images.single_node_swarm():
        yield


@pytest.fixture(scope="module")
def image(host_left_as_found: None) -> str:
    """The wordle fixture env's image."""
    return docker_images.env_image()


@pytest.fixture(scope="module")
def code_image(host_left_as_found: None) -> str:
    """The code env's image (it runs the action's Python)."""
    return docker_images.code_env_image()


@pytest.fixture(scope="module")
def code_pkg(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The code env's package, generated with `--executes-code` (sandboxed by default)."""
    return generate_code_env_package(tmp_path_factory.mktemp("pkgs"))

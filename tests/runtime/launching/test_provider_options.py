"""Provider options merge over a package's defaults, and a launch that fails names the
command (and so the app) it ran: a real launch with OpenEnv's UV provider of a local env
project (tests/fixtures/uv_env) whose package default app does not exist there."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport.paths import UV_FIXTURE_PROJECT


class PackageConfig(AdapterConfig):
    """As a generated package declares it: its env id and its UV provider defaults."""

    env: str | None = "test/guess-env"
    PROVIDER_DEFAULTS: ClassVar[dict[str, Any]] = {"app": "server.app:app"}


def test_provider_kwargs_merge_over_the_package_defaults() -> None:
    assert PackageConfig().provider_kwargs == {"app": "server.app:app"}
    only_path = PackageConfig(provider_kwargs={"project_path": "/src/env"})
    assert only_path.provider_kwargs == {"app": "server.app:app", "project_path": "/src/env"}
    assert PackageConfig(provider_kwargs={"app": "mine:app"}).provider_kwargs == {"app": "mine:app"}
    # The defaults are the UV provider's: Docker and Swarm take no `app`.
    assert PackageConfig(use_docker=True).provider_kwargs == {}
    assert PackageConfig(use_swarm=True, provider_kwargs={"image": "x"}).provider_kwargs == {"image": "x"}
    assert AdapterConfig(env="a/b").provider_kwargs == {}


def test_a_failed_launch_names_the_command_and_app_it_ran() -> None:
    """Only `project_path` set: the package's default app is kept (and here it is not the
    project's module, the upstream `ModuleNotFoundError: No module named 'server'` case)."""
    config = PackageConfig(provider_kwargs={"project_path": str(UV_FIXTURE_PROJECT)}, startup_timeout=240)

    async def start() -> None:
        pool = ServerPool(config, mcp=False)
        try:
            await pool.start()
        finally:
            await pool.stop()

    with pytest.raises(LaunchError) as error:
        asyncio.run(start())
    message = str(error.value)
    first, *log = message.splitlines()
    assert first.startswith("test/guess-env (uv): server exited with code ")
    command = f"$ uv run --isolated --project {UV_FIXTURE_PROJECT} -- uvicorn server.app:app --fd "
    assert log[0].startswith(command)
    assert "No module named 'server'" in message

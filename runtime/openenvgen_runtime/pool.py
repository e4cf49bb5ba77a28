"""Servers shared by every episode of a run: launched once (or given), never per episode.

Launching goes through OpenEnv's own providers (UV by default, Docker on request); an
existing `base_url` (or a list of them, a fleet run elsewhere) is used as is. Each
server's schema and tool list are fetched once. A server's session capacity is learnt:
an env that refuses a session with `CAPACITY_REACHED` caps that server at the sessions it
holds, and the episode moves to another server (launching one, up to `max_servers`)
instead of failing. Blocking provider calls run in threads so the event loop, and the
WebSocket handshakes of other episodes, never stall behind a launch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from openenvgen_runtime.config import AdapterConfig

logger = logging.getLogger(__name__)

_LAUNCH_ARGS = ("port", "env_vars", "workers")
_UV_ARGS = ("project_path", "app", "host", "reload", "env_vars")


class LaunchError(RuntimeError):
    """A server could not be started or reached."""


class CapacityReached(RuntimeError):
    pass


@dataclass(eq=False)
class Server:
    url: str
    provider: Any = None
    """The OpenEnv provider that owns the process/container (None for a given base_url)."""
    active: int = 0
    capacity: int | None = None
    """Most concurrent sessions; None until the server refuses one."""
    schema: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None

    @property
    def has_room(self) -> bool:
        return self.capacity is None or self.active < self.capacity


async def fetch_server_info(url: str, *, mcp: bool, timeout: float = 10.0) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    async with httpx.AsyncClient(timeout=timeout) as http:
        response = await http.get(f"{url}/schema")
        response.raise_for_status()
        schema = response.json()
        tools = None
        if mcp:
            reply = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1})
            reply.raise_for_status()
            tools = reply.json()["result"]["tools"]
    return schema, tools


class ServerPool:
    def __init__(self, config: AdapterConfig, *, mcp: bool) -> None:
        self.config = config
        self.mcp = mcp
        self.servers: list[Server] = []
        self._changed = asyncio.Condition()
        self._launching = 0
        self._closed = False
        self._rr = 0

    @property
    def can_launch(self) -> bool:
        return not self.config.base_urls and len(self.servers) + self._launching < self.config.max_servers

    async def start(self) -> None:
        """Reach every given server, or launch the first one; failures surface here,
        before any episode starts."""
        if self.config.base_urls:
            for url in self.config.base_urls:
                server = Server(url=url)
                await self._describe(server)
                self.servers.append(server)
        else:
            if self.config.use_docker:
                await asyncio.to_thread(_require_docker)
            self._launching += 1
            try:
                server = await self._launch()
            finally:
                self._launching -= 1
            self.servers.append(server)

    async def _describe(self, server: Server) -> None:
        try:
            server.schema, server.tools = await fetch_server_info(server.url, mcp=self.mcp)
        except (httpx.HTTPError, ValueError, KeyError) as e:
            raise LaunchError(f"{server.url}: cannot read /schema: {e}") from None

    async def _launch(self) -> Server:
        provider, url = await asyncio.to_thread(self._start_provider)
        server = Server(url=url, provider=provider)
        try:
            await self._wait_ready(server)
            await self._describe(server)
        except BaseException:
            await asyncio.to_thread(provider.stop)
            raise
        logger.info("openenv server for %s ready at %s", self.config.env, url)
        return server

    def _start_provider(self) -> tuple[Any, str]:
        kwargs = dict(self.config.provider_kwargs)
        start_args = {k: kwargs.pop(k) for k in _LAUNCH_ARGS if k in kwargs}
        kwargs.pop("timeout", None)
        env_id = self.config.env
        assert env_id is not None
        if self.config.use_docker:
            from openenv.core.containers.runtime import LocalDockerProvider

            provider = LocalDockerProvider()
            tag = kwargs.pop("tag", "latest")
            image = kwargs.pop("image", f"registry.hf.space/{env_id.replace('/', '-')}:{tag}")
            return provider, provider.start_container(image, **start_args, **kwargs)
        from openenv.core.containers.runtime import UVProvider

        project = kwargs.pop("project_path", None) or f"git+https://huggingface.co/spaces/{env_id}"
        uv_kwargs = {k: kwargs.pop(k) for k in _UV_ARGS if k in kwargs}
        if kwargs:
            raise LaunchError(f"unknown provider_kwargs for the UV provider: {sorted(kwargs)}")
        uv_kwargs.setdefault("host", "127.0.0.1")
        provider = UVProvider(project_path=project, context_timeout_s=self.config.startup_timeout, **uv_kwargs)
        return provider, provider.start(**start_args)

    async def _wait_ready(self, server: Server) -> None:
        """Poll /health without blocking the loop; a process that exits fails at once."""
        deadline = time.monotonic() + float(self.config.provider_kwargs.get("timeout", self.config.startup_timeout))
        process = getattr(server.provider, "_process", None)
        async with httpx.AsyncClient(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if process is not None and process.poll() is not None:
                    raise LaunchError(f"{self.config.env}: server exited with code {process.returncode} while starting")
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{server.url}/health")).status_code == 200:
                        return
                await asyncio.sleep(0.2)
        raise LaunchError(f"{self.config.env}: server not ready after {deadline:.0f}s")

    async def _reserve(self) -> Server:
        """A server with a free session slot, launching one when all are full."""
        async with self._changed:
            while True:
                if self._closed:
                    raise LaunchError("server pool is closed")
                candidates = [s for s in self.servers if s.has_room]
                if candidates:
                    # Least loaded first, round-robin among equals.
                    self._rr += 1
                    server = min(candidates, key=lambda s: (s.active, (id(s) + self._rr) % 7))
                    server.active += 1
                    return server
                if self.can_launch:
                    self._launching += 1
                    break
                await self._changed.wait()
        try:
            server = await self._launch()
        except BaseException:
            async with self._changed:
                self._launching -= 1
                self._changed.notify_all()
            raise
        async with self._changed:
            self._launching -= 1
            server.active += 1
            self.servers.append(server)
            self._changed.notify_all()
        return server

    async def _release(self, server: Server) -> None:
        async with self._changed:
            server.active -= 1
            self._changed.notify_all()

    @contextlib.asynccontextmanager
    async def session(self, reset_kwargs: dict[str, Any]) -> AsyncIterator[tuple[Server, Any, Any]]:
        """A WebSocket session on some server, already reset: yields (server, client, result)."""
        from openenv import GenericEnvClient

        while True:
            server = await self._reserve()
            client = GenericEnvClient(base_url=server.url)
            try:
                result = await client.reset(**reset_kwargs)
            except RuntimeError as e:
                with contextlib.suppress(Exception):
                    await client.close()
                await self._release(server)
                if "CAPACITY_REACHED" not in str(e):
                    raise
                async with self._changed:
                    # This server holds all the sessions it can; try another.
                    server.capacity = max(1, server.active)
                continue
            except BaseException:
                with contextlib.suppress(Exception):
                    await client.close()
                await self._release(server)
                raise
            break
        try:
            yield server, client, result
        finally:
            with contextlib.suppress(Exception):
                await client.close()
            await self._release(server)

    async def stop(self) -> None:
        self._closed = True
        async with self._changed:
            self._changed.notify_all()
        servers, self.servers = self.servers, []
        for server in servers:
            if server.provider is not None:
                await asyncio.to_thread(_stop_provider, server.provider)


def _stop_provider(provider: Any) -> None:
    stop = getattr(provider, "stop", None) or getattr(provider, "stop_container", None)
    with contextlib.suppress(Exception):
        stop()


def _require_docker() -> None:
    if shutil.which("docker") is None:
        raise LaunchError("use_docker: no `docker` command on this machine")
    try:
        subprocess.run(["docker", "info"], check=True, capture_output=True, timeout=10)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        raise LaunchError("use_docker: no Docker daemon answers (`docker info` failed)") from None

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
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from openenvgen_runtime import launch
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.launch import LaunchError

logger = logging.getLogger(__name__)


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
    action_space: Any = None
    """The taskset's ActionSpace for this server's schema, built on first use."""

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

    @property
    def can_launch(self) -> bool:
        return not self.config.base_urls and len(self.servers) + self._launching < self.config.max_servers

    async def start(self) -> None:
        """Reach every given server, or launch the first one; failures surface here,
        before any episode starts."""
        if self.config.base_urls:
            servers = [Server(url=url) for url in self.config.base_urls]
            await asyncio.gather(*(self._describe(s) for s in servers))
            self.servers.extend(servers)
            return
        self._launching += 1
        try:
            server = await self._launch()
        finally:
            self._launching -= 1
        self.servers.append(server)

    async def _describe(self, server: Server) -> None:
        try:
            server.schema, server.tools = await fetch_server_info(server.url, mcp=self.mcp)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            raise LaunchError(f"{server.url}: cannot read the env's /schema: {e}") from None

    async def _launch(self) -> Server:
        timeout = launch.startup_timeout(self.config.provider_kwargs, self.config.startup_timeout)
        env_id = self.config.env
        assert env_id is not None
        provider, url = await asyncio.to_thread(
            launch.start, env_id, self.config.provider_kwargs, use_docker=self.config.use_docker, timeout=timeout
        )
        server = Server(url=url, provider=provider)
        try:
            await self._wait_ready(server, timeout)
            await self._describe(server)
        except BaseException:
            await asyncio.to_thread(launch.stop, provider)
            raise
        logger.info("openenv server for %s ready at %s", env_id, url)
        return server

    async def _wait_ready(self, server: Server, timeout: float) -> None:
        """Poll /health without blocking the loop; a server that exits fails at once."""
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as http:
            while True:
                code = launch.exited(server.provider)
                if code is not None:
                    tail = launch.log_tail(server.provider)
                    raise LaunchError(
                        f"{self.config.env}: server exited with code {code} while starting"
                        + (f"; last lines of its log:\n{tail}" if tail else "")
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{server.url}/health")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise LaunchError(f"{self.config.env}: server not ready after {timeout:g}s at {server.url}")
                await asyncio.sleep(0.1)

    async def _reserve(self) -> Server:
        """A server with a free session slot, launching one when all are full."""
        async with self._changed:
            while True:
                if self._closed:
                    raise LaunchError("server pool is closed")
                candidates = [s for s in self.servers if s.has_room]
                if candidates:
                    server = min(candidates, key=lambda s: s.active)  # least loaded first
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
        """A WebSocket session on some server, already reset: yields (server, client, result).

        A server that refuses the session for capacity is capped at the sessions it holds
        and the episode moves on (to another server, a new one, or a wait for a slot)."""
        from openenv import GenericEnvClient

        while True:
            server = await self._reserve()
            client = GenericEnvClient(base_url=server.url)
            try:
                result = await client.reset(**reset_kwargs)
                break
            except BaseException as e:
                with contextlib.suppress(Exception):
                    await client.close()
                others = server.active - 1
                await self._release(server)
                if not _refused_for_capacity(e, others):
                    raise
                async with self._changed:
                    server.capacity = max(1, others)
                    self._changed.notify_all()
                logger.debug("%s is full at %d sessions; trying elsewhere", server.url, server.capacity)
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
        await asyncio.gather(
            *(asyncio.to_thread(launch.stop, s.provider) for s in servers if s.provider is not None)
        )


def _refused_for_capacity(error: BaseException, other_sessions: int) -> bool:
    if "CAPACITY_REACHED" in str(error):
        return True
    # The server sends CAPACITY_REACHED and closes right after accepting; a client that
    # has already sent its reset may only see the closed socket.
    from websockets.exceptions import ConnectionClosed

    closed = isinstance(error, ConnectionClosed) or isinstance(error.__cause__, ConnectionClosed)
    return closed and other_sessions > 0

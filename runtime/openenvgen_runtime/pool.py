"""Servers shared by every episode of a run: launched once (or given), never per episode.

Launching goes through OpenEnv's own providers (UV by default, Docker, or a Docker Swarm
service whose replicas each count as a server); an existing `base_url` (or a list of
them, a fleet run elsewhere) is used as is. Each server's schema and tool list are
fetched once. A server's session capacity is learnt: an env that refuses a session with
`CAPACITY_REACHED` caps that server at the sessions it holds, and the episode moves to
another server (launching one, up to `max_servers`) instead of failing.

Fleet health: a server whose reset fails because the server failed (see `health`) is
marked down and gets no new episodes; the episode, which never started, moves to a
healthy server. A session that breaks mid-episode gets its server probed at once. Down
servers are probed in the background and return when `/health` answers; a launched server
whose process or container died is replaced (its log tail in the warning); a swarm's
replica list is refreshed as Swarm replaces replicas. With every server down, an episode
waits up to `unavailable_timeout`, then fails with one line naming the servers. Each state
change is logged once, not per episode. Launches and their progress (`starting …`,
`ready in N s`) are logged where `vf-eval` shows verifiers' own log.

Blocking provider calls run in threads so the event loop, and the WebSocket handshakes
of other episodes, never stall behind a launch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from openenvgen_runtime import health, launch, upstream
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.errors import LaunchError

logger = logging.getLogger(__name__)

PROBE_INTERVAL = 1.0
"""Seconds between background health sweeps."""


CLIENT_MODULE = "openenv.core.generic_client"
"""OpenEnv's WebSocket client (GenericEnvClient)."""


@dataclass(eq=False)
class Server:
    url: str
    provider: Any = None
    """The OpenEnv provider that owns the process/container/service (None for a given
    base_url); a swarm's replicas share their service's."""
    active: int = 0
    capacity: int | None = None
    """Most concurrent sessions; None until the server refuses one."""
    schema: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None
    action_space: Any = None
    """The taskset's ActionSpace for this server's schema, built on first use."""
    observation_view: Any = None
    """The taskset's ObservationView for this server (its assets), built on first use."""
    down: str | None = None
    """Why the server gets no new episodes; None while it is healthy."""

    @property
    def has_room(self) -> bool:
        return self.down is None and (self.capacity is None or self.active < self.capacity)


async def fetch_server_info(
    http: httpx.AsyncClient, url: str, *, mcp: bool, timeout: float = 10.0
) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    response = await http.get(f"{url}/schema", timeout=timeout)
    response.raise_for_status()
    schema = response.json()
    tools = None
    if mcp:
        payload = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
        reply = await http.post(f"{url}/mcp", json=payload, timeout=timeout)
        reply.raise_for_status()
        tools = reply.json()["result"]["tools"]
    return schema, tools


def fleet_urls(urls: list[str]) -> list[str]:
    """The given fleet, checked: each an http(s) URL with a host, none twice."""
    seen: set[str] = set()
    for url in urls:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
            raise LaunchError(f"base_url: {url!r} is not an http(s) URL of a server (e.g. http://10.0.0.5:8000)")
        if url in seen:
            raise LaunchError(f"base_url: {url} is listed twice; each server of a fleet once")
        seen.add(url)
    return urls


def _route_logs_like_verifiers() -> None:
    """Send this package's log records where verifiers sends its own.

    `vf-eval` routes only the `verifiers.v1` logger to its console and log file; without
    this, launch progress and fleet warnings would never reach the user."""
    ours = logging.getLogger("openenvgen_runtime")
    library = logging.getLogger("verifiers.v1")
    handlers = [h for h in library.handlers if not isinstance(h, logging.NullHandler)]
    if not handlers or ours.handlers:
        return
    for handler in handlers:
        ours.addHandler(handler)
    ours.setLevel(library.level)
    ours.propagate = False


class ServerPool:
    def __init__(self, config: AdapterConfig, *, mcp: bool) -> None:
        self.config = config
        self.mcp = mcp
        self.servers: list[Server] = []
        self._changed = asyncio.Condition()
        self._launching = 0
        self._closed = False
        self._owner = uuid.uuid4().hex[:12]
        self._providers: list[Any] = []
        """Every provider started and not yet stopped, including ones still starting."""
        self._reaper: Any = None
        self._sweeper: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def mode(self) -> str:
        return launch.mode_name(use_docker=self.config.use_docker, use_swarm=self.config.use_swarm)

    @property
    def can_launch(self) -> bool:
        if self.config.base_urls or self.config.use_swarm:
            return False  # a given fleet, or a swarm that replaces its own replicas
        return len(self.servers) + self._launching < self.config.max_servers

    async def start(self) -> None:
        """Reach every given server, or launch the first one (every replica, for a
        swarm); failures surface here, before any episode starts."""
        _route_logs_like_verifiers()
        launch.install_error_hook()
        self._http = httpx.AsyncClient(trust_env=False)
        # Off the event loop and before any episode: the import takes seconds.
        await asyncio.to_thread(upstream.openenv_module, CLIENT_MODULE)
        if self.config.base_urls:
            servers = [Server(url=url) for url in fleet_urls(self.config.base_urls)]
            await asyncio.gather(*(self._describe(s) for s in servers))
            self.servers.extend(servers)
        else:
            self._launching += 1
            try:
                servers = await self._launch()
            finally:
                self._launching -= 1
            self.servers.extend(servers)
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def _describe(self, server: Server) -> None:
        assert self._http is not None
        try:
            server.schema, server.tools = await fetch_server_info(self._http, server.url, mcp=self.mcp)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            raise LaunchError(f"{server.url}: cannot read the env's /schema: {e}") from None

    # -- launching ---------------------------------------------------------------------

    def _labels(self) -> dict[str, str]:
        from openenvgen_runtime.containers import OWNER_LABEL, RUNTIME_LABEL

        labels = {RUNTIME_LABEL: "1", OWNER_LABEL: self._owner}
        extra = self.config.provider_kwargs.get("labels")
        return {**labels, **(extra or {})}

    def _start_provider(self, timeout: float) -> tuple[Any, list[str]]:
        """Blocking: start one server (or a swarm service) and own its provider, so
        `stop()` stops it even if the launch is still waiting for it to be ready. (A
        container created while `stop()` runs is the reaper's.)"""
        env_id = self.config.env
        assert env_id is not None
        kwargs = dict(self.config.provider_kwargs)
        if self.config.use_docker or self.config.use_swarm:
            kwargs.pop("labels", None)  # theirs, added to ours
            from openenvgen_runtime.containers import Reaper

            launch.require_docker(f"use_{self.mode}")
            if self._reaper is None:
                self._reaper = Reaper(self._owner)
        if self.config.use_swarm:
            from openenvgen_runtime import swarm

            options = launch.provider_options(kwargs, "swarm")
            image = launch.image_for(env_id, options)
            provider = swarm.start(
                env_id, image, options, replicas=self.config.replicas, labels=self._labels(), timeout=timeout
            )
            self._providers.append(provider)
            return provider, []
        provider, url = launch.start(
            env_id, kwargs, use_docker=self.config.use_docker, timeout=timeout, labels=self._labels()
        )
        self._providers.append(provider)
        return provider, [url]

    async def _launch(self) -> list[Server]:
        timeout = self.config.startup_timeout
        what = f"{self.config.env} ({self.mode})"
        logger.info("starting %s …", what)
        started = time.monotonic()
        provider, urls = await asyncio.to_thread(self._start_provider, timeout)
        try:
            if self.config.use_swarm:
                urls = await self._wait_for_replicas(provider, started + timeout)
            servers = [Server(url=url, provider=provider) for url in urls]
            for server in servers:
                await self._wait_ready(server, started + timeout)
            await asyncio.gather(*(self._describe(s) for s in servers))
        except BaseException:
            await self._stop_provider(provider)
            raise
        where = ", ".join(urls)
        logger.info("%s ready in %.0f s at %s", what, time.monotonic() - started, where)
        return servers

    def _failed_to_start(self, provider: Any, reason: str) -> LaunchError:
        tail = launch.log_tail(provider)
        return LaunchError(
            f"{self.config.env} ({self.mode}): {reason}" + (f"; last lines of its log:\n{tail}" if tail else "")
        )

    async def _wait_ready(self, server: Server, deadline: float) -> None:
        """Poll /health without blocking the loop; a server that exits fails at once."""
        assert self._http is not None
        while True:
            code = await asyncio.to_thread(launch.exited, server.provider)
            if code is not None:
                raise await asyncio.to_thread(self._failed_to_start, server.provider, f"server exited with code {code} while starting")
            if await health.probe(self._http, server.url) is None:
                return
            if time.monotonic() > deadline:
                reason = f"server not ready after {self.config.startup_timeout:g}s at {server.url}"
                raise await asyncio.to_thread(self._failed_to_start, server.provider, reason)
            await asyncio.sleep(0.2)

    async def _wait_for_replicas(self, provider: Any, deadline: float) -> list[str]:
        """Every replica of a new swarm service running with its port published."""
        wanted = self.config.replicas
        while True:
            urls = await asyncio.to_thread(provider.replicas)
            if len(urls) >= wanted:
                return urls
            problem = await asyncio.to_thread(provider.failure)
            if problem is not None:
                raise await asyncio.to_thread(self._failed_to_start, provider, f"swarm cannot run a replica ({problem})")
            if time.monotonic() > deadline:
                reason = f"{len(urls)} of {wanted} replicas running after {self.config.startup_timeout:g}s"
                raise await asyncio.to_thread(self._failed_to_start, provider, reason)
            await asyncio.sleep(0.5)

    async def _stop_provider(self, provider: Any) -> None:
        if provider in self._providers:
            self._providers.remove(provider)
        await asyncio.to_thread(launch.stop, provider)

    # -- routing -----------------------------------------------------------------------

    async def _reserve(self) -> Server:
        """A healthy server with a free session slot, launching one when all are full;
        when every server is down, wait up to `unavailable_timeout` for one to return."""
        all_down_since: float | None = None
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
                if not self._launching and all(s.down for s in self.servers):
                    now = time.monotonic()
                    all_down_since = all_down_since or now
                    left = self.config.unavailable_timeout - (now - all_down_since)
                    if left <= 0:
                        names = ", ".join(f"{s.url} ({s.down})" for s in self.servers) or "none left"
                        raise LaunchError(f"no healthy server after {self.config.unavailable_timeout:g}s: {names}")
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), left)
                    continue
                all_down_since = None
                await self._changed.wait()
        try:
            servers = await self._launch()
        except BaseException:
            async with self._changed:
                self._launching -= 1
                self._changed.notify_all()
            raise
        async with self._changed:
            self._launching -= 1
            servers[0].active += 1
            self.servers.extend(servers)
            self._changed.notify_all()
        return servers[0]

    async def _release(self, server: Server) -> None:
        async with self._changed:
            server.active -= 1
            self._changed.notify_all()

    async def _mark_down(self, server: Server, reason: str) -> None:
        async with self._changed:
            if server.down is not None or server not in self.servers:
                return
            server.down = reason
            healthy = sum(s.down is None for s in self.servers)
        logger.warning("%s is down (%s); no new episodes go there (%d of %d healthy)", server.url, reason, healthy, len(self.servers))

    async def _mark_up(self, server: Server) -> None:
        async with self._changed:
            if server.down is None:
                return
            server.down = None
            # It may be a new process behind the same address: learn its capacity anew.
            server.capacity = None
            self._changed.notify_all()
            healthy = sum(s.down is None for s in self.servers)
        logger.info("%s is back (%d of %d healthy)", server.url, healthy, len(self.servers))

    @contextlib.asynccontextmanager
    async def session(self, reset_kwargs: dict[str, Any]) -> AsyncIterator[tuple[Server, Any, Any]]:
        """A WebSocket session on some server, already reset: yields (server, client, result).

        A server that refuses the session for capacity is capped at the sessions it holds
        and the episode moves on (to another server, a new one, or a wait for a slot). A
        server that fails the reset is marked down and the episode moves on too."""
        GenericEnvClient = upstream.openenv_module(CLIENT_MODULE).GenericEnvClient

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
                if _refused_for_capacity(e, others):
                    async with self._changed:
                        server.capacity = max(1, others)
                        self._changed.notify_all()
                    logger.debug("%s is full at %d sessions; trying elsewhere", server.url, server.capacity)
                    continue
                reason = health.server_failure(e) if isinstance(e, Exception) else None
                if reason is None:
                    raise
                await self._mark_down(server, reason)
        try:
            yield server, client, result
        except Exception:
            # The episode failed: if the server is what failed, no new episode goes there.
            self._background(self._check(server))
            raise
        finally:
            with contextlib.suppress(Exception):
                await client.close()
            await self._release(server)

    # -- background health -------------------------------------------------------------

    def _background(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._tasks.discard)

    async def _check(self, server: Server) -> None:
        if self._http is None or self._closed:
            return
        reason = await health.probe(self._http, server.url)
        if reason is not None:
            await self._mark_down(server, reason)

    async def _sweep_forever(self) -> None:
        while not self._closed:
            await asyncio.sleep(PROBE_INTERVAL)
            try:
                await self._sweep()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a sweep that fails must not end health checking
                logger.debug("health sweep failed: %s", e)

    async def _sweep(self) -> None:
        assert self._http is not None
        launched = [s for s in self.servers if s.provider is not None and not self.config.use_swarm]
        codes = await asyncio.gather(*(asyncio.to_thread(launch.exited, s.provider) for s in launched))
        for server, code in zip(launched, codes):
            if code is not None and not self._closed:
                async with self._changed:
                    if server not in self.servers:
                        continue
                    self.servers.remove(server)
                    self._changed.notify_all()
                self._background(self._replace(server, code))
        if self.config.use_swarm and (
            any(s.down for s in self.servers) or len(self.servers) < self.config.replicas
        ):
            await self._refresh_replicas()
        down = [s for s in self.servers if s.down is not None]
        reasons = await asyncio.gather(*(health.probe(self._http, s.url) for s in down))
        for server, reason in zip(down, reasons):
            if reason is None:
                await self._mark_up(server)
            elif reason != server.down:
                server.down = reason

    async def _replace(self, server: Server, code: int) -> None:
        """A launched server died: drop it, and launch another in its place."""
        tail = await asyncio.to_thread(launch.log_tail, server.provider)
        logger.warning(
            "%s server at %s died (exit code %s); replacing it%s",
            self.config.env, server.url, code, f"; last lines of its log:\n{tail}" if tail else "",
        )
        await self._stop_provider(server.provider)
        async with self._changed:
            if not self.can_launch or self._closed:
                return
            self._launching += 1
        try:
            servers = await self._launch()
        except LaunchError as e:
            # Episodes launch again on demand (`can_launch`), so a failed replacement is
            # retried by the next episode that needs a server.
            logger.warning("replacing %s failed: %s", server.url, e)
            servers = []
        finally:
            async with self._changed:
                self._launching -= 1
                self._changed.notify_all()
        if self._closed:
            for new in servers:
                await self._stop_provider(new.provider)
            return
        async with self._changed:
            self.servers.extend(servers)
            self._changed.notify_all()

    async def _refresh_replicas(self) -> None:
        """Follow Swarm: replicas it replaced join the pool, ones it dropped leave it."""
        provider = next((s.provider for s in self.servers if s.provider is not None), None)
        if provider is None:
            return
        urls = set(await asyncio.to_thread(provider.replicas))
        known = {s.url for s in self.servers}
        fresh = []
        for url in sorted(urls - known):
            server = Server(url=url, provider=provider)
            if await health.probe(self._http, url) is None:  # type: ignore[arg-type]
                with contextlib.suppress(LaunchError):
                    await self._describe(server)
                    fresh.append(server)
        async with self._changed:
            gone = [s for s in self.servers if s.url not in urls and s.down is not None]
            for server in gone:
                self.servers.remove(server)
            self.servers.extend(fresh)
            self._changed.notify_all()
        for server in fresh:
            logger.info("swarm replica %s joined (%d replicas)", server.url, len(self.servers))

    async def stop(self) -> None:
        self._closed = True
        async with self._changed:
            self._changed.notify_all()
        for task in [self._sweeper, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self.servers = []
        providers, self._providers = self._providers, []
        await asyncio.gather(*(asyncio.to_thread(launch.stop, p) for p in providers))
        if self._reaper is not None:
            # Also catches a container whose launch was still under way.
            await asyncio.to_thread(self._reaper.close)
            self._reaper = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _refused_for_capacity(error: BaseException, other_sessions: int) -> bool:
    if "CAPACITY_REACHED" in str(error):
        return True
    # The server sends CAPACITY_REACHED and closes right after accepting; a client that
    # has already sent its reset may only see the closed socket.
    from websockets.exceptions import ConnectionClosed

    closed = isinstance(error, ConnectionClosed) or isinstance(error.__cause__, ConnectionClosed)
    return closed and other_sessions > 0

"""Keeping a pool's servers healthy in the background, while episodes run.

Every `PROBE_INTERVAL` seconds a sweep: a launched server whose process or container died
is dropped and replaced (its log tail in the warning); a swarm's replica list is refreshed
as Swarm replaces replicas; and each down server is probed on `/health` until it answers
200 again. A session that breaks mid-episode gets its server probed at once (`check_soon`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

import httpx

from openenvgen_runtime.access.tokens import for_people
from openenvgen_runtime.fleet.fleet import Fleet
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.launch import Launcher
from openenvgen_runtime.launching.provider import ReplicatedProvider
from openenvgen_runtime.launching.servers import Server, describe
from openenvgen_servers.wire import health_async

logger = logging.getLogger(__name__)

PROBE_INTERVAL = 1.0
"""Seconds between background health sweeps."""


class HealthWatch:
    """The background sweeps of one pool's servers, from `start()` to `stop()`."""

    def __init__(self, fleet: Fleet, launcher: Launcher, http: httpx.AsyncClient) -> None:
        self.fleet = fleet
        self.launcher = launcher
        self.http = http
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        """Cancel the sweeps and every check or replacement still under way."""
        for task in [self._sweeper, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._sweeper = None

    def check_soon(self, server: Server) -> None:
        """Probe `server` now, off the caller's path; down if it does not answer."""
        self._background(self._check(server))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._tasks.discard)

    async def _check(self, server: Server) -> None:
        if self.fleet.closed:
            return
        reason = await health_async(self.http, server.url)
        if reason is not None:
            await self.fleet.mark_down(server, reason)

    async def _sweep_forever(self) -> None:
        while not self.fleet.closed:
            await asyncio.sleep(PROBE_INTERVAL)
            try:
                await self._sweep()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a sweep that fails must not end health checking
                logger.debug("health sweep failed: %s", for_people(str(e)))

    async def _sweep(self) -> None:
        fleet = self.fleet
        launched = [(s, s.provider) for s in fleet.servers if s.provider is not None and not fleet.config.use_swarm]
        codes = await asyncio.gather(*(asyncio.to_thread(provider.exit_code) for _, provider in launched))
        for (server, _), code in zip(launched, codes, strict=True):
            if code is not None and not fleet.closed and await fleet.remove(server):
                self._background(self._replace(server, code))
        replicas_missing = any(s.down for s in fleet.servers) or len(fleet.servers) < fleet.config.replicas
        if fleet.config.use_swarm and replicas_missing:
            await self._refresh_replicas()
        down = [s for s in fleet.servers if s.down is not None]
        reasons = await asyncio.gather(*(health_async(self.http, s.url) for s in down))
        for server, reason in zip(down, reasons, strict=True):
            if reason is None:
                await fleet.mark_up(server)
            elif reason != server.down:
                server.down = reason

    async def _replace(self, server: Server, code: int) -> None:
        """A launched server died: stop what is left of it, and launch another in its place."""
        fleet = self.fleet
        assert server.provider is not None
        tail = await asyncio.to_thread(server.provider.log_tail)
        logger.warning(
            "%s server at %s died (exit code %s); replacing it%s",
            fleet.config.env,
            server.shown,
            code,
            f"; last lines of its log:\n{tail}" if tail else "",
        )
        await self.launcher.stop_provider(server.provider)
        async with fleet.changed:
            if not fleet.can_launch or fleet.closed:
                return
            fleet.launching += 1
        servers: list[Server] = []
        try:
            servers = await self.launcher.launch(self.http)
        except LaunchError as e:
            # Episodes launch again on demand (`can_launch`), so a failed replacement is
            # retried by the next episode that needs a server.
            logger.warning("replacing %s failed: %s", server.shown, for_people(str(e)))
        finally:
            if fleet.closed:
                for new in servers:
                    assert new.provider is not None
                    await self.launcher.stop_provider(new.provider)
                servers = []
            await fleet.launched(servers)

    async def _refresh_replicas(self) -> None:
        """Follow Swarm: replicas it replaced join the pool, ones it dropped leave it."""
        fleet = self.fleet
        # From the launcher, not the pool's servers: when every replica died at once (one
        # replica, killed), the pool has none left to name the service by.
        provider = next((p for p in self.launcher.providers if isinstance(p, ReplicatedProvider)), None)
        if provider is None:
            return
        urls = set(await asyncio.to_thread(provider.replicas))
        known = {s.url for s in fleet.servers}
        fresh = []
        for url in sorted(urls - known):
            server = self.launcher.server(url, provider)
            if await health_async(self.http, url) is None:
                with contextlib.suppress(LaunchError):
                    await describe(self.http, server, mcp=self.launcher.mcp)
                    fresh.append(server)
        async with fleet.changed:
            gone = [s for s in fleet.servers if s.url not in urls and s.down is not None]
            for server in gone:
                fleet.servers.remove(server)
                if server.access is not None:  # its address may be another's next: no secret goes there
                    server.access.revoke(server.url)
            fleet.servers.extend(fresh)
            fleet.changed.notify_all()
        for server in fresh:
            logger.info("swarm replica %s joined (%d replicas)", server.shown, len(fleet.servers))

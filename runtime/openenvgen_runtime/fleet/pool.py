"""Servers shared by every episode of a run, and which server each episode plays on.

One pool per run: it launches the env's first server (through `launch`: OpenEnv's UV
provider by default, its Docker provider, or a Docker Swarm service whose replicas each
count as a server) or takes the given `base_url` servers (a fleet run elsewhere), and reads
each server's schema and tool list once. Servers are launched once, never per episode.

Each episode asks for a `session`: a WebSocket session, already reset, on the least-loaded
healthy server with room. A server's session capacity is learnt: an env that refuses a
session with `CAPACITY_REACHED` caps that server at the sessions it holds, and the episode
moves to another server (launching one, up to `max_servers`) instead of failing. A reset
that fails because the server failed (see `health`) marks the server down; the episode,
which never started, moves to a healthy server. With every server down, an episode waits
up to `unavailable_timeout`, then fails with one line naming the servers. The servers'
shared state is `fleet`'s; following them down and back, in the background, is `watch`'s.

Every session's client judges the server's replies (`turn.replies`) and waits at most
`reply_timeout` for each (the connection, every reply, the close). A reset that gets no
answer in time ends its episode as lost (`EnvLost`: a new reset there may hang again, so
the episode does not wait in a loop) and gets the server probed; a reset reply that breaks
the contract ends it as `EnvProtocolError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.relay import SessionRelays
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.fleet import health
from openenvgen_runtime.fleet.fleet import Fleet
from openenvgen_runtime.fleet.watch import HealthWatch
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.launch import Launcher
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.launching.servers import Server, describe, fleet_access, fleet_urls
from openenvgen_runtime.turn.replies import EnvLost, ReplyLimits, judged_client_class, protocol_failure

logger = logging.getLogger(__name__)

CLIENT_MODULE = "openenv.core"
"""Where OpenEnv exports its WebSocket client (`GenericEnvClient`)."""
HTTP_TIMEOUT = 10.0
"""Seconds a request for a server's `/schema` or tool list may take."""


def session_client(config: AdapterConfig, url: str) -> Any:
    """A new (unconnected) OpenEnv client for one session on `url`: replies judged, every
    wait bounded by `config.reply_timeout`, frames by `config.max_reply_mb`."""
    client_class = judged_client_class(openenv_module(CLIENT_MODULE).GenericEnvClient)
    limits = ReplyLimits(config.max_observation_chars, config.observation_overflow)
    timeout = config.reply_timeout
    return client_class(
        base_url=url,
        limits=limits,
        connect_timeout_s=timeout,
        message_timeout_s=timeout,
        max_message_size_mb=config.max_reply_mb,
    )


async def close_client(client: Any, timeout: float) -> None:
    """Close a session, waiting at most `timeout` (a hung server may never answer the close)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.close(), timeout)


class ServerPool:
    def __init__(self, config: AdapterConfig, *, mcp: bool) -> None:
        self.config = config
        self.mcp = mcp
        self.fleet = Fleet(config)
        self.launcher = Launcher(config, mcp=mcp)
        self._watch: HealthWatch | None = None
        self._http: httpx.AsyncClient | None = None
        self.access: ServerAccess = self.launcher.access
        """What every request to a server carries (`base_url_headers`, a Swarm launch's
        secret) and the TLS trust: set on the pool's HTTP client and its session relays."""
        self._relays: SessionRelays | None = None

    @property
    def servers(self) -> list[Server]:
        """The pool's servers now, healthy or down."""
        return self.fleet.servers

    async def start(self) -> None:
        """Reach every given server, or launch the first one (every replica, for a
        swarm); failures surface here, before any episode starts."""
        if self.config.base_urls:
            self.access = fleet_access(self.config)
        access = self.access
        http = self._http = httpx.AsyncClient(
            trust_env=False, timeout=HTTP_TIMEOUT, auth=access, verify=access.ssl_context
        )
        self._relays = SessionRelays(access, timeout=self.config.reply_timeout)
        # Off the event loop and before any episode: the import takes seconds.
        await asyncio.to_thread(openenv_module, CLIENT_MODULE)
        if self.config.base_urls:
            servers = [Server(url=url, access=access) for url in fleet_urls(self.config.base_urls)]
            await asyncio.gather(*(describe(http, s, mcp=self.mcp) for s in servers))
            self.fleet.servers.extend(servers)
        else:
            self.fleet.launching += 1
            servers = []
            try:
                servers = await self.launcher.launch(http)
            finally:
                await self.fleet.launched(servers)
        self._watch = HealthWatch(self.fleet, self.launcher, http)
        self._watch.start()

    async def stop(self) -> None:
        """Stop the background sweeps, then every server launched (however far its launch got)."""
        fleet = self.fleet
        fleet.closed = True
        async with fleet.changed:
            fleet.changed.notify_all()
        if self._watch is not None:
            await self._watch.stop()
            self._watch = None
        fleet.servers = []
        await self.launcher.stop()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._relays is not None:
            await self._relays.close()
            self._relays = None

    async def session_url(self, server: Server) -> str:
        """The URL OpenEnv's client opens a session on to reach `server`: its own, or its
        loopback relay's when it needs headers or TLS (see `access.relay`)."""
        if self._relays is None:
            return server.url
        return await self._relays.session_url(server.url)

    @contextlib.asynccontextmanager
    async def session(self, reset_kwargs: dict[str, Any]) -> AsyncIterator[tuple[Server, Any, Any]]:
        """A WebSocket session on some server, already reset: yields (server, client, result).

        A server that refuses the session for capacity is capped at the sessions it holds
        and the episode moves on (to another server, a new one, or a wait for a slot). A
        server that fails the reset is marked down and the episode moves on too."""
        fleet = self.fleet
        timeout = self.config.reply_timeout
        while True:
            server = await self._reserve()
            client = session_client(self.config, await self.session_url(server))
            try:
                result = await client.reset(**reset_kwargs)
                break
            except BaseException as e:
                await close_client(client, timeout)
                others = server.active - 1
                await self._release(server)
                if isinstance(e, Exception) and (protocol := protocol_failure(e)) is not None:
                    raise protocol.on(f" on {server.url} (reset)") from None
                if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
                    if self._watch is not None:
                        self._watch.check_soon(server)
                    lost = f"lost the environment session on {server.url}: no reset reply in {timeout:g}s"
                    raise EnvLost(lost) from None
                if _refused_for_capacity(e, others):
                    async with fleet.changed:
                        server.capacity = max(1, others)
                        fleet.changed.notify_all()
                    logger.debug("%s is full at %d sessions; trying elsewhere", server.shown, server.capacity)
                    continue
                reason = health.server_failure(e) if isinstance(e, Exception) else None
                if reason is None:
                    raise
                await fleet.mark_down(server, reason)
        try:
            yield server, client, result
        except Exception:
            # The episode failed: if the server is what failed, no new episode goes there.
            if self._watch is not None:
                self._watch.check_soon(server)
            raise
        finally:
            await close_client(client, timeout)
            await self._release(server)

    async def _reserve(self) -> Server:
        """A healthy server with a free session slot, launching one when all are full;
        when every server is down, wait up to `unavailable_timeout` for one to return."""
        fleet = self.fleet
        all_down_since: float | None = None
        async with fleet.changed:
            while True:
                if fleet.closed:
                    raise LaunchError("server pool is closed")
                candidates = [s for s in fleet.servers if s.has_room]
                if candidates:
                    server = min(candidates, key=lambda s: s.active)  # least loaded first
                    server.active += 1
                    return server
                if fleet.can_launch:
                    fleet.launching += 1
                    break
                if not fleet.launching and all(s.down for s in fleet.servers):
                    now = time.monotonic()
                    all_down_since = all_down_since or now
                    left = self.config.unavailable_timeout - (now - all_down_since)
                    if left <= 0:
                        names = ", ".join(f"{s.shown} ({s.down})" for s in fleet.servers) or "none left"
                        raise LaunchError(f"no healthy server after {self.config.unavailable_timeout:g}s: {names}")
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(fleet.changed.wait(), left)
                    continue
                all_down_since = None
                await fleet.changed.wait()
        assert self._http is not None
        servers: list[Server] = []
        try:
            servers = await self.launcher.launch(self._http)
        finally:
            await fleet.launched(servers, reserve_first=True)
        return servers[0]

    async def _release(self, server: Server) -> None:
        async with self.fleet.changed:
            server.active -= 1
            self.fleet.changed.notify_all()


def _refused_for_capacity(error: BaseException, other_sessions: int) -> bool:
    if "CAPACITY_REACHED" in str(error):
        return True
    # The server sends CAPACITY_REACHED and closes right after accepting; a client that
    # has already sent its reset may only see the closed socket.
    from websockets.exceptions import ConnectionClosed

    closed = isinstance(error, ConnectionClosed) or isinstance(error.__cause__, ConnectionClosed)
    return closed and other_sessions > 0

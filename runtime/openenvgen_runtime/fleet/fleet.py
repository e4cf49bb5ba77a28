"""The state a pool's servers share: which servers there are, which are down, how many launch.

The pool (routing episodes to servers) and its health watch (following servers down and
back) both change it, always under `changed`, the condition that wakes episodes waiting for
a server. Each health change is logged once, not per episode.
"""

from __future__ import annotations

import asyncio
import logging

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.launching.servers import Server

logger = logging.getLogger(__name__)


class Fleet:
    """A pool's servers, the launches under way, and whether the pool is closed."""

    def __init__(self, config: AdapterConfig) -> None:
        self.config = config
        self.servers: list[Server] = []
        self.changed = asyncio.Condition()
        """Held for every change; notified after each, for episodes waiting for a server."""
        self.launching = 0
        """Launches under way (counted against `max_servers`)."""
        self.closed = False

    @property
    def can_launch(self) -> bool:
        """Whether another server may be launched now (never for a given fleet, nor for a
        swarm, which replaces its own replicas)."""
        if self.config.base_urls or self.config.use_swarm:
            return False
        return len(self.servers) + self.launching < self.config.max_servers

    async def launched(self, servers: list[Server], *, reserve_first: bool = False) -> None:
        """A launch counted in `launching` ended with `servers` ([] when it failed): add them,
        the first with one session taken when the episode that asked for it gets it."""
        async with self.changed:
            self.launching -= 1
            if servers and reserve_first:
                servers[0].active += 1
            self.servers.extend(servers)
            self.changed.notify_all()

    async def remove(self, server: Server) -> bool:
        """Drop a server from the pool; False when it was not in it."""
        async with self.changed:
            if server not in self.servers:
                return False
            self.servers.remove(server)
            self.changed.notify_all()
            return True

    async def mark_down(self, server: Server, reason: str) -> None:
        """No new episodes go to `server` until `mark_up`."""
        async with self.changed:
            if server.down is not None or server not in self.servers:
                return
            server.down = reason
            healthy = sum(s.down is None for s in self.servers)
        logger.warning(
            "%s is down (%s); no new episodes go there (%d of %d healthy)",
            server.shown,
            reason,
            healthy,
            len(self.servers),
        )

    async def mark_up(self, server: Server) -> None:
        """`server` answers again: it takes episodes again."""
        async with self.changed:
            if server.down is None:
                return
            server.down = None
            # It may be a new process behind the same address: learn its capacity anew.
            server.capacity = None
            self.changed.notify_all()
            healthy = sum(s.down is None for s in self.servers)
        logger.info("%s is back (%d of %d healthy)", server.shown, healthy, len(self.servers))

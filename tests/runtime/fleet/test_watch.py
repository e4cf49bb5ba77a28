"""The health watch against a hostile peer: a fleet server that drips its `/health` reply a
byte at a time (each read answered well within httpx's per-read timeout) is marked down
within one probe's total deadline, and the same sweep brings a healthy server back."""

from __future__ import annotations

import asyncio
import time

import httpx

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.fleet.fleet import Fleet
from openenvgen_runtime.fleet.watch import HealthWatch
from openenvgen_runtime.launching.launch import Launcher
from openenvgen_runtime.launching.servers import Server
from openenvgen_servers.wire import HEALTH_TIMEOUT
from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.servers import dripping_peer, serve_app


def test_a_dripping_peer_does_not_stall_the_health_sweep() -> None:
    with dripping_peer() as dripping, serve_app(make_wordle_app(), ready_path="/health") as healthy:
        config = AdapterConfig(base_url=[dripping, str(healthy)])

        async def sweep() -> tuple[float, dict[str, str | None]]:
            fleet = Fleet(config)
            fleet.servers = [Server(url=url, down="marked down by the test") for url in config.base_urls]
            async with httpx.AsyncClient() as http:
                watch = HealthWatch(fleet, Launcher(config, mcp=False), http)
                started = time.monotonic()
                # Bounded here too, so a sweep that stalls fails the test rather than hanging it.
                await asyncio.wait_for(watch._sweep(), 10 * HEALTH_TIMEOUT)
                return time.monotonic() - started, {s.url: s.down for s in fleet.servers}

        took, down = asyncio.run(sweep())
    assert took < HEALTH_TIMEOUT + 3
    assert down == {dripping: f"/health did not answer within {HEALTH_TIMEOUT:g}s", str(healthy): None}

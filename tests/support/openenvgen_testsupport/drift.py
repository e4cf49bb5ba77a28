"""Both sides of the run-time drift guard, from live servers: the snapshot the generator
writes for a package made from a server, and the servers as a run's pool holds them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from openenvgen.generation.render import render_snapshot
from openenvgen.sources.server import from_server
from openenvgen.spec import build_spec
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.fleet.pool import ServerPool


def write_snapshot(url: str, path: Path, *, edit: Any = None) -> Path:
    """The snapshot the generator writes for a package made from the server at `url`, at
    `path`; `edit(data)`, if given, changes its JSON first (to make an older snapshot)."""
    spec = build_spec(from_server(url), name="drift", env_id="test/drift")
    data = json.loads(render_snapshot(spec))
    if edit is not None:
        edit(data)
    path.write_text(json.dumps(data, indent=2), "utf-8")
    return path


def pool_servers(urls: list[str], *, mcp: bool) -> list[Any]:
    """The servers as the run's pool holds them (schema and tool list fetched once)."""

    async def start() -> list[Any]:
        pool = ServerPool(AdapterConfig(base_url=urls), mcp=mcp)
        await pool.start()
        try:
            return list(pool.servers)
        finally:
            await pool.stop()

    return asyncio.run(start())

"""`vf-eval` with a window on the runtime's server pool, for R4.

Runs verifiers' own `vf-eval` entry point in this process after wrapping
`openenvgen_runtime.fleet.pool.ServerPool.start` (bench code only: the runtime is unchanged)
so that every pool the run starts is known. A daemon thread then reads the pool's own
accounting, `Server.active` (sessions in flight) and `Server.down`, of every server:

- every 0.25 s a line `{"t", "servers": [{"url", "active", "down"}]}` goes to
  `$OPENENVGEN_BENCH_PROBE/pool.jsonl`;
- when `$OPENENVGEN_BENCH_PROBE/kill.json` (`{"url", "pgid"}`) appears, it reads that
  server's `active` and SIGKILLs the process group at once, and writes
  `killed.json` (`{"t", "in_flight", "active_before_read"}`): the sessions in flight on
  the server at the moment it died, from the pool itself.

    python bench/vf_eval_probe.py @ eval.toml --no-rich
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from openenvgen_runtime.fleet import pool as pool_module

POOLS: list[Any] = []
_start = pool_module.ServerPool.start


async def _registered_start(self: Any) -> None:
    POOLS.append(self)
    await _start(self)


pool_module.ServerPool.start = _registered_start  # type: ignore[method-assign]


def _servers() -> list[Any]:
    return [server for pool in POOLS for server in list(pool.servers)]


def _watch(out: Path) -> None:
    kill_file, killed_file = out / "kill.json", out / "killed.json"
    last_line = 0.0
    with open(out / "pool.jsonl", "a") as lines:
        while True:
            now = time.time()
            if not killed_file.exists() and kill_file.exists():
                try:
                    order = json.loads(kill_file.read_text())
                except ValueError:
                    order = None  # still being written
                if order:
                    victim = next((s for s in _servers() if s.url == order["url"]), None)
                    in_flight = victim.active if victim is not None else None
                    os.killpg(order["pgid"], signal.SIGKILL)
                    # Whole or not at all: the bench reads it as soon as it exists.
                    tmp = killed_file.with_suffix(".tmp")
                    tmp.write_text(json.dumps({"t": time.time(), "in_flight": in_flight}))
                    tmp.rename(killed_file)
            if now - last_line >= 0.25:
                last_line = now
                servers = [{"url": s.url, "active": s.active, "down": s.down} for s in _servers()]
                lines.write(json.dumps({"t": now, "servers": servers}) + "\n")
                lines.flush()
            time.sleep(0.01)


def main() -> None:
    out = Path(os.environ["OPENENVGEN_BENCH_PROBE"])
    threading.Thread(target=_watch, args=(out,), name="pool-probe", daemon=True).start()
    from verifiers.v1.cli.eval.main import main as vf_eval

    sys.argv[0] = "vf-eval"
    sys.exit(vf_eval())


if __name__ == "__main__":
    main()

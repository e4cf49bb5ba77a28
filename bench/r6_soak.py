"""R6: a soak, 20,000 episodes (quick: 2,000) through one served worker, P8's served path
(`serve_env` in its own process, one worker, the generated package on its in-process seat,
one shared `base_url` env server; this process the orchestrator with 64 episodes in flight
through one `EnvClient`): does the server's memory, or its count of open files, grow? The
episodes go in segments of 1,000 (quick: 500); after each, with nothing in flight, the
server's process tree is read from /proc once its open fds have settled (two readings a
second apart agree, at most 30 s): RSS and open file descriptors. Target: every episode ok;
the median RSS of the second half of the readings within 5% of the first half's (a leak
grows with the episodes; a single reading moves by several per cent with what the
allocator keeps from the last peak); open fds at most the first half's largest (the model
client's keep-alive pool is bounded and rises and falls; a leak only rises)."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import cli, env_server, guess_setup, log, play, reading, row, served_config, tree_cpu_s

from openenvgen_testsupport.served import client_tasks

TARGET_DRIFT = 0.05
CONCURRENCY = 64
TASKS = 64


async def settled(root: int) -> dict[str, float]:
    """A reading once the open fds agree twice a second apart (a closed session closes here a
    moment later), after 2 s and for at most 30 s."""
    await asyncio.sleep(2)
    now = reading(root)
    for _ in range(28):
        await asyncio.sleep(1)
        before, now = now, reading(root)
        if now["fds"] == before["fds"]:
            break
    return now


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    episodes, segment = (2000, 500) if quick else (20000, 1000)
    readings: list[dict[str, Any]] = []
    ok = 0
    started = time.perf_counter()
    with guess_setup(workdir, shared=True, sessions=4 * CONCURRENCY) as (package_dir, model_url, url):
        sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
        config = served_config("runtime", url, TASKS)
        tasks = client_tasks(config)
        with env_server(config, 1, workdir / "r6-server.log") as server:
            for done in range(segment, episodes + 1, segment):
                batch = [tasks[i % len(tasks)] for i in range(segment)]
                played = asyncio.run(play(server.address, batch, CONCURRENCY, model_url))
                ok += played["ok"]
                now = asyncio.run(settled(server.pid))
                readings.append({"episodes": done, "ok": ok, **now, "cpu_s": round(tree_cpu_s(server.pid), 1)})
                log(f"R6 {done}/{episodes}: ok {ok}, {readings[-1]}")
                if not server.process.is_alive():
                    break
    wall = time.perf_counter() - started
    half = len(readings) // 2
    first, second = readings[:half], readings[half:]
    rss = statistics.median(r["rss_mib"] for r in second) / statistics.median(r["rss_mib"] for r in first)
    fds_ok = max(r["fds"] for r in second) <= max(r["fds"] for r in first)
    return [
        row(
            "R6",
            f"soak: {episodes} episodes served on one worker (`serve_env` + `EnvClient`, in-process seat, one "
            f"`base_url` server) at {CONCURRENCY} in flight",
            f"all ok; server-tree RSS, median of the second half of the readings, within {TARGET_DRIFT:.0%} of the "
            "first half's; open fds no more than the first half's most",
            f"{ok}/{episodes} ok in {wall:.0f} s; RSS MiB after each {segment} episodes "
            f"{[r['rss_mib'] for r in readings]}; open fds {[r['fds'] for r in readings]}",
            round(rss, 3),
            ok == episodes and len(readings) == episodes // segment and abs(rss - 1) <= TARGET_DRIFT and fds_ok,
            label="median RSS, second half / first half",
            readings=readings,
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

"""How many sessions one server holds, and whether it frees the sessions of clients that vanish.

`probe_capacity` opens sessions on one server in doublings (1, 2, 4, ... up to `bound`),
keeping them open, until the server refuses one (`CAPACITY_REACHED`, or a socket it closes
right after accepting while others are open) or another fails; each point records the
sessions held, the refused and failed ones, and the median reset latency of the new ones.
Every session is closed properly before it returns.

`probe_release` fills the server with sessions from a child process that then exits without
closing them (`vanish`), and measures whether the server admits as many new sessions within
`wait` seconds. It can only tell on a server whose capacity is known: one that never refused
up to the bound is reported as such, with nothing vanished.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from openenvgen_runtime.doctor.sessions import Session, is_capacity_refusal, open_session
from openenvgen_schemas.doctor_report import CapacityData, CapacityPoint, SessionReleaseData

VANISH_MODULE = "openenvgen_runtime.doctor.vanish"
CHILD_START_S = 60.0
"""Time the vanishing child may take to start (it imports OpenEnv) on top of its own waits."""


def _sizes(bound: int) -> list[int]:
    sizes, n = [], 1
    while n < bound:
        sizes.append(n)
        n *= 2
    return [*sizes, bound] if bound > 0 else []


async def probe_capacity(url: str, reset: dict[str, Any], *, bound: int, timeout: float) -> CapacityData:
    held: list[Session] = []
    points: list[CapacityPoint] = []
    capacity: int | None = None
    try:
        for size in _sizes(bound):
            opened = await asyncio.gather(*(open_session(url, timeout, reset) for _ in range(size - len(held))))
            new = [(s, ms) for s, ms, _ in opened if s is not None]
            held += [s for s, _ in new]
            reasons = [why for s, _, why in opened if s is None]
            refused = sum(is_capacity_refusal(why) or ("ConnectionClosed" in why and bool(held)) for why in reasons)
            latencies = [ms for _, ms in new if ms is not None]
            points.append(
                CapacityPoint(
                    sessions=size,
                    ok=len(held),
                    refused=refused,
                    failed=len(reasons) - refused,
                    latency_ms=round(statistics.median(latencies), 3) if latencies else None,
                )
            )
            if reasons:
                capacity = len(held) if refused else None
                break
    finally:
        await asyncio.gather(*(s.close() for s in held))
    return CapacityData(points=tuple(points), bound=bound, capacity=capacity)


async def probe_release(
    url: str, reset: dict[str, Any], *, capacity: int | None, wait: float, timeout: float
) -> SessionReleaseData:
    if capacity is None or capacity < 1:
        return SessionReleaseData(vanished=0, released=0, waited_s=0.0)
    vanished = await _vanish(url, capacity, reset, timeout=timeout, wait=wait)
    started = time.monotonic()
    held: list[Session] = []
    try:
        while len(held) < vanished and time.monotonic() - started < wait:
            session, _, _ = await open_session(url, timeout, reset)
            if session is None:
                await asyncio.sleep(0.2)
            else:
                held.append(session)
    finally:
        await asyncio.gather(*(s.close() for s in held))
    return SessionReleaseData(
        vanished=vanished, released=len(held), waited_s=round(min(time.monotonic() - started, wait), 3)
    )


async def _vanish(url: str, count: int, reset: dict[str, Any], *, timeout: float, wait: float) -> int:
    """Sessions a child process opened and then dropped by exiting (its count)."""
    command = [sys.executable, "-m", VANISH_MODULE, url, str(count), json.dumps(reset), str(timeout), str(wait)]

    def run() -> str:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_START_S + wait + timeout, check=False
        )
        return done.stdout

    try:
        out = await asyncio.to_thread(run)
    except subprocess.TimeoutExpired:
        return 0
    lines = out.strip().splitlines()
    return int(lines[-1]) if lines and lines[-1].isdigit() else 0

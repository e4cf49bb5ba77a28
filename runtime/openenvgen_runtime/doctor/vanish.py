"""Clients that vanish mid-episode: a child process that opens sessions and exits without closing them.

Run as `python -m openenvgen_runtime.doctor.vanish URL N RESET TIMEOUT WAIT`: it opens up to
N sessions on URL (each reset with the JSON object RESET, the refused ones retried for up to
WAIT seconds), prints how many it holds, and exits at once with `os._exit`: no WebSocket
close is sent, no `close` message; the kernel drops the sockets as it does a crashed trainer
worker's. The server must notice and free the sessions by itself. Run by
`capacity.probe_release` as a child; never imported by the doctor.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from openenvgen_runtime.doctor.sessions import Session, open_session


async def hold(url: str, count: int, reset: dict[str, Any], timeout: float, wait: float) -> list[Session]:
    held: list[Session] = []
    deadline = time.monotonic() + wait
    while len(held) < count:
        session, _, _ = await open_session(url, timeout, reset)
        if session is not None:
            held.append(session)
            continue
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    return held


def main(argv: list[str]) -> None:
    url, count, reset, timeout, wait = argv
    asyncio.run(_held_then_vanish(url, int(count), json.loads(reset), float(timeout), float(wait)))


async def _held_then_vanish(url: str, count: int, reset: dict[str, Any], timeout: float, wait: float) -> None:
    held = await hold(url, count, reset, timeout, wait)
    print(len(held), flush=True)
    os._exit(0)  # inside the loop: nothing closes the sockets on the way out


if __name__ == "__main__":
    main(sys.argv[1:])

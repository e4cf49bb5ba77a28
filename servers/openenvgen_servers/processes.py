"""A server's process group, and the `uv` that starts env servers: one way for every caller.

An env server started through `uv run` is uv plus the uvicorn it spawns; both run in the
process group the server was started in (`start_new_session=True`), so stopping the group
stops both, and `die_with_parent` has the kernel end it if the process that started it dies
without stopping it. Used by `uv` (the generator's and the runtime's UV servers) and the
test and bench servers alike.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE_S = 10.0
"""Seconds a server gets to exit after SIGTERM before its group is killed."""
_PR_SET_PDEATHSIG = 1


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False once the group is gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # what is left is not ours to signal: nothing more we can stop
        return False
    return True


_PROC = Path("/proc")


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (a zombie does not count, where `/proc` tells)."""
    if not _signal_group(pgid, 0):
        return False
    if not _PROC.is_dir():
        return True  # no /proc (e.g. macOS): a zombie member counts as running until reaped
    # A member whose leader died is reparented to PID 1, which in a container without an init
    # may never reap it: as a zombie it still takes signals, but has stopped.
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # exited while we looked
        # `pid (command) state ppid pgrp ...`; the command may hold spaces and parentheses.
        state, _ppid, pgrp = text[text.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == pgid and state not in ("Z", "X"):
            return True
    return False


def _wait_group(process: subprocess.Popen[bytes] | subprocess.Popen[str], deadline: float) -> None:
    """Wait until the group is gone or `deadline` passes, reaping the leader meanwhile."""
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, so it does not linger as a zombie of ours
        if not _group_alive(process.pid):
            return
        time.sleep(0.05)


def stop_process_group(process: subprocess.Popen[bytes] | subprocess.Popen[str], *, grace: float = GRACE_S) -> None:
    """SIGTERM the process's group, SIGKILL what is left after `grace` s, and wait (`grace` s at most) for it to go."""
    pgid = process.pid
    if process.poll() is None and os.getpgid(process.pid) != pgid:
        # Not started with `start_new_session=True`: its group is not its own to stop.
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)
        return
    _signal_group(pgid, signal.SIGTERM)
    # The leader may be gone while what it started (uvicorn under `uv run`) still shuts down.
    _wait_group(process, time.monotonic() + grace)
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        _wait_group(process, time.monotonic() + grace)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


def find_uv() -> str | None:
    """`uv` on PATH, else the one installed next to this interpreter (an unactivated venv)."""
    return shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))


def die_with_parent() -> None:
    """`preexec_fn` for a server: SIGTERM it when the process that started it dies, even by
    SIGKILL, so no server outlives its run (Linux; elsewhere a no-op)."""
    # Runs in the child between fork and exec. The kernel ties this to the thread that
    # started the server: the runtime's launches run in the event loop's executor threads,
    # which live until the loop closes (after the pool has stopped its servers).
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

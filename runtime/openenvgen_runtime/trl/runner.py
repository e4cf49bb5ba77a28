"""The one background event loop a process's TRL environments share, and its cleanup.

TRL calls an environment's methods synchronously, from its training loop; the runtime's
pools, launches and sessions are asyncio. The first `reset` starts one event loop on a
daemon thread (`run` hands it a coroutine and waits for the result); every pool and session
of every environment class in the process lives on it.

Cleanup: what was opened on the loop is closed by `close`, registered with `atexit` when the
loop starts, so it runs when the process ends normally, after an exception ends
`trainer.train()` and after Ctrl-C (KeyboardInterrupt unwinds to the interpreter's exit). A
SIGTERM, whose default action ends the process without `atexit`, is turned into `SystemExit`
when nothing else handles it (the default handler, in the main thread), so it cleans up the
same way. A SIGKILL leaves no chance: containers then go with the Docker reaper every
container launch has (`launching.reaper`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

CLOSE_TIMEOUT = 120.0
"""Seconds the exit waits for every pool to stop (servers, containers, sessions)."""

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_closers: list[Callable[[], Awaitable[None]]] = []


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the shared loop (started on first use) and wait for its result;
    Ctrl-C cancels it."""
    future = asyncio.run_coroutine_threadsafe(coroutine, _running_loop())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise


def on_close(closer: Callable[[], Awaitable[None]]) -> None:
    """Have `close` await `closer()` on the loop (a pool's stop), last registered first."""
    with _lock:
        _closers.append(closer)


def close() -> None:
    """Await every registered closer on the loop, then stop the loop; nothing is left running.
    Safe to call more than once (the second call finds nothing to close)."""
    global _loop, _thread
    with _lock:
        loop, thread, closers = _loop, _thread, _closers[::-1]
        _loop = _thread = None
        _closers.clear()
    if loop is None or thread is None:
        return

    async def close_all() -> None:
        for closer in closers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(closer(), CLOSE_TIMEOUT)

    try:
        asyncio.run_coroutine_threadsafe(close_all(), loop).result(CLOSE_TIMEOUT * max(1, len(closers)))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT)
        if not thread.is_alive():
            loop.close()


def _running_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="openenvgen-trl", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
            atexit.register(close)
            _exit_on_sigterm()
        return _loop


def _exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit (so `atexit` runs), where it still has Python's default action."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _sigterm)


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)

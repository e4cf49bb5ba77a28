"""A timeout on each reply of a connection, kept by one timer per timeout period, not one per reply.

`asyncio.timeout` schedules a timer and cancels it around every awaited reply: about 6 µs a
step, more than the rest of the runtime's per-step work. A WebSocket session has at most
one request in flight, so one timer is enough: each reply awaited only records its
deadline, and the timer, when it fires, finds the connection idle (it stops; the next
reply starts it again), finds a later deadline (it moves there), or finds the reply overdue
and cancels the waiting task. `wait` turns that cancellation into `TimeoutError`, as
`asyncio.timeout` does, and lets any other cancellation through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class ReplyDeadline:
    """The reply timeout of one connection (bound to its event loop), one reply at a time."""

    __slots__ = ("_cancelling", "_deadline", "_expired", "_task", "_timer")

    def __init__(self) -> None:
        self._deadline = 0.0
        self._task: asyncio.Task[object] | None = None
        """The task awaiting a reply, if one is."""
        self._cancelling = 0
        """`Task.cancelling()` of that task when it began waiting: cancellations not ours."""
        self._expired = False
        """The timer cancelled the waiting task."""
        self._timer: asyncio.TimerHandle | None = None

    async def wait(self, reply: Awaitable[T], timeout: float) -> T:
        """`await reply`, raising `TimeoutError` after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None or self._task is not None:
            raise RuntimeError("ReplyDeadline.wait: one reply at a time, awaited by a task")
        self._deadline = loop.time() + timeout
        self._task, self._cancelling = task, task.cancelling()
        if self._timer is None:
            self._timer = loop.call_at(self._deadline, self._check, loop)
        try:
            return await reply
        except asyncio.CancelledError:
            if self._expired:
                self._expired = False
                if task.uncancel() <= self._cancelling:
                    raise TimeoutError(f"no reply within {timeout:g} s") from None
            raise
        finally:
            self._task = None
            if self._expired:  # it fired as the reply arrived: take back the cancellation
                self._expired = False
                task.uncancel()

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._task is None:
            return
        if loop.time() < self._deadline:
            self._timer = loop.call_at(self._deadline, self._check, loop)
            return
        self._expired = True
        self._task.cancel()

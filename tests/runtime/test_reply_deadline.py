"""`ReplyDeadline`: each reply's timeout, kept by one timer per connection (`reply_deadline`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from openenvgen_runtime.reply_deadline import ReplyDeadline


def counting_timers(deadline: ReplyDeadline) -> list[float]:
    """When each timer `deadline` arms from now on is due (`asyncio.sleep`'s are left out)."""
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__self__", None) is deadline:
            armed.append(when)
        return call_at(when, callback, *args, **kwargs)

    loop.call_at = counted  # type: ignore[method-assign]
    return armed


def test_replies_in_time_share_one_timer() -> None:
    """200 replies within the timeout: each is returned, and one timer was armed for all."""

    async def main() -> None:
        deadline = ReplyDeadline()
        armed = counting_timers(deadline)
        for number in range(200):
            assert await deadline.wait(asyncio.sleep(0, result=number), 30.0) == number
        assert len(armed) == 1

    asyncio.run(main())


def test_an_overdue_reply_is_a_timeout_and_the_deadline_works_on() -> None:
    async def main() -> None:
        deadline = ReplyDeadline()
        task = asyncio.current_task()
        assert task is not None
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"no reply within 0.2 s"):
            await deadline.wait(asyncio.sleep(30), 0.2)
        assert 0.15 < time.monotonic() - started < 5
        assert task.cancelling() == 0  # the cancellation was ours, and is taken back
        assert await deadline.wait(asyncio.sleep(0, result="next"), 0.2) == "next"
        with pytest.raises(TimeoutError):
            await deadline.wait(asyncio.sleep(30), 0.2)

    asyncio.run(main())


def test_each_reply_gets_its_whole_timeout() -> None:
    """The timer armed for the first reply's deadline finds a later reply pending, not yet
    overdue: it moves to that reply's deadline instead of cancelling it."""

    async def main() -> None:
        deadline = ReplyDeadline()
        armed = counting_timers(deadline)
        await deadline.wait(asyncio.sleep(0), 1.0)  # arms the timer for t = 1.0
        await asyncio.sleep(0.6)
        assert await deadline.wait(asyncio.sleep(0.8, result="late but in time"), 1.0) == "late but in time"
        assert len(armed) == 2 and armed[1] - armed[0] > 0.5  # moved to the second deadline

    asyncio.run(main())


def test_an_idle_timer_stops_and_the_next_reply_starts_it() -> None:
    async def main() -> None:
        deadline = ReplyDeadline()
        armed = counting_timers(deadline)
        await deadline.wait(asyncio.sleep(0), 0.1)
        await asyncio.sleep(0.3)  # the timer fires on an idle connection: it is not armed again
        assert len(armed) == 1
        await deadline.wait(asyncio.sleep(0), 0.1)
        assert len(armed) == 2

    asyncio.run(main())


def test_another_cancellation_is_not_a_timeout() -> None:
    async def main() -> None:
        deadline = ReplyDeadline()
        waiting = asyncio.create_task(deadline.wait(asyncio.sleep(30), 10.0))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())


def test_a_task_cancelled_as_its_reply_times_out_stays_cancelled() -> None:
    """Someone else cancels the task as the deadline passes: it ends cancelled, not timed
    out, as under `asyncio.timeout`."""

    async def main() -> None:
        deadline = ReplyDeadline()

        async def reply() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:  # the deadline's cancellation...
                task = asyncio.current_task()
                assert task is not None
                task.cancel()  # ...and another one, before the task runs on
                raise

        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(deadline.wait(reply(), 0.1))

    asyncio.run(main())


def test_one_reply_at_a_time() -> None:
    async def main() -> None:
        deadline = ReplyDeadline()
        first = asyncio.create_task(deadline.wait(asyncio.sleep(0.2, result="first"), 5.0))
        await asyncio.sleep(0.01)
        reply = asyncio.get_running_loop().create_future()
        reply.set_result("second")
        with pytest.raises(RuntimeError, match="one reply at a time"):
            await deadline.wait(reply, 5.0)
        assert await first == "first"

    asyncio.run(main())

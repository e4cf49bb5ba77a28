"""One WebSocket session on one env server, every request timed and bounded.

Through OpenEnv's public client (`GenericEnvClient`: `connect`, `reset`, `step`, `close`),
with its connect and message timeouts set to the doctor's `timeout`, and each call bounded by
it again (a close included), so no probe ever waits on a server for longer. Every reply is
kept raw (the observation dict, the reward and `done` as the server sent them): the doctor
judges them, nothing here does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from openenvgen_runtime.fleet.pool import CLIENT_MODULE
from openenvgen_runtime.launching.openenv_import import openenv_module

CAPACITY_REACHED = "CAPACITY_REACHED"


@dataclass(frozen=True)
class Reply:
    """One reset or step reply as the server sent it, and how long it took."""

    observation: Any
    reward: Any
    done: Any
    ms: float

    def as_dict(self) -> dict[str, Any]:
        return {"observation": self.observation, "reward": self.reward, "done": self.done}


class Refused(RuntimeError):
    """The server answered a request with an error (its message is this one's)."""


class Lost(RuntimeError):
    """The session failed: no answer within the timeout, or the connection went away."""


def is_capacity_refusal(error: object) -> bool:
    """Whether an error (or its message) is the server refusing a session for capacity."""
    return CAPACITY_REACHED in str(error)


class Session:
    """`async with Session(url, timeout) as s`: `await s.reset(**kw)`, `await s.step(action)`."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout = url, timeout
        client_type = openenv_module(CLIENT_MODULE).GenericEnvClient
        self._client = client_type(base_url=url, connect_timeout_s=timeout, message_timeout_s=timeout)

    async def __aenter__(self) -> Session:
        await self._call(self._client.connect())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._client.close(), self.timeout)

    async def reset(self, **kwargs: Any) -> Reply:
        return await self._timed(self._client.reset(**kwargs))

    async def step(self, action: dict[str, Any]) -> Reply:
        return await self._timed(self._client.step(action))

    async def _timed(self, request: Any) -> Reply:
        started = time.perf_counter()
        result = await self._call(request)
        ms = (time.perf_counter() - started) * 1000
        return Reply(observation=result.observation, reward=result.reward, done=result.done, ms=ms)

    async def _call(self, request: Any) -> Any:
        try:
            return await asyncio.wait_for(request, self.timeout)
        except TimeoutError:
            raise Lost(f"no answer within {self.timeout:g}s") from None
        except RuntimeError as e:
            text = str(e)
            if text.startswith("Server error:"):
                raise Refused(text.removeprefix("Server error: ")) from None
            raise Lost(f"{type(e).__name__}: {text}") from None
        except Exception as e:
            # ConnectionClosed, ConnectionError, OSError, a reply that is not JSON: the session is gone.
            raise Lost(f"{type(e).__name__}: {e}") from None


async def open_session(url: str, timeout: float, reset: dict[str, Any]) -> tuple[Session | None, float | None, str]:
    """A new session, reset: (session, reset ms, "") or (None, None, why it was not opened)."""
    session = Session(url, timeout)
    try:
        await session.__aenter__()
        reply = await session.reset(**reset)
    except (Refused, Lost) as e:
        await session.close()
        return None, None, str(e)
    return session, reply.ms, ""

"""The doctor's session capacity and release probes against a real OpenEnv server (`create_app`
under uvicorn on loopback), whose WebSocket disconnects are recorded on their way to the app.

The release probe's clients vanish mid-episode: a child process opens sessions, resets each (an
episode begun) and exits without closing them, so the server sees each socket drop with no
WebSocket close frame (close code 1005 or 1006, never a client's 1000), as when a trainer's
worker dies. The server frees them by itself, and the probe finds every one free again. The
sessions the doctor closes itself send OpenEnv's `close` message, and the server closes those
sockets: the app sees no disconnect."""

from __future__ import annotations

import asyncio
from typing import Any

from openenvgen_runtime.doctor import capacity as probes
from openenvgen_testsupport.doctor_envs import SESSIONS, make_doctor_app
from openenvgen_testsupport.servers import serve_app

NO_CLOSE_FRAME = (1005, 1006)
"""The close codes a server reports for a socket that dropped with no close frame (uvicorn's
WebSocket implementations use either; a client's close frame carries 1000)."""


class DisconnectLog:
    """ASGI wrapper: every `websocket.disconnect` the app receives, its close code recorded."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.codes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def recording() -> Any:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                self.codes.append(int(message.get("code", 1000)))
            return message

        await self.app(scope, recording, send)


def test_sessions_of_clients_that_vanish_mid_episode_are_found_released() -> None:
    logged = DisconnectLog(make_doctor_app("good"))
    reset = {"seed": 3}
    with serve_app(logged, ready_path="/health") as url:
        capacity = asyncio.run(probes.probe_capacity(str(url), reset, bound=8, timeout=5.0))
        after_capacity = list(logged.codes)
        release = asyncio.run(probes.probe_release(str(url), reset, capacity=capacity.capacity, wait=10.0, timeout=5.0))
    assert capacity.capacity == SESSIONS
    assert [(p.sessions, p.ok, p.refused) for p in capacity.points][-1] == (8, SESSIONS, 8 - SESSIONS)
    assert after_capacity == []  # every session the probe opened it closed properly
    assert (release.vanished, release.released) == (SESSIONS, SESSIONS)
    # The vanished client's sockets dropped with no close frame; the released ones were closed properly.
    assert len(logged.codes) == SESSIONS and set(logged.codes) <= set(NO_CLOSE_FRAME), logged.codes

"""Purpose-built OpenEnv servers for `openenv-gen doctor`: one good env, and one server per fault
a doctor check must catch.

All are OpenEnv's own `create_app` over one small env (a walk on a line towards a target the
seed picks), with four sessions per server, so they share one schema and one generated package
serves every one of them:

- `good`: seeded, every schema-valid action taken, rewards that vary, sessions freed;
- `ignores_seed`: the target is drawn anew at every reset whatever the seed, and differs from
  every target that seed got before (up to nine resets of a seed): a fresh draw alone repeats
  one time in nine, and a replay that happens to match is indistinguishable from a seeded
  env (determinism);
- `refuses_action`: every step is refused with an error (schema fidelity);
- `constant_reward`: every step earns 0, so every episode does (reward variance);
- `slow_step`: each step takes `SLOW_STEP_S` (latency);
- `leaks_sessions`: the server never learns that a client went away without closing (an
  ASGI wrapper swallows the WebSocket disconnect, as a half-open socket would), so a vanished
  client's session is never freed (session release). A client that closes properly (OpenEnv's
  `close` message) is freed as usual.

Run one: `DOCTOR_ENV_FAULT=slow_step python -m uvicorn --factory
openenvgen_testsupport.doctor_envs:make_doctor_app --port 8001`.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from typing import Any, Literal

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

__all__ = ["FAULTS", "SESSIONS", "SLOW_STEP_S", "LineAction", "LineObservation", "make_doctor_app"]

FAULTS = ("good", "ignores_seed", "refuses_action", "constant_reward", "slow_step", "leaks_sessions")
SESSIONS = 4
SLOW_STEP_S = 0.3
LENGTH = 9
MAX_STEPS = 5


class LineAction(Action):
    """Move along the line."""

    direction: Literal["left", "right"] = Field(description="Which way to move.")
    steps: int = Field(1, ge=1, le=3, description="Cells to move.")


class LineObservation(Observation):
    position: int = Field(description="Where you are, 0 to 8.")
    target: int = Field(description="Where to go.")
    text: str = ""


def _environment(fault: str) -> type[Environment[LineAction, LineObservation, State]]:
    given: dict[int | None, set[int]] = {}
    """`ignores_seed`: the targets each seed got so far, shared by the server's sessions."""

    def draw_target(seed: int | None) -> int:
        if fault != "ignores_seed":
            return random.Random(seed or 0).randrange(LENGTH)
        used = given.setdefault(seed, set())
        target = random.choice([t for t in range(LENGTH) if t not in used] or range(LENGTH))
        used.add(target)
        return target

    class LineEnvironment(Environment[LineAction, LineObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id=str(uuid.uuid4()))
            self._position, self._target = 0, 0

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> LineObservation:
            self._position, self._target = LENGTH // 2, draw_target(seed)
            self._state = State(episode_id=episode_id or str(uuid.uuid4()))
            return self._observation("Walk to the target.", reward=None, done=False)

        def step(self, action: LineAction, timeout_s: float | None = None, **kwargs: Any) -> LineObservation:
            if fault == "refuses_action":
                raise ValueError(f"this server takes no {action.direction!r} move")
            if fault == "slow_step":
                time.sleep(SLOW_STEP_S)
            self._state.step_count += 1
            delta = action.steps if action.direction == "right" else -action.steps
            self._position = max(0, min(LENGTH - 1, self._position + delta))
            hit = self._position == self._target
            reward = 0.0 if fault == "constant_reward" else (1.0 if hit else -abs(self._position - self._target) / 10)
            done = hit or self._state.step_count >= MAX_STEPS
            return self._observation("On target." if hit else "Keep walking.", reward=reward, done=done)

        def _observation(self, text: str, *, reward: float | None, done: bool) -> LineObservation:
            return LineObservation(position=self._position, target=self._target, text=text, reward=reward, done=done)

        @property
        def state(self) -> State:
            return self._state

    return LineEnvironment


class _SwallowDisconnects:
    """ASGI wrapper: the app never receives `websocket.disconnect`, so it waits forever on a
    client that is gone, as on a half-open socket."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def swallowing() -> Any:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                await asyncio.Event().wait()
            return message

        await self.app(scope, swallowing, send)


def make_doctor_app(fault: str | None = None) -> Any:
    """The env's app with `fault` (default: $DOCTOR_ENV_FAULT, else `good`)."""
    fault = fault or os.environ.get("DOCTOR_ENV_FAULT", "good")
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    app = create_app(
        _environment(fault), LineAction, LineObservation, env_name="line_walk", max_concurrent_envs=SESSIONS
    )
    return _SwallowDisconnects(app) if fault == "leaks_sessions" else app

"""A hostile OpenEnv server: a simple text env whose chosen sessions answer with one class of
bad reply, so one server serves benign and hostile episodes side by side.

The app is OpenEnv's own (`create_app`: `/health`, `/schema`, `/metadata`, and benign
stateless `/reset`, `/step`, `/state`) with its `/ws` route replaced by one that speaks the
same messages (`{"type": "reset"|"step"|"state"|"close", "data": ...}` in;
`{"type": "observation"|"state"|"error", "data": ...}` out, OpenEnv 0.4.1) and, for a
hostile session, writes the bad reply itself. The faults live on `/ws` because that is
where sessions are; the HTTP endpoints stay benign.

The env: action `{"message": str}`, observation `{"text": str}`; the reset names a word
(picked by the seed), a step that says it earns reward 1.0 and ends the episode, any other
earns 0.0; an episode ends after `MAX_STEPS` steps at most.

A session's fault is chosen at its reset, first match wins:

1. the reset's `fault` option (`client.reset(seed=3, fault="reward_nan")`), a `Fault` value;
2. the reset's seed, through the app's `faults_by_seed` (the runtime seeds task `i` with `i`,
   so a taskset of plain tasks can put a benign task beside each hostile one). For
   `serve_app_subprocess`, `make_hostile_app` reads the map from the environment variable
   `OPENENVGEN_HOSTILE_FAULTS`, e.g. `1=reward_nan,3=step_hangs`.

A reply-level fault answers every reply of the kind named by the reset's `fault_on` option
(`"step"`, the default, or `"reset"`); `reset_hangs` and `step_hangs` never answer a reset
(every step) and read the session's messages until the client goes away. Each fault class,
what goes on the wire and what the runtime must end the episode with are in
`hostile_faults` (`FAULTS`, whose docstring spells out each outcome).

Run one:

    OPENENVGEN_HOSTILE_FAULTS=1=reward_nan python -m uvicorn --factory \
        openenvgen_testsupport.hostile_env:make_hostile_app --port 8001
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from openenv.core.env_server import create_app, deserialize_action, serialize_observation
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, ValidationError
from starlette.routing import BaseRoute

from openenvgen_testsupport.hostile_faults import FAULTS, HANGS, Fault, frame

__all__ = [
    "FAULTS_ENV_VAR",
    "MAX_STEPS",
    "WORDS",
    "HostileTextEnvironment",
    "TextAction",
    "TextObservation",
    "make_hostile_app",
    "parse_fault_map",
    "target_word",
]

FAULTS_ENV_VAR = "OPENENVGEN_HOSTILE_FAULTS"
MAX_STEPS = 3
WORDS = ("apple", "river", "stone", "cloud", "ember")


def target_word(seed: int | None) -> str:
    """The word a session's reset asks for (seed 0 or none: the first)."""
    return WORDS[(seed or 0) % len(WORDS)]


class TextAction(Action):
    """What the agent says."""

    message: str = Field(description="The reply; say the word the observation names.", max_length=2000)


class TextObservation(Observation):
    """What the env says."""

    text: str = Field(default="", description="The env's message.")


class HostileTextEnvironment(Environment[TextAction, TextObservation, State]):
    """The benign env every session runs, hostile or not: the fault is in the reply only."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self._word = target_word(None)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TextObservation:
        self._word = target_word(seed)
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(text=f"Say the word {self._word!r}.", reward=None, done=False)

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        self._state.step_count += 1
        said = action.message.strip().lower() == self._word
        done = said or self._state.step_count >= MAX_STEPS
        text = "Right." if said else f"No: say {self._word!r}."
        return TextObservation(text=text, reward=1.0 if said else 0.0, done=done)

    @property
    def state(self) -> State:
        return self._state


def parse_fault_map(text: str) -> dict[int, Fault]:
    """`"1=reward_nan,3=step_hangs"` → `{1: Fault.REWARD_NAN, 3: Fault.STEP_HANGS}`; an
    unknown fault or a malformed entry raises ValueError naming it."""
    found: dict[int, Fault] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        seed, equals, name = entry.partition("=")
        if not equals:
            raise ValueError(f"{FAULTS_ENV_VAR}: {entry!r} is not SEED=FAULT")
        found[int(seed)] = Fault(name.strip())
    return found


def make_hostile_app(faults_by_seed: Mapping[int, Fault | str] | None = None) -> FastAPI:
    """OpenEnv's app for `HostileTextEnvironment` with a `/ws` that answers a session whose
    reset seed is in `faults_by_seed` (default: `OPENENVGEN_HOSTILE_FAULTS`) with its fault."""
    if faults_by_seed is None:
        faults_by_seed = parse_fault_map(os.environ.get(FAULTS_ENV_VAR, ""))
    by_seed = {int(seed): Fault(fault) for seed, fault in faults_by_seed.items()}
    app = create_app(
        HostileTextEnvironment, TextAction, TextObservation, env_name="hostile_text", max_concurrent_envs=64
    )
    app.router.routes[:] = [route for route in app.router.routes if not _is_ws_route(route)]
    app.add_api_websocket_route("/ws", _session_endpoint(by_seed))
    app.state.faults_by_seed = by_seed
    return app


def _is_ws_route(route: BaseRoute) -> bool:
    return getattr(route, "path", None) == "/ws"


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def _session_endpoint(faults_by_seed: Mapping[int, Fault]) -> Any:
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()
        env = HostileTextEnvironment()
        fault: Fault | None = None
        fault_on = "step"
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    message = json.loads(raw)
                    kind, data = message.get("type"), message.get("data") or {}
                except (json.JSONDecodeError, AttributeError) as error:
                    await websocket.send_text(_error(f"Invalid JSON: {error}", "INVALID_JSON"))
                    continue
                if kind == "close":
                    break
                if kind == "state":
                    await websocket.send_text(json.dumps({"type": "state", "data": env.state.model_dump()}))
                    continue
                if kind == "reset":
                    options = dict(data)
                    chosen = options.pop("fault", None)
                    fault_on = str(options.pop("fault_on", "step"))
                    fault = Fault(chosen) if chosen else faults_by_seed.get(options.get("seed", -1))
                    if fault is Fault.RESET_HANGS:
                        await _never_answer(websocket)
                        return
                    reply = serialize_observation(env.reset(**options))
                elif kind == "step":
                    if fault is Fault.STEP_HANGS:
                        await _never_answer(websocket)
                        return
                    try:
                        action = deserialize_action(data, TextAction)
                        assert isinstance(action, TextAction)
                        reply = serialize_observation(env.step(action))
                    except ValidationError as error:
                        await websocket.send_text(_error(str(error), "VALIDATION_ERROR"))
                        continue
                else:
                    await websocket.send_text(_error(f"Unknown message type: {kind}", "UNKNOWN_TYPE"))
                    continue
                faulty = fault is not None and fault not in HANGS and kind == fault_on
                answer = frame(fault if faulty else None, reply)
                if isinstance(answer, bytes):
                    await websocket.send_bytes(answer)
                else:
                    await websocket.send_text(answer)
        except WebSocketDisconnect:
            pass

    return session


async def _never_answer(websocket: WebSocket) -> None:
    """Read and drop the session's messages until the client leaves: a server that hangs
    but still notices a closed connection, so the test server shuts down promptly."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


assert set(FAULTS) == set(Fault)

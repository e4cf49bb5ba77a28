"""Replay servers: real OpenEnv servers that speak exactly like the captured upstream envs.

For each env recorded in ``tests/fixtures/recordings`` (copies of the real captures in
``../shared/corpus``) this builds an openenv ``create_app`` server
whose ``/schema``, ``/metadata`` (and, for MCP envs, tool list) equal the capture, and
whose WebSocket episodes replay one recorded session:

* ``reset`` returns the recorded reset observation (after checking that the reset kwargs
  are the recorded ones);
* each ``step`` checks that the action is the recorded one, then returns the recorded
  observation and reward. The last recorded step always ends the episode (``done=True``),
  so a scripted episode of the recorded actions ends with ``env_done`` and a known reward:
  the sum of the recorded rewards (:attr:`Recording.total_reward`).

Typed envs validate actions with the hand-written server models in
:mod:`tests.support.corpus_models` (their JSON schema equals the capture's). The MCP env
(echo) is an ``MCPEnvironment`` with the upstream tools, so tool calls really run through
FastMCP; only reward and done come from the recording. Every action and reset a replay
server receives is logged on its :class:`ReplayLog`, so tests can see what reached it.

Serve one with :func:`tests.support.servers.serve_app`::

    replay = make_replay_app("textarena_env")
    with serve_app(replay.app, ready_path="/health") as url:
        ...
"""

from __future__ import annotations

import copy
import functools
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from fastapi import FastAPI
from fastmcp import FastMCP
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ListToolsAction
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import ConfigDict

from tests.support.corpus_models import SERVER_ACTIONS

__all__ = [
    "RECORDINGS",
    "Recording",
    "Replay",
    "ReplayError",
    "ReplayLog",
    "load_recording",
    "make_replay_app",
    "wire_action",
]

RECORDINGS = Path(__file__).resolve().parents[1] / "fixtures" / "recordings"
"""The recorded sessions kept in the project (see its README)."""


class ReplayError(ValueError):
    """The client did something the recording does not contain."""


# ---------------------------------------------------------------------------
# Recordings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    action: dict[str, Any]
    """The action the capture sent (the WS step message's data)."""
    reply: dict[str, Any]
    """The server's reply data: ``observation``, ``reward``, ``done``."""


@dataclass(frozen=True)
class Recording:
    """One recorded WebSocket session of a captured env, plus its schema and metadata."""

    corpus: str
    schema: dict[str, Any]
    metadata: dict[str, Any]
    reset_kwargs: dict[str, Any]
    reset: dict[str, Any]
    steps: tuple[Step, ...]
    tools: tuple[dict[str, Any], ...] | None = None
    """The WS ``list_tools`` reply's tools (MCP envs only)."""

    @property
    def is_mcp(self) -> bool:
        return self.tools is not None

    def reward_at(self, index: int) -> float | None:
        return self.steps[index].reply.get("reward")

    def done_at(self, index: int) -> bool:
        """Replayed done: the recorded one, and always on the last recorded step."""
        return bool(self.steps[index].reply.get("done")) or index == len(self.steps) - 1

    @property
    def rewards(self) -> list[float]:
        """Per-step rewards as the runtime scores them (None counts 0)."""
        return [float(self.reward_at(i) or 0.0) for i in range(len(self.steps))]

    @property
    def total_reward(self) -> float:
        return sum(self.rewards)


def _read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text("utf-8"))


def load_recording(corpus: str, *, episode: str = "", root: Path = RECORDINGS) -> Recording:
    """The session recorded in ``root/corpus``: files ``{episode}reset_request.json``,
    ``{episode}reset.json``, then ``{episode}step_action.json``/``{episode}step.json`` and
    ``{episode}step_N_action.json``/``{episode}step_N.json`` for N = 2, 3, ...
    (``episode`` is a file prefix such as ``"kwargs_"`` for a second recorded session)."""
    folder = root / corpus
    steps = []
    n = 1
    while True:
        stem = f"{episode}step" if n == 1 else f"{episode}step_{n}"
        if not (folder / f"{stem}.json").exists():
            break
        steps.append(Step(action=_read(folder, f"{stem}_action.json"), reply=_read(folder, f"{stem}.json")["data"]))
        n += 1
    if not steps:
        raise FileNotFoundError(f"{folder}: no {episode}step.json recorded")
    tools = None
    if (folder / "tools.json").exists():
        tools = tuple(_read(folder, "tools.json")["data"]["observation"]["tools"])
    return Recording(
        corpus=corpus,
        schema=_read(folder, "schema.json"),
        metadata=_read(folder, "metadata.json"),
        reset_kwargs=_read(folder, f"{episode}reset_request.json")["data"],
        reset=_read(folder, f"{episode}reset.json")["data"],
        steps=tuple(steps),
        tools=tools,
    )


def wire_action(action: Action) -> dict[str, Any]:
    """An action as compared with the recording: its fields, without the base metadata."""
    return action.model_dump(mode="json", exclude={"metadata"})


# ---------------------------------------------------------------------------
# What a replay server saw
# ---------------------------------------------------------------------------


@dataclass
class ReplayLog:
    """Every reset and action that reached a replay server, across its sessions."""

    resets: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self, kwargs: dict[str, Any]) -> None:
        with self._lock:
            self.resets.append(kwargs)

    def action(self, action: dict[str, Any]) -> None:
        with self._lock:
            self.actions.append(action)

    def error(self, message: str) -> ReplayError:
        with self._lock:
            self.errors.append(message)
        return ReplayError(message)


class _Cursor:
    """One session's position in the recording; shared by typed and MCP replays."""

    def __init__(self, recording: Recording, log: ReplayLog, action_cls: type[Action]) -> None:
        self.recording = recording
        self.log = log
        self.action_cls = action_cls
        self.position = 0

    def reset(self, kwargs: dict[str, Any]) -> None:
        self.log.reset(kwargs)
        if kwargs != self.recording.reset_kwargs:
            raise self.log.error(f"reset kwargs {kwargs!r} are not the recorded {self.recording.reset_kwargs!r}")
        self.position = 0

    def advance(self, action: Action) -> int:
        """Check `action` against the recording; return the index of its recorded step."""
        got = wire_action(action)
        self.log.action(got)
        if self.position >= len(self.recording.steps):
            raise self.log.error(f"step {self.position + 1} was never recorded (the episode is over)")
        expected = wire_action(self.action_cls.model_validate(self.recording.steps[self.position].action))
        if got != expected:
            raise self.log.error(f"step {self.position + 1}: action {got!r} is not the recorded {expected!r}")
        self.position += 1
        return self.position - 1


# ---------------------------------------------------------------------------
# Typed-action envs
# ---------------------------------------------------------------------------


class ReplayObservation(Observation):
    """Carries a recorded observation's fields verbatim (they are extra fields here)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)


def _observation_class(recording: Recording) -> type[ReplayObservation]:
    """A ReplayObservation whose `/schema` entry is the captured observation schema."""
    captured = recording.schema["observation"]

    class CapturedObservation(ReplayObservation):
        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(captured)

    CapturedObservation.__name__ = CapturedObservation.__qualname__ = captured.get("title", "CapturedObservation")
    return CapturedObservation


def _metadata(recording: Recording) -> EnvironmentMetadata:
    return EnvironmentMetadata(**recording.metadata)


class ReplayEnvironment(Environment):
    """Replays one recorded session of a typed-action env; one instance per WS session."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]) -> None:
        super().__init__()
        self._cursor = _Cursor(recording, log, action_cls)
        self._observation_cls = observation_cls
        self._state = State(episode_id=str(uuid.uuid4()))

    def _observation(self, reply: dict[str, Any], *, reward: Any, done: bool) -> ReplayObservation:
        fields = {k: v for k, v in reply["observation"].items() if k not in ("reward", "done")}
        return self._observation_cls(**fields, reward=reward, done=done)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> ReplayObservation:
        if seed is not None:
            kwargs["seed"] = seed
        if episode_id is not None:
            kwargs["episode_id"] = episode_id
        self._cursor.reset(kwargs)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        reset = self._cursor.recording.reset
        return self._observation(reset, reward=reset.get("reward"), done=bool(reset.get("done")))

    def step(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> ReplayObservation:
        index = self._cursor.advance(action)
        self._state.step_count += 1
        recording = self._cursor.recording
        return self._observation(recording.steps[index].reply, reward=recording.reward_at(index), done=recording.done_at(index))

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return _metadata(self._cursor.recording)


# ---------------------------------------------------------------------------
# MCP envs
# ---------------------------------------------------------------------------


def _echo_tools(mcp: FastMCP) -> None:
    """echo_env's tools, written as upstream writes them (envs/echo_env/server/echo_environment.py);
    FastMCP derives the input schemas from these signatures and docstrings."""

    @mcp.tool
    def echo_message(message: str) -> str:
        """
        Echo back the provided message.

        Args:
            message: The message to echo back

        Returns:
            The same message that was provided
        """
        return message

    @mcp.tool
    def echo_with_length(message: str) -> dict:
        """
        Echo back the message with its length.

        Args:
            message: The message to echo back

        Returns:
            Dictionary with the message and its length
        """
        return {"message": message, "length": len(message)}


MCP_TOOLS = {"echo_env": _echo_tools}


class ReplayMCPEnvironment(MCPEnvironment):
    """An MCP env whose tools really run, with reward and done replayed from the recording."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, recording: Recording, log: ReplayLog) -> None:
        mcp = FastMCP(recording.corpus)
        MCP_TOOLS[recording.corpus](mcp)
        super().__init__(mcp)  # tools must be registered first
        self._cursor = _Cursor(recording, log, CallToolAction)
        self._state = State(episode_id=str(uuid.uuid4()))

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> Observation:
        if seed is not None:
            kwargs["seed"] = seed
        if episode_id is not None:
            kwargs["episode_id"] = episode_id
        self._cursor.reset(kwargs)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        reset = self._cursor.recording.reset
        return Observation(done=bool(reset.get("done")), reward=reset.get("reward"), metadata=reset["observation"].get("metadata", {}))

    def _step_impl(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        raise self._cursor.log.error(f"not an MCP action: {type(action).__name__}")

    def step(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        index = self._before(action)
        return self._after(index, super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        # The WS handler prefers step_async (MCPEnvironment overrides it).
        index = self._before(action)
        return self._after(index, await super().step_async(action, timeout_s=timeout_s, **kwargs))

    def _before(self, action: Action) -> int | None:
        if isinstance(action, ListToolsAction):
            return None  # discovery is not part of the episode
        return self._cursor.advance(action)

    def _after(self, index: int | None, observation: Observation) -> Observation:
        if index is None:
            return observation
        self._state.step_count += 1
        recording = self._cursor.recording
        observation.reward = recording.reward_at(index)
        observation.done = recording.done_at(index)
        return observation

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return _metadata(self._cursor.recording)


# ---------------------------------------------------------------------------
# Apps
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    recording: Recording
    log: ReplayLog
    app: FastAPI


def make_replay_app(corpus: str, *, episode: str = "", root: Path = RECORDINGS, max_concurrent_envs: int = 8) -> Replay:
    """An openenv app replaying the session recorded in ``root/corpus`` (see module doc)."""
    recording = load_recording(corpus, episode=episode, root=root)
    log = ReplayLog()
    if recording.is_mcp:
        # openenv routes {"type": "call_tool"} payloads to its MCP handling only when the
        # app's action class is its own CallToolAction (its schema equals the capture's).
        factory: Any = functools.partial(ReplayMCPEnvironment, recording, log)
        action_cls: type[Action] = CallToolAction
        observation_cls: type[Observation] = CallToolObservation
    else:
        action_cls = SERVER_ACTIONS[corpus]
        observation_cls = _observation_class(recording)
        factory = functools.partial(ReplayEnvironment, recording, log, action_cls, observation_cls)
    app = create_app(
        factory,
        action_cls,
        observation_cls,
        env_name=f"{corpus}_replay",
        max_concurrent_envs=max_concurrent_envs,
    )
    return Replay(recording=recording, log=log, app=app)

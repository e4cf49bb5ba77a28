"""Replay servers: real OpenEnv servers that speak exactly like the captured upstream envs.

For each env captured in ``tests/fixtures/captures`` (written by ``openenv-gen capture``
from the upstream envs, see that folder's README) this builds an openenv ``create_app``
server whose ``/schema`` (all of it, the reset observation's part included), ``/metadata``
(and, for MCP envs, tool list) equal the capture,
and whose WebSocket episodes replay the recorded session:

* ``reset`` returns the recorded reset observation (after checking that the reset kwargs
  are the recorded ones);
* each ``step`` checks that the action is the recorded one, then returns the recorded
  observation and reward. The last recorded step always ends the episode (``done=True``),
  so a scripted episode of the recorded actions ends with ``env_done`` and a known reward:
  the sum of the recorded rewards (:attr:`Recording.total_reward`).

Actions are validated the way the upstream server validates them: against the captured
action schema (:func:`server_action_class`, an openenv ``Action`` whose JSON schema is the
capture's and which rejects what that schema rejects). MCP envs are ``MCPEnvironment``s
whose FastMCP server lists the recorded tools with their recorded descriptions and input
schemas, so ``/mcp`` and ``list_tools`` answer like the upstream env; a tool call returns
the recorded result. Every action and reset a replay server receives is logged on its
:class:`ReplayLog`, so tests can see what reached it.

Serve one with :func:`openenvgen_testsupport.servers.serve_app`::

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
from typing import Any, ClassVar, TypeVar

import jsonschema
from fastapi import FastAPI
from fastmcp import FastMCP
from fastmcp.tools import Tool
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from openenvgen_testsupport.paths import FIXTURES

_Model = TypeVar("_Model", bound=BaseModel)

__all__ = [
    "CAPTURES",
    "Recording",
    "Replay",
    "ReplayError",
    "ReplayLog",
    "catalog_action",
    "load_recording",
    "make_replay_app",
    "server_action_class",
    "wire_action",
]

CAPTURES = FIXTURES / "captures"
"""The captures kept in the project, one folder per upstream env (see its README)."""


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

    env_folder: str
    schema: dict[str, Any]
    metadata: dict[str, Any] | None
    """None when the env's ``/metadata`` failed where it was captured (it could not be created)."""
    reset_kwargs: dict[str, Any]
    reset: dict[str, Any] | None
    """The reset reply's data; None when no session was recorded (see the env's source.json)."""
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


def load_recording(env_folder: str, *, episode: str = "", root: Path = CAPTURES) -> Recording:
    """The session recorded in ``root/env_folder``: files ``{episode}reset_request.json``,
    ``{episode}reset.json``, then ``{episode}step_action.json``/``{episode}step.json`` and
    ``{episode}step_N_action.json``/``{episode}step_N.json`` for N = 2, 3, ...
    (``episode`` is a file prefix such as ``"kwargs_"`` for a second recorded session)."""
    folder = root / env_folder
    steps = []
    n = 1
    while True:
        stem = f"{episode}step" if n == 1 else f"{episode}step_{n}"
        if not (folder / f"{stem}.json").exists():
            break
        steps.append(Step(action=_read(folder, f"{stem}_action.json"), reply=_read(folder, f"{stem}.json")["data"]))
        n += 1
    if not (folder / "schema.json").exists():
        raise FileNotFoundError(f"{folder}: no schema.json recorded")
    session = (folder / f"{episode}reset.json").exists()
    return Recording(
        env_folder=env_folder,
        schema=_read(folder, "schema.json"),
        metadata=_read(folder, "metadata.json") if (folder / "metadata.json").exists() else None,
        reset_kwargs=_read(folder, f"{episode}reset_request.json")["data"] if session else {},
        reset=_read(folder, f"{episode}reset.json")["data"] if session else None,
        steps=tuple(steps),
        tools=_tools(folder),
    )


def _tools(folder: Path) -> tuple[dict[str, Any], ...] | None:
    """The MCP tools as the WS ``list_tools`` step lists them (``input_schema``): from that
    reply, else from ``POST /mcp`` tools/list (some envs' action models refuse the step)."""
    if (folder / "tools.json").exists():
        reply = _read(folder, "tools.json")
        if reply.get("type") == "observation":
            return tuple(reply["data"]["observation"]["tools"])
    if (folder / "mcp_tools_list.json").exists():
        listed = _read(folder, "mcp_tools_list.json").get("result", {}).get("tools", [])
        return tuple(
            {"name": t["name"], "description": t.get("description"), "input_schema": t["inputSchema"]} for t in listed
        )
    return None


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
        if self.recording.reset is None:
            raise self.log.error(f"{self.recording.env_folder}: no session was recorded (see its source.json)")
        # The runtime seeds every task (`seed=i` unless its kwargs set one); a replay is the
        # same whatever the seed, so a seed the recorded reset did not send is accepted.
        compared = kwargs if "seed" in self.recording.reset_kwargs else {k: v for k, v in kwargs.items() if k != "seed"}
        if compared != self.recording.reset_kwargs:
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


class CapturedAction(Action):
    """An action checked against a captured action schema (see :func:`server_action_class`)."""

    model_config = ConfigDict(extra="allow", validate_assignment=False, arbitrary_types_allowed=True)
    captured_schema: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _check_schema(cls, data: Any) -> Any:
        # What the upstream model rejects, this rejects too; its defaults are filled in
        # (as pydantic fills them) so recorded and received actions compare alike.
        jsonschema.validate(data, cls.captured_schema)
        filled = dict(data)
        for name, prop in cls.captured_schema.get("properties", {}).items():
            if name not in filled and "default" in prop:
                filled[name] = copy.deepcopy(prop["default"])
        return filled

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.captured_schema)


@functools.cache
def _action_class(env_folder: str, schema_json: str) -> type[CapturedAction]:
    schema = json.loads(schema_json)
    return type(
        schema.get("title", "CapturedAction"), (CapturedAction,), {"captured_schema": schema, "__module__": __name__}
    )


def _with_captured_schema(base: type[_Model], schema: dict[str, Any], untitled: str) -> type[_Model]:
    """A subclass of `base` whose JSON schema (as `/schema` serves it) is `schema`, named
    by its title (else `untitled`)."""

    class Captured(base):  # type: ignore[valid-type,misc]
        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    Captured.__name__ = Captured.__qualname__ = schema.get("title", untitled)
    return Captured


@functools.cache
def _mcp_action_class(env_folder: str, schema_json: str) -> type[CallToolAction]:
    return _with_captured_schema(CallToolAction, json.loads(schema_json), "CallToolAction")


def server_action_class(recording: Recording) -> type[Action]:
    """The action class the replay server validates with, its JSON schema the captured one:
    openenv's own ``CallToolAction`` for MCP envs (openenv routes ``call_tool`` payloads by
    their ``type``), else an ``Action`` that accepts what the captured schema accepts."""
    schema_json = json.dumps(recording.schema["action"])  # key order kept: READMEs list fields in it
    if recording.is_mcp:
        return _mcp_action_class(recording.env_folder, schema_json)
    return _action_class(recording.env_folder, schema_json)


def catalog_action(recording: Recording, action: dict[str, Any]) -> dict[str, Any]:
    """A recorded wire action in the form a model replies with (the catalog's form):
    ``{"tool", "arguments"}`` for MCP envs, the action's own fields otherwise."""
    if recording.is_mcp:
        return {"tool": action["tool_name"], "arguments": action.get("arguments", {})}
    return {k: v for k, v in action.items() if k != "metadata"}


class ReplayObservation(Observation):
    """Carries a recorded observation's fields verbatim (they are extra fields here)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)
    _recorded_metadata: bool = PrivateAttr(default=True)

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        # Servers on some openenv versions leave an empty `metadata` out of the observation:
        # so does the replay of their recordings.
        dumped = super().model_dump(*args, **kwargs)
        if not self._recorded_metadata:
            dumped.pop("metadata", None)
        return dumped

    @classmethod
    def recorded(cls, observation: dict[str, Any], *, reward: Any, done: bool) -> ReplayObservation:
        fields = {k: v for k, v in observation.items() if k not in ("reward", "done")}
        replayed = cls(**fields, reward=reward, done=done)
        replayed._recorded_metadata = "metadata" in observation
        return replayed


def _observation_class(recording: Recording) -> type[ReplayObservation]:
    """A ReplayObservation whose `/schema` entry is the captured observation schema."""
    return _with_captured_schema(ReplayObservation, recording.schema["observation"], "CapturedObservation")


def _metadata(recording: Recording) -> EnvironmentMetadata:
    if recording.metadata is None:  # as upstream: its /metadata failed (500)
        raise ReplayError(f"{recording.env_folder}: /metadata failed where it was captured")
    return EnvironmentMetadata(**recording.metadata)


class ReplayEnvironment(Environment):
    """Replays one recorded session of a typed-action env; one instance per WS session."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]
    ) -> None:
        super().__init__()
        self._cursor = _Cursor(recording, log, action_cls)
        self._observation_cls = observation_cls
        self._state = State(episode_id=str(uuid.uuid4()))

    def _observation(self, reply: dict[str, Any], *, reward: Any, done: bool) -> ReplayObservation:
        return self._observation_cls.recorded(reply["observation"], reward=reward, done=done)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ReplayObservation:
        if seed is not None:
            kwargs["seed"] = seed
        if episode_id is not None:
            kwargs["episode_id"] = episode_id
        self._cursor.reset(kwargs)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        reset = self._cursor.recording.reset
        return self._observation(reset, reward=reset.get("reward"), done=bool(reset.get("done")))

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> ReplayObservation:
        index = self._cursor.advance(action)
        self._state.step_count += 1
        recording = self._cursor.recording
        return self._observation(
            recording.steps[index].reply, reward=recording.reward_at(index), done=recording.done_at(index)
        )

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return _metadata(self._cursor.recording)


# ---------------------------------------------------------------------------
# MCP envs
# ---------------------------------------------------------------------------


class RecordedTool(Tool):
    """A tool as the upstream env lists it: its recorded name, description and input
    schema. Calls never reach it: the replay returns the recorded result."""

    async def run(self, arguments: dict[str, Any]) -> Any:
        raise ReplayError(f"{self.name}: a replayed tool call is answered from the recording")


def _recorded_tools(recording: Recording) -> FastMCP:
    mcp = FastMCP(recording.env_folder)
    for tool in recording.tools or ():
        mcp.add_tool(
            RecordedTool(
                name=tool["name"], description=tool.get("description"), parameters=copy.deepcopy(tool["input_schema"])
            )
        )
    return mcp


class ReplayMCPEnvironment(MCPEnvironment):
    """An MCP env listing the recorded tools; tool calls return the recorded observations."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]
    ) -> None:
        super().__init__(_recorded_tools(recording))
        self._cursor = _Cursor(recording, log, action_cls)
        self._observation_cls = observation_cls
        self._state = State(episode_id=str(uuid.uuid4()))

    def _observation(self, reply: dict[str, Any], *, reward: Any, done: bool) -> ReplayObservation:
        return self._observation_cls.recorded(reply["observation"], reward=reward, done=done)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        if seed is not None:
            kwargs["seed"] = seed
        if episode_id is not None:
            kwargs["episode_id"] = episode_id
        self._cursor.reset(kwargs)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        reset = self._cursor.recording.reset
        return self._observation(reset, reward=reset.get("reward"), done=bool(reset.get("done")))

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        raise self._cursor.log.error(f"not an MCP action: {type(action).__name__}")

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):  # discovery is not part of the episode
            return super().step(action, timeout_s=timeout_s, **kwargs)
        return self._replayed(action)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        # The WS handler prefers step_async (MCPEnvironment overrides it).
        if isinstance(action, ListToolsAction):
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return self._replayed(action)

    def _replayed(self, action: Action) -> Observation:
        index = self._cursor.advance(action)
        self._state.step_count += 1
        recording = self._cursor.recording
        return self._observation(
            recording.steps[index].reply, reward=recording.reward_at(index), done=recording.done_at(index)
        )

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


def make_replay_app(
    env_folder: str, *, episode: str = "", root: Path = CAPTURES, max_concurrent_envs: int = 8
) -> Replay:
    """An openenv app replaying the session recorded in ``root/env_folder`` (see module doc)."""
    recording = load_recording(env_folder, episode=episode, root=root)
    log = ReplayLog()
    action_cls = server_action_class(recording)
    observation_cls = _observation_class(recording)
    environment = ReplayMCPEnvironment if recording.is_mcp else ReplayEnvironment
    factory = functools.partial(environment, recording, log, action_cls, observation_cls)
    app = create_app(
        factory,
        action_cls,
        observation_cls,
        env_name=f"{env_folder}_replay",
        max_concurrent_envs=max_concurrent_envs,
    )
    _serve_captured_schema(app, recording.schema)
    return Replay(recording=recording, log=log, app=app)


def _serve_captured_schema(app: FastAPI, schema: dict[str, Any]) -> None:
    """`/schema` answers exactly what the env served: newer openenv servers add parts (the
    reset observation's schema) that this client-side openenv's `create_app` does not."""
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) != "/schema"]
    captured = copy.deepcopy(schema)

    @app.get("/schema")
    def _schema() -> dict[str, Any]:
        return captured

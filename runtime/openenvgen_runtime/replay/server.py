"""Replay apps: real OpenEnv servers that speak exactly like a recorded upstream env.

Built with OpenEnv's `create_app`: `/schema` (all of it, the reset observation's part included),
`/metadata` (and, for MCP envs, the tool list) are the recording's, and each WebSocket session
replays the recorded episode:

* `reset` returns the recorded reset observation (after checking that the reset kwargs are the
  recorded ones; a `seed` the recording did not send is accepted, as a replay is the same
  whatever the seed);
* each `step` checks that the action is the recorded one, then returns the recorded
  observation and reward. The last recorded step always ends the episode (`done=True`).

Actions are validated the way the upstream server validates them, against the recorded action
schema (`server_action_class`). MCP envs are `MCPEnvironment`s whose FastMCP server lists the
recorded tools, so `/mcp` and `list_tools` answer like the upstream env; a tool call returns
the recorded result. Every action and reset a replay receives is logged on its `ReplayLog`.
"""

from __future__ import annotations

import copy
import functools
import json
import uuid
from dataclasses import dataclass
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

from openenvgen_runtime.replay.recording import RECORDINGS, Cursor, Recording, ReplayError, ReplayLog, load_recording

_Model = TypeVar("_Model", bound=BaseModel)


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


class _Replaying:
    """What both replay environments do: each WS session walks one recorded session with a
    `Cursor`, answering resets and steps with the recorded observations."""

    def _start_replay(
        self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]
    ) -> None:
        self._cursor = Cursor(recording, log, action_cls)
        self._observation_cls = observation_cls
        self._state = State(episode_id=str(uuid.uuid4()))

    def _observation(self, reply: dict[str, Any], *, reward: Any, done: bool) -> ReplayObservation:
        return self._observation_cls.recorded(reply["observation"], reward=reward, done=done)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ReplayObservation:
        if seed is not None:
            kwargs["seed"] = seed
        if episode_id is not None:
            kwargs["episode_id"] = episode_id
        reset = self._cursor.reset(kwargs)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return self._observation(reset, reward=reset.get("reward"), done=bool(reset.get("done")))

    def _replayed(self, action: Action) -> ReplayObservation:
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


class ReplayEnvironment(_Replaying, Environment[Action, ReplayObservation, State]):
    """Replays one recorded session of a typed-action env; one instance per WS session."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]
    ) -> None:
        super().__init__()
        self._start_replay(recording, log, action_cls, observation_cls)

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> ReplayObservation:
        return self._replayed(action)


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


class ReplayMCPEnvironment(_Replaying, MCPEnvironment):
    """An MCP env listing the recorded tools; tool calls return the recorded observations."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, recording: Recording, log: ReplayLog, action_cls: type[Action], observation_cls: type[ReplayObservation]
    ) -> None:
        super().__init__(_recorded_tools(recording))
        self._start_replay(recording, log, action_cls, observation_cls)

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


# ---------------------------------------------------------------------------
# Apps
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    recording: Recording
    log: ReplayLog
    app: FastAPI


def make_replay_app(
    env_folder: str, *, episode: str = "", root: Path = RECORDINGS, max_concurrent_envs: int = 8
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

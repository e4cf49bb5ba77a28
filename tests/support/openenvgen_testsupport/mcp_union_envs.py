"""Real OpenEnv environments whose action is openenv's MCP union, `ListToolsAction |
CallToolAction`, the way upstream's agent_world_model_env serves it: an `Action` whose
`model_validate`/`model_json_schema` are those of the discriminated union, so `/schema.action`
is a `oneOf` of the two and the env receives the concrete member.

* `make_scenario_app()`: the tools follow the reset, as agent_world_model's follow its
  scenario. `reset(scenario="a")` offers `add(a: int, b: int)` and `submit(total: int)` (the
  episode is won by submitting 42); `scenario="b"` offers `shout(text: str, minLength 1)`,
  which wins at once. Its tools are listed only on a session (the `list_tools` action);
  `POST /mcp tools/list` answers "Environment does not support MCP", as agent_world_model's
  does. Listing is no step: the env's step count leaves it out. Every action the env
  receives is appended to `RECEIVED` (the server runs in the test's process), arguments as
  they arrived, so a test sees their JSON types.
* `make_static_app()`: the MCP fixture env (`fixture_envs.EchoAddMCPEnvironment`, a FastMCP
  server of its own) behind the same union action: its server lists its tools without a
  session, so the runtime reads them once, at pool start.
"""

from __future__ import annotations

import threading
import uuid
from typing import Annotated, Any

from fastapi import FastAPI
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
)
from openenv.core.env_server.types import Observation, State
from pydantic import Field, TypeAdapter

from openenvgen_testsupport.fixture_envs import EchoAddMCPEnvironment
from openenvgen_testsupport.union_envs import UnionAction

__all__ = [
    "RECEIVED",
    "SCENARIOS",
    "ScenarioAction",
    "ScenarioEnvironment",
    "ScenarioObservation",
    "make_scenario_app",
    "make_static_app",
]

_INT = {"type": "integer"}
SCENARIOS: dict[str, list[Tool]] = {
    "a": [
        Tool(
            name="add",
            description="Return a + b.",
            input_schema={
                "type": "object",
                "properties": {"a": _INT, "b": _INT},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        ),
        Tool(
            name="submit",
            description="Submit the total; 42 wins.",
            input_schema={"type": "object", "properties": {"total": _INT}, "required": ["total"]},
        ),
    ],
    "b": [
        Tool(
            name="shout",
            description="Shout the text; any text wins.",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string", "minLength": 1}},
                "required": ["text"],
            },
        ),
    ],
}
"""Each scenario's tools, as its sessions list them."""

RECEIVED: list[tuple[str, str, dict[str, Any]]] = []
"""(scenario, "list_tools" or the tool called, its arguments as received), in arrival order."""
_lock = threading.Lock()

McpUnion = Annotated[ListToolsAction | CallToolAction, Field(discriminator="type")]


class ScenarioAction(UnionAction):
    """openenv's MCP union as an action class."""

    UNION = TypeAdapter(McpUnion)


class ScenarioObservation(Observation):
    scenario: str = Field("", description="The scenario of this episode.")
    message: str = Field("", description="What happened.")
    result: Any = Field(None, description="The last tool's result.")
    steps: int = Field(0, description="Tool calls so far (listing the tools is none).")


class ScenarioEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._scenario = "a"
        self._state = State(episode_id=str(uuid.uuid4()))

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, scenario: str = "a", **kwargs: Any
    ) -> Observation:
        self._scenario = scenario if scenario in SCENARIOS else "a"
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        names = ", ".join(t.name for t in SCENARIOS[self._scenario])
        message = f"Scenario {self._scenario}: use its tools ({names})."
        return ScenarioObservation(scenario=self._scenario, message=message, done=False, reward=0.0)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):
            with _lock:
                RECEIVED.append((self._scenario, "list_tools", {}))
            return ListToolsObservation(tools=SCENARIOS[self._scenario])
        if not isinstance(action, CallToolAction):
            raise TypeError(f"not an MCP action: {type(action).__name__}")
        with _lock:
            RECEIVED.append((self._scenario, action.tool_name, dict(action.arguments)))
        self._state.step_count += 1
        args, done, reward, result = action.arguments, False, 0.0, None
        match (self._scenario, action.tool_name):
            case ("a", "add"):
                result = args["a"] + args["b"]
            case ("a", "submit"):
                done, result = True, args["total"]
                reward = 1.0 if args["total"] == 42 else 0.0
            case ("b", "shout"):
                done, reward, result = True, 1.0, str(args["text"]).upper()
            case _:
                message = f"no tool {action.tool_name!r} in scenario {self._scenario}"
                return ScenarioObservation(scenario=self._scenario, message=message, steps=self._state.step_count)
        return ScenarioObservation(
            scenario=self._scenario,
            message=f"called {action.tool_name}",
            result=result,
            steps=self._state.step_count,
            done=done,
            reward=reward,
        )

    @property
    def state(self) -> State:
        return self._state


def make_scenario_app() -> FastAPI:
    return create_app(
        ScenarioEnvironment, ScenarioAction, ScenarioObservation, env_name="scenario_union", max_concurrent_envs=4
    )


def make_static_app() -> FastAPI:
    return create_app(
        EchoAddMCPEnvironment, ScenarioAction, CallToolObservation, env_name="static_union", max_concurrent_envs=4
    )

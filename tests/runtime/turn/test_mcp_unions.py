"""MCP unions (an action `ListToolsAction | CallToolAction`, as agent_world_model serves it),
played end to end: a package generated from a real `create_app` server whose tools follow
the reset, episodes through verifiers' Env API and the runtime's episode loop with the
scripted model, in both action formats. The tools offered follow each episode's reset, calls
reach the server with typed arguments, and an unknown tool or bad arguments come back as an
invalid action with a one-line reason; a union env whose server lists its tools without a
session has them read once, at pool start."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from openenvgen_testsupport.adapters import generate_from_server, load_env, outcome, run_all
from openenvgen_testsupport.mcp_union_envs import RECEIVED, make_scenario_app, make_static_app
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel, ToolCalls
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout

RESETS = [{"scenario": "a"}, {"scenario": "b"}]


@pytest.fixture(scope="module")
def scenario_server() -> Iterator[str]:
    with serve_app(make_scenario_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def union_pkg(scenario_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return generate_from_server("scenario_union", scenario_server, tmp_path_factory.mktemp("pkgs"))


def _play(pkg: str, server: str, model: ScriptedChatModel, **taskset: Any) -> list[Any]:
    RECEIVED.clear()
    with serve_app(model) as model_url:
        # on_drift=error: the tools a union lists are no drift (only its members are compared).
        env = load_env(pkg, {"base_url": server, "on_drift": "error", **taskset})
        return asyncio.run(run_all(env, str(model_url)))


def _by_scenario(episodes: list[Any]) -> dict[str, Any]:
    return {e.traces[0].info["openenv"]["scenario"]: e for e in episodes}


def _conversations(model: ScriptedChatModel) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's model requests (its reset observation names it)."""
    return {("a" if "Scenario a" in key else "b"): bodies for key, bodies in model.conversations().items()}


def _received() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for scenario, tool, arguments in RECEIVED:
        out.setdefault(scenario, []).append((tool, arguments))
    return out


def _typed(arguments: dict[str, Any]) -> dict[str, str]:
    return {k: type(v).__name__ for k, v in arguments.items()}


def test_the_tools_follow_the_reset_as_text(union_pkg: str, scenario_server: str) -> None:
    a = Script(
        [
            json.dumps({"tool": "shout", "arguments": {"text": "hi"}}),  # scenario b's tool, not a's
            json.dumps({"tool": "add", "arguments": {"a": "forty", "b": 2}}),  # not an integer
            json.dumps({"type": "call_tool", "tool_name": "add", "arguments": {"a": 40, "b": 2}}),
            json.dumps({"tool": "submit", "arguments": {"total": 42}}),
        ]
    )
    b = Script([json.dumps({"tool": "shout", "arguments": {"text": "hi"}})])
    model = ScriptedChatModel(Script(["{}"]), by_conversation={"Scenario a": a, "Scenario b": b})
    episodes = _by_scenario(_play(union_pkg, scenario_server, model, resets=RESETS))
    assert {s: outcome(e) for s, e in episodes.items()} == {"a": (True, "env_done", 1.0), "b": (True, "env_done", 1.0)}
    # Listing is no step of the episode: only the tool calls count.
    assert episodes["a"].traces[0].metrics["env_steps"] == 2 and episodes["b"].traces[0].metrics["env_steps"] == 1
    assert episodes["a"].traces[0].metrics["invalid_actions"] == 2

    convs = _conversations(model)
    first = {s: bodies[0]["messages"][-1]["content"] for s, bodies in convs.items()}
    assert "Tools:" in first["a"] and "Tools:" in first["b"]
    shown = {s: {t["name"] for t in json.loads(text.split("Tools:\n", 1)[1])} for s, text in first.items()}
    assert shown == {"a": {"add", "submit"}, "b": {"shout"}}
    assert '{"type": "integer"}' in first["a"]  # each tool with its argument schema
    replies = [str(body["messages"][-1]["content"]).split("\n")[0] for body in convs["a"][1:3]]
    assert replies[0] == "That reply is not a valid action: unknown tool 'shout'; tools: add, submit"
    assert replies[1] == "That reply is not a valid action: arguments for 'add': a: Input should be a valid integer"

    # The server listed each episode's tools right after its reset, then got typed calls.
    calls = _received()
    assert calls["a"] == [("list_tools", {}), ("add", {"a": 40, "b": 2}), ("submit", {"total": 42})]
    assert calls["b"] == [("list_tools", {}), ("shout", {"text": "hi"})]
    assert _typed(calls["a"][1][1]) == {"a": "int", "b": "int"}


def test_the_tools_follow_the_reset_as_tool_calls(union_pkg: str, scenario_server: str) -> None:
    a = Script(
        [
            ToolCalls((("shout", '{"text": "hi"}'),)),  # not one of a's tools
            ToolCalls((("add", '{"a": 40, "b": "2"}'),)),  # not an integer
            ToolCalls((("add", '{"a": 40, "b": 2}'),)),
            ToolCalls((("submit", '{"total": 42}'),)),
        ]
    )
    b = Script([ToolCalls((("shout", '{"text": ""}'),)), ToolCalls((("shout", '{"text": "hi"}'),))])
    model = ScriptedChatModel(Script(["{}"]), by_conversation={"Scenario a": a, "Scenario b": b})
    episodes = _by_scenario(_play(union_pkg, scenario_server, model, resets=RESETS, action_format="tools"))
    assert {s: outcome(e) for s, e in episodes.items()} == {"a": (True, "env_done", 1.0), "b": (True, "env_done", 1.0)}

    convs = _conversations(model)
    offered = {s: [[t["function"]["name"] for t in body["tools"]] for body in bodies] for s, bodies in convs.items()}
    assert offered == {"a": [["add", "submit"]] * 4, "b": [["shout"]] * 2}
    # The server's own input schema is each function's parameters.
    add = next(t["function"] for t in convs["a"][0]["tools"] if t["function"]["name"] == "add")
    assert add["parameters"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert add["description"] == "Return a + b."

    def result(bodies: list[dict[str, Any]], turn: int) -> str:
        return str([m for m in bodies[turn]["messages"] if m["role"] == "tool"][-1]["content"])

    assert result(convs["a"], 1).split("\n")[0] == (
        "That reply is not a valid action: unknown tool 'shout'; call one of: add, submit"
    )
    assert "arguments for 'add': b: Input should be a valid integer" in result(convs["a"], 2)
    assert "arguments for 'shout': text: String should have at least 1 character" in result(convs["b"], 1)
    calls = _received()
    assert calls["a"] == [("list_tools", {}), ("add", {"a": 40, "b": 2}), ("submit", {"total": 42})]
    assert calls["b"] == [("list_tools", {}), ("shout", {"text": "hi"})]


def test_a_union_server_that_lists_its_tools_has_them_read_at_pool_start(union_pkg: str, scenario_server: str) -> None:
    """The same union package against the fixture MCP env behind the union action: its
    FastMCP server lists the tools without a session, so no episode lists them."""
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    from openenvgen_runtime.fleet.pool import ServerPool

    def pool_start(url: str) -> tuple[Any, Any]:
        env = load_environment(resolve_env_config({"taskset": {"id": union_pkg, "base_url": url}}))
        taskset = env.taskset
        assert taskset.IS_MCP and taskset.TOOLS_PER_EPISODE

        async def start() -> Any:
            pool = ServerPool(taskset.config, mcp=True)
            await pool.start()
            try:
                (server,) = pool.servers
                return server, taskset.action_space(server)
            finally:
                await pool.stop()

        return asyncio.run(start())

    server, space = pool_start(scenario_server)
    assert server.tools is None and space.tools_per_episode and space.tool_arguments == {}
    with serve_app(make_static_app(), ready_path="/health") as static:
        server, space = pool_start(str(static))
        assert not space.tools_per_episode
        assert sorted(space.tool_arguments or {}) == ["add", "echo_message", "fail"]
        model = ScriptedChatModel(Script([json.dumps({"tool": "add", "arguments": {"a": 40, "b": 2}})]))
        with serve_app(model) as model_url:
            # Its observations are the MCP env's, not the package's: drift, not checked here.
            env = load_env(union_pkg, {"base_url": str(static), "on_drift": "ignore"})
            (episode,) = asyncio.run(run_all(env, str(model_url)))
    assert outcome(episode) == (True, "env_done", 1.0)
    assert '"echo_message"' in model.requests[0]["messages"][-1]["content"]


def test_the_typed_client_lists_the_tools_after_each_reset(union_pkg: str, scenario_server: str) -> None:
    import importlib

    from openenvgen_runtime import InvalidAction

    connect = importlib.import_module(union_pkg.replace("-", "_")).connect
    RECEIVED.clear()
    with connect(base_url=scenario_server) as env:
        assert env.tools == []  # known only once a reset says the scenario
        env.reset(scenario="a")
        assert [t["name"] for t in env.tools] == ["add", "submit"]
        assert env.call_tool("add", a=40, b=2).observation.result == 42
        with pytest.raises(InvalidAction, match="unknown tool 'shout'; tools: add, submit"):
            env.call_tool("shout", text="hi")
        env.reset(scenario="b")
        assert [t["name"] for t in env.tools] == ["shout"]
        assert env.call_tool("shout", text="hi").done
    assert _received() == {
        "a": [("list_tools", {}), ("add", {"a": 40, "b": 2})],
        "b": [("list_tools", {}), ("shout", {"text": "hi"})],
    }

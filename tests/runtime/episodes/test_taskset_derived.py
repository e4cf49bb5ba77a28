"""What AdapterTaskset and AdapterTask derive for a package: IS_MCP, snapshot defaults, custom.py."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, RootModel

from openenvgen_runtime import AdapterTaskset


class CallToolAction(BaseModel):
    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = {}


class ListToolsAction(BaseModel):
    type: Literal["list_tools"] = "list_tools"


class Move(BaseModel):
    x: int


def test_is_mcp_is_derived_from_the_action_model() -> None:
    class Mcp(AdapterTaskset):
        ACTION_MODEL = CallToolAction

    class Typed(AdapterTaskset):
        ACTION_MODEL = Move

    class Union(AdapterTaskset):
        ACTION_MODEL = RootModel[ListToolsAction | CallToolAction]

    class Told(AdapterTaskset):
        ACTION_MODEL = Move
        IS_MCP = True

    class Calls(AdapterTaskset):  # a union with CallToolAction but no ListToolsAction
        ACTION_MODEL = RootModel[Move | CallToolAction]

    # A union with openenv's CallToolAction among its members is MCP; with ListToolsAction
    # too, its tools may be listed per episode.
    assert (Mcp.IS_MCP, Typed.IS_MCP, Union.IS_MCP, Calls.IS_MCP, Told.IS_MCP) == (True, False, True, True, True)
    assert [t.TOOLS_PER_EPISODE for t in (Mcp, Typed, Union, Calls, Told)] == [False, False, True, False, False]


def test_agent_world_model_is_an_mcp_union_with_unlisted_tools() -> None:
    """Its snapshot's unlisted tools (verify, done) are offered with typed arguments beside the
    tools an episode lists; a listed tool gets a model built from its input schema."""
    import pytest
    from agent_world_model_openenv import AgentWorldModelTaskset

    from openenvgen_runtime import InvalidAction

    assert AgentWorldModelTaskset.IS_MCP and AgentWorldModelTaskset.TOOLS_PER_EPISODE
    listed = [{"name": "search", "description": "Search.", "input_schema": {"properties": {"q": {"type": "string"}}}}]
    space = AgentWorldModelTaskset.space_for({}, listed)
    assert sorted(space.tool_arguments or {}) == ["done", "search", "verify"]
    assert space.parse('{"tool": "verify", "arguments": {"verifier_mode": "code"}}') == {
        "type": "call_tool",
        "tool_name": "verify",
        "arguments": {"verifier_mode": "code"},
    }
    assert space.parse('{"tool": "search", "arguments": {"q": "x"}}')["arguments"] == {"q": "x"}
    with pytest.raises(InvalidAction, match="arguments for 'verify': verifier_mode: Input should be 'code' or 'sql'"):
        space.parse('{"tool": "verify", "arguments": {"verifier_mode": "llm"}}')
    with pytest.raises(InvalidAction, match="arguments for 'search': q: Input should be a valid string"):
        space.parse('{"tool": "search", "arguments": {"q": 1}}')


def test_generated_packages_take_their_defaults_from_the_snapshot() -> None:
    from echo_openenv import EchoTaskset
    from wordle_openenv import WordleTaskset

    assert EchoTaskset.IS_MCP and not WordleTaskset.IS_MCP
    assert WordleTaskset.SEED_VERDICT == "not_reproducible"
    assert WordleTaskset.ACTION_HINT.startswith("Send your guess")
    assert EchoTaskset.SEED_VERDICT == "deterministic"
    assert EchoTaskset.task_type().EXTENSION.source == ""  # no custom.py in the catalog package
    assert EchoTaskset.task_type().__name__ == "EchoTask"

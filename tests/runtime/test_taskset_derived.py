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

    assert (Mcp.IS_MCP, Typed.IS_MCP, Union.IS_MCP, Told.IS_MCP) == (True, False, False, True)


def test_generated_packages_take_their_defaults_from_the_snapshot() -> None:
    from echo_openenv import EchoTaskset
    from wordle_openenv import WordleTaskset

    assert EchoTaskset.IS_MCP and not WordleTaskset.IS_MCP
    assert WordleTaskset.SEED_VERDICT == "not_reproducible"
    assert WordleTaskset.ACTION_HINT.startswith("Send your guess")
    assert EchoTaskset.SEED_VERDICT == "deterministic"
    assert EchoTaskset.task_type().EXTENSION.source == ""  # no custom.py in the catalog package
    assert EchoTaskset.task_type().__name__ == "EchoTask"

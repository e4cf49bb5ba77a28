"""`openenvgen_schemas.interface`: the interface parts of a `/schema` reply, the tools of a
`tools/list` reply, and the strict JSON every reply is read as, whatever brought it (a live
server, a saved schema file, a catalog capture)."""

from __future__ import annotations

from typing import Any

import pytest

from openenvgen_schemas.interface import InterfaceError, NonStandardJSON, interface_schemas, strict_json, tools_of

ACTION = {"type": "object", "properties": {"guess": {"type": "string"}}}
OBSERVATION = {"type": "object", "properties": {}}


def test_strict_json_reads_json_and_refuses_nan_as_its_own_error() -> None:
    assert strict_json('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    assert strict_json(b'"\\u00e9"') == "é"
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(NonStandardJSON, match=constant):
            strict_json(f"[{constant}]")
    with pytest.raises(ValueError) as caught:  # any other bad JSON: json's own error
        strict_json("{")
    assert not isinstance(caught.value, NonStandardJSON)


def test_interface_schemas_keeps_the_parts_a_package_is_made_from() -> None:
    schema = {"action": ACTION, "observation": OBSERVATION, "state": {"type": "object"}}
    assert interface_schemas("f.json", schema) == {"action": ACTION, "observation": OBSERVATION}
    with_reset = {**schema, "reset_observation": OBSERVATION}
    assert list(interface_schemas("f.json", with_reset)) == ["action", "observation", "reset_observation"]


@pytest.mark.parametrize("schema", [{"observation": OBSERVATION}, {"action": ACTION}, [ACTION, OBSERVATION], "schema"])
def test_a_schema_without_action_and_observation_names_its_source(schema: Any) -> None:
    with pytest.raises(InterfaceError) as caught:
        interface_schemas("captures/echo/schema.json", schema)
    assert str(caught.value) == "captures/echo/schema.json: no action/observation schemas (is this an OpenEnv server?)"


def test_tools_of_a_reply_and_why_a_reply_has_none() -> None:
    tools = [{"name": "add", "inputSchema": {"type": "object"}}]
    assert tools_of("x", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}) == tools
    with pytest.raises(InterfaceError, match=r"^x: tools/list failed: Method not found$"):
        tools_of("x", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}})
    for reply in ({"result": {}}, {"result": {"tools": ["add"]}}, [tools], None):
        with pytest.raises(InterfaceError, match=r"^x: tools/list returned no tool list$"):
            tools_of("x", reply)

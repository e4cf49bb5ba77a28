"""The interface an OpenEnv server states in JSON, and the strict JSON it is read as.

A `/schema` reply's parts a package is generated from (`interface_schemas`) and an MCP
env's `tools/list` reply's tools (`tools_of`), however the reply arrived: over HTTP
(`openenvgen_servers.wire`), from a saved schema file or from a catalog capture. Every
JSON document from outside is read strictly (`strict_json`: no NaN or Infinity, which are
not JSON and would become bad Python). A document that is not an interface is one
`InterfaceError` whose message names where it came from.
"""

from __future__ import annotations

import json
from typing import Any

INTERFACE_PARTS = ("action", "observation", "reset_observation")
"""The parts of `/schema` a package is generated from (`state` never is)."""


class InterfaceError(ValueError):
    """A JSON document that holds no OpenEnv interface; the message names its source."""


class NonStandardJSON(ValueError):
    """NaN, Infinity or -Infinity where JSON has only finite numbers."""


def _reject_constant(name: str) -> Any:
    """`json.loads`'s hook for NaN and the infinities: refuse them."""
    raise NonStandardJSON(name)


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)
"""One decoder for every document: `json.loads` with a hook makes a new one per call."""


def strict_json(text: str | bytes) -> Any:
    """`json.loads` without NaN/Infinity."""
    if isinstance(text, str) and not text.startswith("\ufeff"):
        return _STRICT.decode(text)
    return json.loads(text, parse_constant=_reject_constant)  # bytes (their encoding found), a BOM refused


def interface_schemas(source: str, schema: Any) -> dict[str, Any]:
    """The parts of a `/schema` reply a package is generated from (reset_observation where served)."""
    if not isinstance(schema, dict) or not {"action", "observation"} <= schema.keys():
        raise InterfaceError(f"{source}: no action/observation schemas (is this an OpenEnv server?)")
    return {part: schema[part] for part in INTERFACE_PARTS if part in schema}


def tools_of(source: str, reply: Any) -> list[dict[str, Any]]:
    """The tool list of a `tools/list` reply (each tool a JSON object)."""
    result = reply.get("result") if isinstance(reply, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        error = reply.get("error") if isinstance(reply, dict) else None
        if isinstance(error, dict) and "message" in error:  # a JSON-RPC error says why
            raise InterfaceError(f"{source}: tools/list failed: {error['message']}")
        raise InterfaceError(f"{source}: tools/list returned no tool list")
    return tools

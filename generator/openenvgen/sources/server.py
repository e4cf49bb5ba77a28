"""Schema sources: a live OpenEnv server, a schema file, or the embedded catalog.

Each returns a `Capture` (what the server said, unchecked); `spec.build_spec` checks it.
Every network call has a timeout and a size bound: the server is somebody else's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:  # imported where used: generating from the catalog needs no HTTP client
    import httpx

from openenvgen_schemas.modeldiff import is_mcp_action

from openenvgen.errors import SchemaError, SourceError, UsageError
from openenvgen.spec import Capture

TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class _NonStandardJSON(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonStandardJSON(name)


def strict_json(text: str | bytes) -> Any:
    """json.loads without NaN/Infinity: they are not JSON, and would become bad Python."""
    return json.loads(text, parse_constant=_reject_constant)


def _get_json(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Any:
    import httpx

    timeout = client.timeout.read
    try:
        with client.stream(method, url, **kwargs) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise SourceError(f"{url}: response larger than {MAX_RESPONSE_BYTES} bytes")
            if response.status_code >= 400:
                raise SourceError(f"{url}: HTTP {response.status_code}")
    except httpx.TimeoutException:
        raise SourceError(f"{url}: timed out after {timeout:g}s") from None
    except httpx.HTTPError as e:
        raise SourceError(f"{url}: {type(e).__name__}: {e}") from None
    try:
        return strict_json(bytes(body))
    except _NonStandardJSON as e:
        raise SchemaError(f"{url}: not valid JSON ({e} is not a JSON number)") from None
    except ValueError:
        raise SourceError(f"{url}: not JSON (is this an OpenEnv server?)") from None
    except RecursionError:
        raise SourceError(f"{url}: JSON nested too deeply") from None


def _mcp_tools(client: httpx.Client, base_url: str) -> tuple[dict[str, Any], ...]:
    request = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
    reply = _get_json(client, "POST", f"{base_url}/mcp", json=request)
    tools = reply.get("result", {}).get("tools") if isinstance(reply, dict) else None
    if not isinstance(tools, list):
        raise SourceError(f"{base_url}/mcp: tools/list returned no tool list")
    return tuple(tools)


def from_server(base_url: str, timeout: float = TIMEOUT_S) -> Capture:
    """Read `/health`, `/metadata`, `/schema` and, for MCP envs, the tool list."""
    base_url = base_url.rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {base_url!r} must start with http:// or https://")
    import httpx

    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        health = _get_json(client, "GET", f"{base_url}/health")
        if not isinstance(health, dict) or "status" not in health:
            raise SourceError(f"{base_url}/health: no 'status' field (is this an OpenEnv server?)")
        schema = _get_json(client, "GET", f"{base_url}/schema")
        if not isinstance(schema, dict) or not {"action", "observation"} <= schema.keys():
            raise SourceError(f"{base_url}/schema: no action/observation schemas (is this an OpenEnv server?)")
        metadata = _get_json(client, "GET", f"{base_url}/metadata")
        tools = None
        if isinstance(schema["action"], dict) and is_mcp_action(schema["action"]):
            tools = _mcp_tools(client, base_url)
    return _capture(
        schema,
        metadata if isinstance(metadata, dict) else {},
        tools,
    )


def from_schema_file(path: Path) -> Capture:
    """A saved `/schema` reply, or a capture `{"schema": ..., "metadata": ..., "tools": ...}`."""
    try:
        data = strict_json(path.read_text("utf-8"))
    except _NonStandardJSON as e:
        raise SchemaError(f"--schema-file {path}: not valid JSON ({e} is not a JSON number)") from None
    except OSError as e:
        raise UsageError(f"--schema-file {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"--schema-file {path}: not JSON ({e})") from None
    except RecursionError:
        raise SchemaError(f"--schema-file {path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError(f"--schema-file {path}: expected a JSON object")
    if "schema" in data:
        return _capture(data["schema"], data.get("metadata") or {}, data.get("tools"))
    return _capture(data, {}, None)


def _capture(schema: Any, metadata: Any, tools: Any) -> Capture:
    if not isinstance(schema, dict):
        raise SourceError("schema is not a JSON object")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise SourceError("tool list is not a list")
    kept = {k: schema.get(k) for k in ("action", "observation")}
    if "reset_observation" in schema:  # served by openenv >= 0.10; `state` is never generated from
        kept["reset_observation"] = schema["reset_observation"]
    return Capture(
        schema=kept,
        metadata=metadata if isinstance(metadata, dict) else {},
        tools=None if tools is None else tuple(tools),
    )

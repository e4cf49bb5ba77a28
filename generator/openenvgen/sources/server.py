"""A live OpenEnv server as a schema source: `openenv-gen NAME --base-url URL`.

Reads `/health`, `/schema`, `/metadata` and, for an MCP env, the `tools/list` of `/mcp`,
with a gated server's headers and CA bundle (`openenvgen_servers.access.Credentials`),
through `openenvgen_servers.wire` (a timeout and a size bound on every reply, strict JSON:
the server is somebody else's), and returns what it said as a `ServerInterface`, unchecked;
`spec.build_spec` checks it.
"""

from __future__ import annotations

from typing import Any

from openenvgen.errors import GenError, SchemaError, SourceError, UsageError
from openenvgen.spec import ServerInterface
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_servers.access import NO_CREDENTIALS, AccessError, Credentials
from openenvgen_servers.wire import WireError, get_json, read_interface

TIMEOUT_S = 10.0
"""Seconds each request to the server may take (`--timeout`)."""


def from_server(
    base_url: str, timeout: float = TIMEOUT_S, credentials: Credentials = NO_CREDENTIALS
) -> ServerInterface:
    """Read `/health`, `/schema`, `/metadata` and, for MCP envs, the tool list, each request
    with `credentials` (a gated server's `--header`s, `--ca-bundle`)."""
    base_url = base_url.rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {base_url!r} must start with http:// or https://")
    import httpx  # here: generating from the catalog or a schema file needs no HTTP client

    try:
        options = credentials.client_options()
    except AccessError as e:
        raise UsageError(str(e)) from None
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, **options) as client:
            health = get_json(client, "GET", f"{base_url}/health")
            if not isinstance(health, dict) or "status" not in health:
                raise SourceError(f"{base_url}/health: no 'status' field (is this an OpenEnv server?)")
            interface = read_interface(client, base_url, mcp=_is_mcp)
            metadata = get_json(client, "GET", f"{base_url}/metadata")
    except WireError as e:
        raise _as_gen_error(e, credentials) from None
    return ServerInterface(
        schema_=interface.schema,
        metadata=metadata if isinstance(metadata, dict) else {},
        tools=None if interface.tools is None else tuple(interface.tools),
    )


def _is_mcp(action: Any) -> bool:
    return isinstance(action, dict) and is_mcp_action(action)


def _as_gen_error(error: WireError, credentials: Credentials) -> GenError:
    """NaN or Infinity in a reply is bad data (SchemaError, 65); anything else is a source
    that failed (SourceError, 69), a 401/403 saying which option gives the header."""
    if error.problem == "non_standard_json":
        return SchemaError(str(error))
    if error.problem == "unauthorized":
        return SourceError(f"{error}: {credentials.refused()}")
    return SourceError(str(error))

"""One env server as the pool holds it: where it is, what it serves, how loaded and healthy it is.

A server is either given (a `base_url` of the run's fleet, checked by `fleet_urls`, reached
with the headers and TLS trust of `fleet_access`) or
launched (its `provider` owns the process, container or Swarm service). Its `/schema` and,
for MCP envs, its tool list are read once (`describe`), through the wire format shared
with the generator. An MCP union (a union action with openenv's `CallToolAction` among its
members) has its tools read the same way where the server lists them without a session;
where it cannot (agent_world_model's), its tools follow the task and each episode lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.tokens import for_people
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.provider import Provider
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_servers.access import HEADER_OPTION, AccessError, headers_from_environment, tls_context
from openenvgen_servers.wire import WireError, read_interface_async, read_tools_async

if TYPE_CHECKING:  # annotations only: `observations` and `config` import verifiers, which a server does not need
    from openenvgen_runtime.config import AdapterConfig
    from openenvgen_runtime.turn.actions import ActionSpace
    from openenvgen_runtime.turn.observations import ObservationView


@dataclass(eq=False)
class Server:
    url: str
    provider: Provider | None = None
    """The provider that owns the process/container/service (None for a given base_url);
    a swarm's replicas share their service's."""
    active: int = 0
    """Sessions open on it now."""
    capacity: int | None = None
    """Most concurrent sessions; None until the server refuses one."""
    schema: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None
    action_space: ActionSpace | None = None
    """The taskset's ActionSpace for this server's schema, built on first use."""
    listed_spaces: dict[str, ActionSpace] = field(default_factory=dict)
    """MCP tools that follow the task: the ActionSpace for each tool list its episodes
    listed, by the list's JSON."""
    observation_view: ObservationView | None = None
    """The taskset's ObservationView for this server (its assets), built on first use."""
    down: str | None = None
    """Why the server gets no new episodes; None while it is healthy."""
    access: ServerAccess | None = field(default=None, repr=False)
    """What requests to it carry (headers, TLS trust): its pool's `ServerAccess`."""

    @property
    def shown(self) -> str:
        """Its URL as log lines and messages name it: a relay's token written `…`."""
        return for_people(self.url)

    @property
    def has_room(self) -> bool:
        """Healthy, with a session slot free as far as is known."""
        return self.down is None and (self.capacity is None or self.active < self.capacity)


def fleet_access(config: AdapterConfig) -> ServerAccess:
    """What requests to a `base_url` fleet carry: `base_url_headers` (values from this
    process's environment) and `ca_bundle`'s trust; one-line LaunchErrors for a variable
    not set or a CA bundle that cannot be read."""
    try:
        access = ServerAccess(tls_context(config.ca_bundle))
        headers = headers_from_environment(config.base_url_headers)
    except AccessError as e:
        raise LaunchError(str(e)) from None
    for url in fleet_urls(config.base_urls):
        access.admit(url, headers)
    return access


def fleet_urls(urls: list[str]) -> list[str]:
    """The given fleet, checked: each an http(s) URL with a host, none twice."""
    seen: set[str] = set()
    for url in urls:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
            raise LaunchError(f"base_url: {url!r} is not an http(s) URL of a server (e.g. http://10.0.0.5:8000)")
        if url in seen:
            raise LaunchError(f"base_url: {url} is listed twice; each server of a fleet once")
        seen.add(url)
    return urls


async def describe(http: httpx.AsyncClient, server: Server, *, mcp: bool) -> None:
    """Read the server's `/schema` (and tool list, for an MCP env) onto it; a one-line
    LaunchError when it cannot be read. An MCP env whose action is not `CallToolAction`
    itself (a union with it) keeps `tools` None when the server lists none without a session."""
    try:
        interface = await read_interface_async(http, server.url, mcp=lambda action: mcp and is_mcp_action(action))
    except WireError as e:
        hint = f"; set base_url_headers (play, doctor: {HEADER_OPTION})" if e.problem == "unauthorized" else ""
        raise LaunchError(f"{server.url}: cannot read the env's /schema: {e}{hint}") from None
    tools = interface.tools
    if mcp and tools is None:
        tools = await _tools_without_session(http, server.url)
    server.schema, server.tools = interface.schema, tools


async def _tools_without_session(http: httpx.AsyncClient, url: str) -> list[dict[str, Any]] | None:
    """`POST /mcp tools/list`, or None where the server answers it with no tool list (an env
    with no MCP server of its own, whose tools come from its session)."""
    try:
        return await read_tools_async(http, url)
    except WireError:
        return None

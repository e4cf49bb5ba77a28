"""What an OpenEnv server says over HTTP, read one way by the generator and the runtime.

`/health`, `/schema` and, for MCP envs, `tools/list` on `/mcp`: the generator reads them to
make a package (`sources`), the catalog's capture to record an env, the runtime's pool to
check a server against its package. Each reply is read with a size bound and strict JSON
(`openenvgen_schemas.interface`), and every failure is one `WireError` whose message names
the URL; callers turn it into their own error type. Sync (`httpx.Client`) and async
(`httpx.AsyncClient`) forms share the request, the bound and the parsing; only the I/O
differs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from openenvgen_schemas.interface import InterfaceError, NonStandardJSON, interface_schemas, strict_json, tools_of

if TYPE_CHECKING:
    import httpx
# httpx (and asyncio) are imported by the functions that use them: httpx alone costs about
# 0.1 s to import, and a generator run from the catalog or a schema file needs no HTTP.

MAX_REPLY_BYTES = 8 * 1024 * 1024
"""A reply larger than this is refused: the server is somebody else's."""
TOOLS_LIST = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
"""The MCP JSON-RPC request that lists an env's tools."""
HEALTH_TIMEOUT = 5.0
"""Seconds one `/health` probe may take in all (connecting, then the status line and headers);
a loaded server answers well within it."""
CONNECTED = ("connection.connect_tcp.complete", "connection.connect_unix_socket.complete")
"""httpcore's trace events for a new connection, whose `return_value` is its network stream."""
CLOSE = {"Connection": "close"}

Problem = Literal[
    "http", "unauthorized", "too_large", "timeout", "transport", "not_json", "non_standard_json", "too_deep", "shape"
]


class WireError(Exception):
    """A server's reply that cannot be used; `problem` says which kind, the message says where."""

    def __init__(self, message: str, problem: Problem) -> None:
        super().__init__(message)
        self.problem = problem


def parse_reply(url: str, body: bytes) -> Any:
    """A reply body as strict JSON, or a WireError naming what is wrong with it."""
    try:
        return strict_json(body)
    except NonStandardJSON as e:
        raise WireError(f"{url}: not valid JSON ({e} is not a JSON number)", "non_standard_json") from None
    except RecursionError:
        raise WireError(f"{url}: JSON nested too deeply", "too_deep") from None
    except ValueError:
        raise WireError(f"{url}: not JSON (is this an OpenEnv server?)", "not_json") from None


def _transport_error(url: str, error: httpx.HTTPError, timeout: Any) -> WireError:
    """`timeout` is the request's (`timeout=` if given, else the client's): a number, None or httpx.Timeout."""
    import httpx

    if isinstance(error, httpx.TimeoutException):
        seconds = timeout.read if isinstance(timeout, httpx.Timeout) else timeout
        return WireError(f"{url}: timed out after {seconds or 0:g}s", "timeout")
    return WireError(f"{url}: {type(error).__name__}: {error}", "transport")


def _check_status(url: str, status: int) -> None:
    """Refuse an HTTP error status; 401 and 403 as "unauthorized" (a gated server, a
    credential missing or refused), for callers to say which option gives one."""
    if status in (401, 403):
        raise WireError(f"{url}: HTTP {status}, a header with a credential is missing or refused", "unauthorized")
    if status >= 400:
        raise WireError(f"{url}: HTTP {status}", "http")


def _too_large(url: str) -> WireError:
    """The error for a reply over `MAX_REPLY_BYTES`."""
    return WireError(f"{url}: response larger than {MAX_REPLY_BYTES} bytes", "too_large")


def get_json(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Any:
    """One request's JSON reply, read with the size bound."""
    import httpx

    try:
        with client.stream(method, url, **kwargs) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_REPLY_BYTES:
                    raise _too_large(url)
            _check_status(url, response.status_code)
    except httpx.HTTPError as e:
        raise _transport_error(url, e, kwargs.get("timeout", client.timeout)) from None
    return parse_reply(url, bytes(body))


async def get_json_async(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    """`get_json` on an async client."""
    import httpx

    try:
        async with client.stream(method, url, **kwargs) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_REPLY_BYTES:
                    raise _too_large(url)
            _check_status(url, response.status_code)
    except httpx.HTTPError as e:
        raise _transport_error(url, e, kwargs.get("timeout", client.timeout)) from None
    return parse_reply(url, bytes(body))


def _shape_error(error: InterfaceError) -> WireError:
    """A reply that is JSON but no interface."""
    return WireError(str(error), "shape")


@dataclass(frozen=True)
class Interface:
    """What a server serves: its `/schema` parts and, for an MCP env, its tools."""

    schema: dict[str, Any]
    tools: list[dict[str, Any]] | None


def read_tools(client: httpx.Client, base_url: str) -> list[dict[str, Any]]:
    """An MCP env's tools: the `tools/list` of its `/mcp`."""
    url = f"{base_url}/mcp"
    try:
        return tools_of(url, get_json(client, "POST", url, json=TOOLS_LIST))
    except InterfaceError as e:
        raise _shape_error(e) from None


async def read_tools_async(client: httpx.AsyncClient, base_url: str) -> list[dict[str, Any]]:
    """`read_tools` on an async client."""
    url = f"{base_url}/mcp"
    try:
        return tools_of(url, await get_json_async(client, "POST", url, json=TOOLS_LIST))
    except InterfaceError as e:
        raise _shape_error(e) from None


def read_interface(client: httpx.Client, base_url: str, *, mcp: Callable[[dict[str, Any]], bool]) -> Interface:
    """`/schema`, and the tool list when `mcp(action schema)` says the env is an MCP env."""
    url = f"{base_url}/schema"
    try:
        schema = interface_schemas(url, get_json(client, "GET", url))
    except InterfaceError as e:
        raise _shape_error(e) from None
    # An action schema that is no JSON object is no MCP env's; the spec check refuses it later.
    tools = read_tools(client, base_url) if isinstance(schema["action"], dict) and mcp(schema["action"]) else None
    return Interface(schema, tools)


async def read_interface_async(
    client: httpx.AsyncClient, base_url: str, *, mcp: Callable[[dict[str, Any]], bool]
) -> Interface:
    """`read_interface` on an async client."""
    url = f"{base_url}/schema"
    try:
        schema = interface_schemas(url, await get_json_async(client, "GET", url))
    except InterfaceError as e:
        raise _shape_error(e) from None
    tools = None
    if isinstance(schema["action"], dict) and mcp(schema["action"]):
        tools = await read_tools_async(client, base_url)
    return Interface(schema, tools)


# --- health --------------------------------------------------------------------------------


def _health_problem(response: httpx.Response | None, error: httpx.HTTPError | None, timeout: float) -> str | None:
    """Why a `/health` request's response or error means not healthy; None for a 200."""
    import httpx

    if isinstance(error, httpx.ConnectError):
        return "connection refused"
    if isinstance(error, httpx.TimeoutException):
        return f"/health did not answer within {timeout:g}s"
    if error is not None:
        return f"{type(error).__name__}: {error}".rstrip(": ")
    assert response is not None
    return None if response.status_code == 200 else f"/health answered HTTP {response.status_code}"


def health(client: httpx.Client, url: str, *, timeout: float = HEALTH_TIMEOUT) -> str | None:
    """None when `url` answers `/health` with 200; otherwise why not, in a few words. The whole
    probe, connecting to the status line and headers, takes at most `timeout` seconds: a server
    that drips its reply a byte at a time is cut off there (httpx's timeouts are per read)."""
    import socket
    import threading

    import httpx

    streams: list[Any] = []
    cut = threading.Event()

    def trace(event: str, info: dict[str, Any]) -> None:
        # httpcore's trace extension: the new connection's network stream, to shut at the deadline.
        if event in CONNECTED:
            streams.append(info["return_value"])

    def deadline() -> None:
        cut.set()
        for stream in streams:
            with contextlib.suppress(OSError, AttributeError):
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, deadline)
    timer.start()
    try:
        # `Connection: close`: a probe's connection is its own, opened (and traced) by it.
        # Streamed and never read: only the status counts, however large the body.
        with client.stream(
            "GET", f"{url}/health", timeout=timeout, headers=CLOSE, extensions={"trace": trace}
        ) as response:
            return _health_problem(response, None, timeout)
    except httpx.HTTPError as e:
        return _health_problem(None, httpx.ReadTimeout("deadline") if cut.is_set() else e, timeout)
    finally:
        timer.cancel()


async def health_async(client: httpx.AsyncClient, url: str, *, timeout: float = HEALTH_TIMEOUT) -> str | None:
    """`health` on an async client, with the same total deadline."""
    import asyncio

    import httpx

    try:
        async with asyncio.timeout(timeout), client.stream("GET", f"{url}/health", timeout=timeout) as response:
            return _health_problem(response, None, timeout)
    except TimeoutError:
        return _health_problem(None, httpx.ReadTimeout("deadline"), timeout)
    except httpx.HTTPError as e:
        return _health_problem(None, e, timeout)


class NotHealthy(Exception):
    """A server that exited, or did not answer `/health` in time, while starting."""

    def __init__(self, reason: str, exit_code: int | None = None) -> None:
        super().__init__(reason)
        self.exit_code = exit_code


def wait_healthy(
    url: str,
    timeout: float,
    *,
    exited: Callable[[], int | None] = lambda: None,
    interval: float = 0.5,
) -> None:
    """Return once `url` answers `/health` with 200; NotHealthy if `exited()` gives an exit code or time runs out."""
    import httpx

    deadline = time.monotonic() + timeout
    with httpx.Client() as client:
        while True:
            code = exited()
            if code is not None:
                raise NotHealthy(f"server exited with code {code} while starting", code)
            problem = health(client, url, timeout=min(HEALTH_TIMEOUT, max(0.1, deadline - time.monotonic())))
            if problem is None:
                return
            if time.monotonic() > deadline:
                raise NotHealthy(f"server not ready after {timeout:g}s at {url} ({problem})")
            time.sleep(interval)


async def wait_healthy_async(
    client: httpx.AsyncClient,
    url: str,
    timeout: float,
    *,
    exited: Callable[[], int | None] = lambda: None,
    interval: float = 0.2,
) -> None:
    """`wait_healthy` on an async client; `exited` runs in a thread (it may ask Docker)."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        code = await asyncio.to_thread(exited)
        if code is not None:
            raise NotHealthy(f"server exited with code {code} while starting", code)
        problem = await health_async(client, url, timeout=min(HEALTH_TIMEOUT, max(0.1, deadline - time.monotonic())))
        if problem is None:
            return
        if time.monotonic() > deadline:
            raise NotHealthy(f"server not ready after {timeout:g}s at {url} ({problem})")
        await asyncio.sleep(interval)

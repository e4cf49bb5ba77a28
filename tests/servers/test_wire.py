"""`openenvgen_servers.wire` against a real server on loopback: what it refuses, and how each failure reads.

One scripted Starlette app serves every test: each test says what each path answers
(`script.replies`), and the app records the requests it got (`script.seen`). Each reading
helper is run in its sync and its async form, which must behave the same.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_servers import wire
from openenvgen_servers.ports import free_port
from openenvgen_servers.processes import stop_process_group
from openenvgen_testsupport.servers import dripping_peer, serve_app

Reply = Callable[[Request], Awaitable[Response]]
FORMS = ("sync", "async")


@dataclass
class Script:
    replies: dict[str, Reply] = field(default_factory=dict)
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)


def scripted_app(script: Script) -> Starlette:
    async def endpoint(request: Request) -> Response:
        script.seen.append((request.method, request.url.path, await request.body()))
        reply = script.replies.get(request.url.path)
        return await reply(request) if reply is not None else Response("not here", status_code=404)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST"])])


def body(content: str | bytes, status: int = 200) -> Reply:
    async def reply(_request: Request) -> Response:
        return Response(content, status_code=status, media_type="application/json")

    return reply


def data(value: Any, status: int = 200) -> Reply:
    async def reply(_request: Request) -> Response:
        return JSONResponse(value, status_code=status)

    return reply


def slow(seconds: float) -> Reply:
    async def reply(_request: Request) -> Response:
        await asyncio.sleep(seconds)
        return JSONResponse({"status": "healthy"})

    return reply


@dataclass
class Stream:
    """A JSON-looking reply that goes on until the client leaves (or `limit` bytes are sent)."""

    status: int = 200
    limit: int = 256 * 1024 * 1024
    sent: int = 0

    async def __call__(self, request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            chunk = b" " * 65536
            yield b'"'
            # uvicorn drops what is sent after the client left, so ask: `sent` is what it could read.
            while self.sent < self.limit and not await request.is_disconnected():
                self.sent += len(chunk)
                yield chunk

        return StreamingResponse(chunks(), status_code=self.status, media_type="application/json")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    with serve_app(scripted_app(script)) as url:
        yield str(url), script


@pytest.fixture
def served(server: tuple[str, Script]) -> tuple[str, Script]:
    url, script = server
    script.replies.clear()
    script.seen.clear()
    return url, script


def get(form: str, method: str, url: str, *, client_timeout: float = 10.0, **kwargs: Any) -> Any:
    """`get_json` or `get_json_async`, with a fresh client."""
    if form == "sync":
        with httpx.Client(timeout=client_timeout) as client:
            return wire.get_json(client, method, url, **kwargs)

    async def run() -> Any:
        async with httpx.AsyncClient(timeout=client_timeout) as client:
            return await wire.get_json_async(client, method, url, **kwargs)

    return asyncio.run(run())


def refused(form: str, url: str, **kwargs: Any) -> wire.WireError:
    with pytest.raises(wire.WireError) as caught:
        get(form, "GET", url, **kwargs)
    return caught.value


# --- one reply ---------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a_reply_of_exactly_the_bound_is_read_one_byte_more_is_refused(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    text = "x" * (wire.MAX_REPLY_BYTES - 2)
    script.replies["/fits"] = body(json.dumps(text))
    script.replies["/over"] = body(json.dumps(text + "x"))
    assert get(form, "GET", f"{url}/fits") == text
    error = refused(form, f"{url}/over")
    assert error.problem == "too_large"
    assert str(error) == f"{url}/over: response larger than {wire.MAX_REPLY_BYTES} bytes"


@pytest.mark.parametrize("form", FORMS)
def test_an_endless_reply_is_cut_off_at_the_bound(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    stream = Stream()
    script.replies["/endless"] = stream
    started = time.monotonic()
    assert refused(form, f"{url}/endless").problem == "too_large"
    assert time.monotonic() - started < 30
    assert stream.sent < stream.limit, "the whole capped stream was read: the bound did not stop it"


@pytest.mark.parametrize("form", FORMS)
def test_the_bound_holds_for_an_error_reply_too(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/endless-500"] = Stream(status=500)
    assert refused(form, f"{url}/endless-500").problem == "too_large"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("form", FORMS)
def test_nan_and_infinity_are_refused(form: str, constant: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/nan"] = body(f'{{"reward": {constant}}}')
    error = refused(form, f"{url}/nan")
    assert error.problem == "non_standard_json"
    assert str(error) == f"{url}/nan: not valid JSON ({constant} is not a JSON number)"


@pytest.mark.parametrize(
    "content",
    [b"<html>Not an OpenEnv server</html>", b"", b'{"a": 1', b"\xff\xfe\xfa"],
    ids=["html", "empty", "cut", "bytes"],
)
@pytest.mark.parametrize("form", FORMS)
def test_what_is_not_json_is_refused(form: str, content: bytes, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/html"] = body(content)
    error = refused(form, f"{url}/html")
    assert error.problem == "not_json"
    assert str(error) == f"{url}/html: not JSON (is this an OpenEnv server?)"


@pytest.mark.parametrize("form", FORMS)
def test_json_nested_too_deeply_is_refused(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/deep"] = body("[" * 100_000 + "]" * 100_000)
    error = refused(form, f"{url}/deep")
    assert (error.problem, str(error)) == ("too_deep", f"{url}/deep: JSON nested too deeply")


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("form", FORMS)
def test_a_refused_credential_is_its_own_problem(form: str, status: int, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/gated"] = data({"detail": "Not authenticated"}, status=status)
    error = refused(form, f"{url}/gated")
    assert (error.problem, str(error)) == (
        "unauthorized",
        f"{url}/gated: HTTP {status}, a header with a credential is missing or refused",
    )


@pytest.mark.parametrize("status", [404, 500, 503])
@pytest.mark.parametrize("form", FORMS)
def test_an_http_error_is_refused_with_its_status(form: str, status: int, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/error"] = data({"detail": "no"}, status=status)
    error = refused(form, f"{url}/error")
    assert (error.problem, str(error)) == ("http", f"{url}/error: HTTP {status}")


@pytest.mark.parametrize("form", FORMS)
def test_a_slow_reply_times_out_after_the_clients_timeout(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/slow"] = slow(3.0)
    started = time.monotonic()
    error = refused(form, f"{url}/slow", client_timeout=0.3)
    assert time.monotonic() - started < 2.5
    assert (error.problem, str(error)) == ("timeout", f"{url}/slow: timed out after 0.3s")


@pytest.mark.parametrize("form", FORMS)
def test_a_timeout_given_with_the_request_is_the_one_reported(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/slow"] = slow(3.0)
    error = refused(form, f"{url}/slow", client_timeout=30.0, timeout=0.2)
    assert (error.problem, str(error)) == ("timeout", f"{url}/slow: timed out after 0.2s")


@pytest.mark.parametrize("form", FORMS)
def test_no_server_is_a_transport_error(form: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/schema"
    error = refused(form, url)
    assert error.problem == "transport"
    assert str(error).startswith(f"{url}: ConnectError")


# --- /schema and tools/list ---------------------------------------------------------------------

OBSERVATION = {"type": "object", "properties": {"board": {"type": "string"}}}
TYPED_ACTION = {"type": "object", "properties": {"move": {"type": "string"}}, "required": ["move"]}
MCP_ACTION = {"type": "object", "properties": {"type": {"const": "call_tool"}, "tool_name": {"type": "string"}}}
TOOLS = [{"name": "add", "description": "Add.", "inputSchema": {"type": "object", "properties": {}}}]


def read(form: str, url: str, mcp: Callable[[dict[str, Any]], bool] = is_mcp_action) -> wire.Interface:
    if form == "sync":
        with httpx.Client(timeout=10.0) as client:
            return wire.read_interface(client, url, mcp=mcp)

    async def run() -> wire.Interface:
        async with httpx.AsyncClient(timeout=10.0) as client:
            return await wire.read_interface_async(client, url, mcp=mcp)

    return asyncio.run(run())


@pytest.mark.parametrize("form", FORMS)
def test_the_interface_parts_are_kept_and_state_is_not(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    reset = {"type": "object", "properties": {"prompt": {"type": "string"}}}
    parts = {"action": TYPED_ACTION, "observation": OBSERVATION, "reset_observation": reset}
    schema = {**parts, "state": {"type": "object"}}
    script.replies["/schema"] = data(schema)
    interface = read(form, url)
    assert interface == wire.Interface(parts, None)
    assert [(method, path) for method, path, _ in script.seen] == [("GET", "/schema")]


@pytest.mark.parametrize("form", FORMS)
def test_reset_observation_is_there_only_where_served(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/schema"] = data({"action": TYPED_ACTION, "observation": OBSERVATION, "state": {}})
    assert read(form, url).schema == {"action": TYPED_ACTION, "observation": OBSERVATION}


@pytest.mark.parametrize("form", FORMS)
def test_an_mcp_env_has_its_tools_listed(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/schema"] = data({"action": MCP_ACTION, "observation": OBSERVATION})
    script.replies["/mcp"] = data({"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}})
    interface = read(form, url)
    assert interface.tools == TOOLS
    ((method, path, request),) = [seen for seen in script.seen if seen[1] == "/mcp"]
    assert (method, json.loads(request)) == ("POST", wire.TOOLS_LIST)


@pytest.mark.parametrize("form", FORMS)
def test_the_callers_mcp_test_decides_and_a_non_object_action_is_never_put_to_it(
    form: str, served: tuple[str, Script]
) -> None:
    url, script = served
    script.replies["/mcp"] = data({"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}})
    script.replies["/schema"] = data({"action": TYPED_ACTION, "observation": OBSERVATION})
    assert read(form, url, mcp=lambda _action: True).tools == TOOLS  # the runtime knows its package's kind
    script.replies["/schema"] = data({"action": "not a schema", "observation": OBSERVATION})
    assert read(form, url, mcp=lambda _action: pytest.fail("asked about a non-object action")).tools is None


@pytest.mark.parametrize(
    "schema", [{"observation": OBSERVATION}, {"action": TYPED_ACTION}, [TYPED_ACTION, OBSERVATION], "schema"]
)
@pytest.mark.parametrize("form", FORMS)
def test_a_schema_without_action_and_observation_is_refused(form: str, schema: Any, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/schema"] = data(schema)
    with pytest.raises(wire.WireError) as caught:
        read(form, url)
    assert caught.value.problem == "shape"
    assert str(caught.value) == f"{url}/schema: no action/observation schemas (is this an OpenEnv server?)"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "tools/list returned no tool list"),
        ({"jsonrpc": "2.0", "id": 1, "result": None}, "tools/list returned no tool list"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": {"add": {}}}}, "tools/list returned no tool list"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": ["add"]}}, "tools/list returned no tool list"),
        ([TOOLS], "tools/list returned no tool list"),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}},
            "tools/list failed: Method not found",
        ),
    ],
    ids=["no-tools", "null-result", "tools-not-a-list", "tool-not-an-object", "not-an-object", "json-rpc-error"],
)
@pytest.mark.parametrize("form", FORMS)
def test_a_tools_list_reply_without_a_tool_list_is_refused(
    form: str, reply: Any, message: str, served: tuple[str, Script]
) -> None:
    url, script = served
    script.replies["/schema"] = data({"action": MCP_ACTION, "observation": OBSERVATION})
    script.replies["/mcp"] = data(reply)
    with pytest.raises(wire.WireError) as caught:
        read(form, url)
    assert (caught.value.problem, str(caught.value)) == ("shape", f"{url}/mcp: {message}")


@pytest.mark.parametrize("form", FORMS)
def test_a_failing_tools_list_is_refused_like_any_reply(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/schema"] = data({"action": MCP_ACTION, "observation": OBSERVATION})
    script.replies["/mcp"] = body("nope", status=500)
    with pytest.raises(wire.WireError) as caught:
        read(form, url)
    assert (caught.value.problem, str(caught.value)) == ("http", f"{url}/mcp: HTTP 500")


# --- health ------------------------------------------------------------------------------------


def health(form: str, url: str, timeout: float = wire.HEALTH_TIMEOUT) -> str | None:
    if form == "sync":
        with httpx.Client() as client:
            return wire.health(client, url, timeout=timeout)

    async def run() -> str | None:
        async with httpx.AsyncClient() as client:
            return await wire.health_async(client, url, timeout=timeout)

    return asyncio.run(run())


@pytest.mark.parametrize("form", FORMS)
def test_health_says_why_a_server_is_not_healthy(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/health"] = data({"status": "healthy"})
    assert health(form, url) is None
    script.replies["/health"] = data({"status": "starting"}, status=503)
    assert health(form, url) == "/health answered HTTP 503"
    script.replies["/health"] = slow(3.0)
    assert health(form, url, timeout=0.2) == "/health did not answer within 0.2s"
    assert health(form, f"http://127.0.0.1:{free_port()}") == "connection refused"


@pytest.mark.parametrize("form", FORMS)
def test_health_reads_only_the_status_not_an_endless_body(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    stream = Stream()
    script.replies["/health"] = stream
    assert health(form, url) is None
    assert stream.sent < stream.limit


def flaky_health(failures: int) -> Reply:
    """`/health` answering 503 `failures` times, then 200."""
    calls = 0

    async def reply(_request: Request) -> Response:
        nonlocal calls
        calls += 1
        if calls > failures:
            return JSONResponse({"status": "healthy"})
        return JSONResponse({"status": "starting"}, status_code=503)

    return reply


def wait(form: str, url: str, timeout: float, exited: Callable[[], int | None] = lambda: None) -> None:
    """`wait_healthy` or `wait_healthy_async`, polling every 0.05 s."""
    if form == "sync":
        wire.wait_healthy(url, timeout, exited=exited, interval=0.05)
        return

    async def run() -> None:
        async with httpx.AsyncClient() as client:
            await wire.wait_healthy_async(client, url, timeout, exited=exited, interval=0.05)

    asyncio.run(run())


@pytest.mark.parametrize("form", FORMS)
def test_wait_healthy_returns_once_health_answers_200(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/health"] = flaky_health(failures=3)
    wait(form, url, timeout=20.0)
    assert [path for _, path, _ in script.seen] == ["/health"] * 4


@pytest.mark.parametrize("form", FORMS)
def test_wait_healthy_gives_up_after_its_timeout_saying_why(form: str, served: tuple[str, Script]) -> None:
    url, script = served
    script.replies["/health"] = data({"status": "starting"}, status=503)
    started = time.monotonic()
    with pytest.raises(wire.NotHealthy) as caught:
        wait(form, url, timeout=0.5)
    assert 0.5 <= time.monotonic() - started < 5
    assert caught.value.exit_code is None
    assert str(caught.value) == f"server not ready after 0.5s at {url} (/health answered HTTP 503)"


@pytest.mark.parametrize("form", FORMS)
def test_wait_healthy_stops_at_once_when_the_server_exits(form: str) -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(timeout=30)
    started = time.monotonic()
    with pytest.raises(wire.NotHealthy) as caught:
        wait(form, f"http://127.0.0.1:{free_port()}", timeout=60.0, exited=process.poll)
    assert time.monotonic() - started < 5
    assert caught.value.exit_code == 3
    assert str(caught.value) == "server exited with code 3 while starting"


# A server that takes a moment to start, in its own process group (as env servers are run).
SLOW_STARTING_SERVER = textwrap.dedent(
    """
    import http.server, sys, time

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b'{"status": "healthy"}')

        def log_message(self, *args):
            pass

    time.sleep(0.5)
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
    """
)


@pytest.mark.parametrize("form", FORMS)
def test_wait_healthy_waits_for_a_real_server_process_to_come_up(form: str) -> None:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", SLOW_STARTING_SERVER, str(port)], start_new_session=True)
    try:
        wait(form, f"http://127.0.0.1:{port}", timeout=60.0, exited=process.poll)
        assert process.poll() is None
    finally:
        stop_process_group(process, grace=5.0)
    assert process.returncode is not None


@pytest.mark.parametrize("form", FORMS)
def test_health_has_a_total_deadline_against_a_peer_that_drips_its_headers(form: str) -> None:
    # A byte every 0.1 s answers each read within httpx's per-read timeout; only the
    # probe's total deadline ends it.
    with dripping_peer() as url:
        started = time.monotonic()
        assert health(form, url, timeout=0.5) == "/health did not answer within 0.5s"
        assert time.monotonic() - started < 2.0

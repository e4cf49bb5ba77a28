"""The session relay on real sockets: only requests under its URL's token reach the server,
with the token off the path, under the server's prefix and with the server's headers; a
request without it, or whose path climbs out (`..`, raw or percent-encoded), is refused
before anything is opened upstream; a client that drips its request head and a server
that drips its response are each cut off at the deadline, not held."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenvgen_runtime.access import relay
from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.relay import SessionRelays, admitted_target
from openenvgen_testsupport.servers import serve_app

KEY = "X-Fleet-Key"


class Recorder:
    """An ASGI app that answers every request with its path, and remembers what reached it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append((scope.get("method", "WS"), scope["raw_path"].decode(), headers))
        body = scope["raw_path"]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Recorder]]:
    app = Recorder()
    with serve_app(app) as url:
        yield str(url), app


def test_only_a_path_under_the_token_that_stays_under_it_is_admitted() -> None:
    token = "t0k3n"
    assert admitted_target(b"/t0k3n", token) == b"/"
    assert admitted_target(b"/t0k3n/reset", token) == b"/reset"
    assert admitted_target(b"/t0k3n?seed=1", token) == b"/?seed=1"
    assert admitted_target(b"/t0k3n/a?next=/../b", token) == b"/a?next=/../b"  # a query is no path
    refused = [b"/", b"/reset", b"/t0k3nx/reset", b"/t0k3/reset", b"//t0k3n/reset", b"*", b"http://a/t0k3n/x"]
    refused += [b"/t0k3n/../reset", b"/t0k3n/a/..", b"/t0k3n/./x", b"/t0k3n/%2e%2e/x", b"/t0k3n/%2E./x"]
    refused += [b"/t0k3n/a%2f..%2f..%2fx", b"/t0k3n/a\\..\\x", b"/t0k3n/..?x"]
    assert [admitted_target(target, token) for target in refused] == [None] * len(refused)


def test_the_relay_admits_its_run_alone_and_keeps_to_the_prefix(upstream: tuple[str, Recorder]) -> None:
    url, app = upstream

    async def main() -> tuple[str, list[tuple[str, int, bytes]], list[tuple[str, int]]]:
        access = ServerAccess()
        access.admit(f"{url}/fleet", {KEY: "the-value"})
        relays = SessionRelays(access, timeout=10)
        try:
            session = await relays.session_url(f"{url}/fleet")
            root = session.rsplit("/", 1)[0]
            token = session.rsplit("/", 1)[1]
            ours = []
            async with httpx.AsyncClient(base_url=session, trust_env=False, timeout=10) as http:
                for path in ("/health", "/a/b?c=/../d", ""):
                    response = await http.get(path)
                    ours.append((path, response.status_code, response.content))
            theirs = []
            async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
                for target in ("/health", f"/{token[:-1]}/health", f"/{token}/../health", f"/{token}/%2e%2e/x"):
                    theirs.append((target, (await http.get(root + target)).status_code))
            return token, ours, theirs
        finally:
            await relays.close()

    app.seen.clear()
    token, ours, theirs = asyncio.run(main())
    assert ours == [("/health", 200, b"/fleet/health"), ("/a/b?c=/../d", 200, b"/fleet/a/b"), ("", 200, b"/fleet/")]
    assert [seen[2][KEY.lower()] for seen in app.seen] == ["the-value"] * 3
    assert all(token not in str(seen) for seen in app.seen)
    assert [status for _, status in theirs] == [403] * 4, theirs
    assert len(app.seen) == 3  # nothing of theirs reached the server


def test_a_dripped_request_head_is_cut_off(upstream: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch) -> None:
    url, app = upstream
    monkeypatch.setattr(relay, "HEAD_TIMEOUT", 1.0)

    async def main() -> tuple[float, bytes]:
        access = ServerAccess()
        access.admit(url, {KEY: "v"})
        relays = SessionRelays(access, timeout=10)
        try:
            session = await relays.session_url(url)
            port, token = int(session.split(":")[2].split("/")[0]), session.rsplit("/", 1)[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            started = time.monotonic()
            got = b""
            for byte in f"GET /{token}/health HTTP/1.1\r\nHost: x\r\n".encode():
                writer.write(bytes([byte]))
                try:
                    await writer.drain()
                    got = await asyncio.wait_for(reader.read(100), 0.2)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if got == b"":
                    break
            writer.close()
            return time.monotonic() - started, got
        finally:
            await relays.close()

    app.seen.clear()
    elapsed, got = asyncio.run(main())
    assert got == b"" and elapsed < 5, (elapsed, got)
    assert app.seen == []


def test_a_dripped_response_is_cut_off_at_the_relays_timeout() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def drip() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            try:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000:
                    connection.sendall(bytes([byte]))
                    time.sleep(0.1)
            except OSError:
                pass

    threading.Thread(target=drip, daemon=True).start()

    async def main() -> tuple[float, str]:
        access = ServerAccess()
        access.admit(f"http://127.0.0.1:{port}", {KEY: "v"})
        relays = SessionRelays(access, timeout=1.5)
        try:
            session = await relays.session_url(f"http://127.0.0.1:{port}")
            started = time.monotonic()
            async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                try:
                    await http.get(f"{session}/health")
                    ended = "answered"
                except httpx.HTTPError as e:
                    ended = type(e).__name__
            return time.monotonic() - started, ended
        finally:
            await relays.close()

    try:
        elapsed, ended = asyncio.run(main())
    finally:
        listener.close()
    assert ended != "answered" and elapsed < 5, (elapsed, ended)

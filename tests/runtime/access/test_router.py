"""The router in front of a sandboxed Swarm launch's replicas, here as a process on loopback.

Its replicas are "whatever `localhost` resolves to" and their gate port a real OpenEnv
server's (the guess env under uvicorn), so the same program a router service runs is tested
as it runs there: a `CONNECT` to a replica's address and port tunnels to it (the runtime's
relay through `open_tunnel` reads the server's `/health` and `/schema` and plays a session
through it); a `CONNECT` to any other address or port is 403 and reaches nothing (a
listener on 127.0.0.2 accepts no connection); other methods are 405; a malformed or
oversized head is 400; a name that does not resolve admits nothing.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenvgen_runtime.access import incontainer
from openenvgen_runtime.launching import swarm_isolation
from openenvgen_runtime.launching.sandbox.relay import Relay
from openenvgen_servers.ports import free_port
from openenvgen_servers.wire import wait_healthy
from openenvgen_testsupport.host_listeners import Listener
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT


def start_router(replicas: str, port: int) -> tuple[int, subprocess.Popen[bytes]]:
    listen = free_port("127.0.0.1")
    process = subprocess.Popen(
        [sys.executable, "-I", incontainer.__file__, "router", "--replicas", replicas, "--port", str(port)]
        + ["--listen", str(listen), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return listen, process
        except OSError:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read() if process.stderr else b"") from None
            threading.Event().wait(0.1)
    raise AssertionError("the router did not listen")


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    """The guess env's OpenEnv server on loopback: the "replica" behind the router."""
    port = free_port("127.0.0.1")
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", UV_FIXTURE_APP, "--host", "127.0.0.1", "--port", str(port)],
        cwd=UV_FIXTURE_PROJECT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", 120)
        yield port
    finally:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="module")
def router(server: int) -> Iterator[int]:
    listen, process = start_router("localhost", server)
    try:
        yield listen
    finally:
        process.terminate()
        assert process.wait(10) == 0  # SIGTERM ends it cleanly


def exchange(port: int, request: bytes) -> bytes:
    """What the router answers `request` with, up to its close."""
    reply = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        try:
            connection.sendall(request)
            while chunk := connection.recv(65536):
                reply += chunk
        except ConnectionResetError:  # refused before it read all we sent
            pass
    return reply


def status(reply: bytes) -> str:
    return reply.split(b"\r\n", 1)[0].decode()


def test_a_tunnel_to_a_replica_reaches_its_server_and_plays(router: int, server: int) -> None:
    from openenv.core import GenericEnvClient

    relay = Relay(lambda: swarm_isolation.open_tunnel(("127.0.0.1", router), "127.0.0.1", port=server), "test")
    try:
        with httpx.Client(base_url=relay.url, trust_env=False, timeout=10) as http:
            assert http.get("/health").status_code == 200
            assert "action" in http.get("/schema").json()

        async def play() -> Any:
            client = GenericEnvClient(base_url=relay.url)
            try:
                await client.reset(seed=0)
                return await client.step({"guess": 7})
            finally:
                await client.close()

        result = asyncio.run(play())
        assert (result.done, result.reward) == (True, 1.0)
    finally:
        relay.close()


def test_a_tunnel_anywhere_else_is_refused_and_reaches_nothing(router: int, server: int) -> None:
    elsewhere = Listener("127.0.0.2")  # a loopback address that `localhost` does not name
    other_port = Listener("127.0.0.1")
    try:
        assert status(exchange(router, f"CONNECT 127.0.0.2:{server} HTTP/1.1\r\n\r\n".encode())).endswith(
            "403 Forbidden"
        )
        assert status(exchange(router, f"CONNECT 127.0.0.2:{elsewhere.port} HTTP/1.1\r\n\r\n".encode())).endswith(
            "403 Forbidden"
        )
        reply = exchange(router, f"CONNECT 127.0.0.1:{other_port.port} HTTP/1.1\r\n\r\n".encode())
        assert status(reply) == "HTTP/1.1 403 Forbidden", reply
        assert status(exchange(router, b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % server)) == "HTTP/1.1 403 Forbidden"
        assert elsewhere.accepted == [] and other_port.accepted == []
    finally:
        elsewhere.close()
        other_port.close()


def test_anything_but_connect_is_refused(router: int, server: int) -> None:
    assert status(exchange(router, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")) == "HTTP/1.1 405 Method Not Allowed"
    assert status(exchange(router, b"hello\r\n\r\n")) == "HTTP/1.1 400 Bad Request"
    assert status(exchange(router, b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n")) == "HTTP/1.1 400 Bad Request"
    huge = b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nX: " % server + b"a" * (incontainer.HEAD_LIMIT * 2) + b"\r\n\r\n"
    reply = exchange(router, huge)  # refused mid-head: the 400 may be lost to the reset
    assert reply == b"" or status(reply) == "HTTP/1.1 400 Bad Request", reply[:100]


def test_a_replica_name_that_does_not_resolve_admits_nothing(server: int) -> None:
    listen, process = start_router("tasks.no-such-service.invalid", server)
    try:
        reply = exchange(listen, f"CONNECT 127.0.0.1:{server} HTTP/1.1\r\n\r\n".encode())
        assert status(reply) == "HTTP/1.1 403 Forbidden", reply

        async def refused() -> str:
            try:
                await swarm_isolation.open_tunnel(("127.0.0.1", listen), "127.0.0.1", port=server)
            except ConnectionError as e:
                return str(e)
            return "opened"

        assert asyncio.run(refused()) == "the router refused the tunnel: HTTP/1.1 403 Forbidden"
    finally:
        process.terminate()
        process.wait(10)

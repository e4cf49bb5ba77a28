"""The host's loopback relay on real sockets: a loopback URL relayed to an HTTP server on a
Unix socket, only under the relay's token (with the relay's headers added), closed with its
connections open (quietly, its thread ended), and the relays of a run that outlive their
servers closed by owner, no other run's."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenvgen_runtime.launching.sandbox.relay import Relay, close_owned


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    seen: list[bytes]


class _Answer(socketserver.StreamRequestHandler):
    """HTTP/1.1 without bodies: each request's head is remembered and its target answered."""

    server: _Server

    def handle(self) -> None:
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = self.rfile.readline()
                if not line:
                    return
                head += line
            self.server.seen.append(head)
            target = head.split(b" ")[1]
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(target), target))


@pytest.fixture
def http_socket(tmp_path: Path) -> Iterator[tuple[str, _Server]]:
    path = str(tmp_path / "server.sock")
    server = _Server(path, _Answer)
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield path, server
    server.shutdown()
    server.server_close()


def _get(url: str) -> tuple[int, bytes]:
    response = httpx.get(url, trust_env=False, timeout=10)
    return response.status_code, response.content


def test_a_relay_admits_only_its_token_and_adds_its_headers(http_socket: tuple[str, _Server]) -> None:
    path, server = http_socket
    relay = Relay.to_socket(path, headers={"Authorization": "Bearer inside"})
    try:
        assert relay.url.startswith(f"http://127.0.0.1:{relay.port}/") and len(relay.token) >= 32
        with httpx.Client(base_url=relay.url, trust_env=False, timeout=10) as http:  # one kept-alive connection
            ours = [(r.status_code, r.content) for r in (http.get("/health"), http.get("/schema?x=1"))]
        root = f"http://127.0.0.1:{relay.port}"
        theirs = [_get(root + target)[0] for target in ("/health", "/x/health", f"/{relay.token}/../health")]
    finally:
        relay.close()
    assert ours == [(200, b"/health"), (200, b"/schema?x=1")]
    assert theirs == [403, 403, 403]
    assert len(server.seen) == 2 and all(b"Authorization: Bearer inside" in head for head in server.seen)
    assert all(relay.token.encode() not in head for head in server.seen)


def test_a_relay_closes_quietly_with_connections_open(
    http_socket: tuple[str, _Server], capfd: pytest.CaptureFixture[str]
) -> None:
    path, _ = http_socket
    relay = Relay.to_socket(path)
    token = relay.token.encode()
    open_connections = []
    for i in range(5):
        connection = socket.create_connection(("127.0.0.1", relay.port), timeout=10)
        connection.sendall(b"GET /%s/%d HTTP/1.1\r\nHost: x\r\n\r\n" % (token, i))
        reply = b""
        while not reply.endswith(b"\r\n\r\n/%d" % i):
            reply += connection.recv(1000)
        open_connections.append(connection)
    relay.close()
    assert not relay.running
    for connection in open_connections:
        assert connection.recv(1) == b""  # dropped by close
        connection.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", relay.port), timeout=2)
    assert "Traceback" not in capfd.readouterr().err


def test_close_owned_closes_only_the_runs_relays_still_open(http_socket: tuple[str, _Server]) -> None:
    path, _ = http_socket
    ours = [Relay.to_socket(path, "run-a") for _ in range(3)]
    theirs = Relay.to_socket(path, "run-b")
    ours[0].close()  # its provider closed it: not left over
    assert close_owned("run-a") == sorted([ours[1].name, ours[2].name])
    assert [r.running for r in ours] == [False] * 3 and theirs.running
    assert close_owned("run-a") == []
    assert _get(f"{theirs.url}/still-here") == (200, b"/still-here")
    assert close_owned("run-b") == [theirs.name]

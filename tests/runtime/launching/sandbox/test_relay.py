"""The sandbox's host relay on real sockets: a loopback port relayed to a Unix-socket echo
server, closed with its connections open (quietly, its thread ended), and the relays of a
run that outlive its servers closed by owner, no other run's."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenvgen_runtime.launching.sandbox.relay import Relay, close_owned


class _Echo(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while line := self.rfile.readline():
            self.wfile.write(line)


@pytest.fixture
def echo_socket(tmp_path: Path) -> Iterator[str]:
    path = str(tmp_path / "echo.sock")
    server = socketserver.ThreadingUnixStreamServer(path, _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield path
    server.shutdown()
    server.server_close()


def _ask(port: int, line: bytes) -> tuple[socket.socket, bytes]:
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(line)
    return connection, connection.makefile("rb").readline()


def test_a_relay_relays_and_closes_quietly_with_connections_open(
    echo_socket: str, capfd: pytest.CaptureFixture[str]
) -> None:
    relay = Relay.to_socket(echo_socket)
    open_connections = [_ask(relay.port, f"hello {i}\n".encode()) for i in range(5)]
    assert [reply for _, reply in open_connections] == [f"hello {i}\n".encode() for i in range(5)]
    relay.close()
    assert not relay.running
    for connection, _ in open_connections:
        assert connection.recv(1) == b""  # dropped by close
        connection.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", relay.port), timeout=2)
    assert "Traceback" not in capfd.readouterr().err


def test_close_owned_closes_only_the_runs_relays_still_open(echo_socket: str) -> None:
    ours = [Relay.to_socket(echo_socket, "run-a") for _ in range(3)]
    theirs = Relay.to_socket(echo_socket, "run-b")
    ours[0].close()  # its provider closed it: not left over
    assert close_owned("run-a") == [ours[1].name, ours[2].name]
    assert [r.running for r in ours] == [False] * 3 and theirs.running
    assert close_owned("run-a") == []
    connection, reply = _ask(theirs.port, b"still here\n")
    connection.close()
    assert reply == b"still here\n"
    assert close_owned("run-b") == [theirs.name]

"""`openenvgen_servers.ports.free_port`: the one way every server here gets its port."""

from __future__ import annotations

import socket

import pytest

from openenvgen_servers.ports import free_port


@pytest.mark.parametrize("host", ["", "127.0.0.1"])
def test_a_free_port_can_be_bound_and_listened_on(host: str) -> None:
    port = free_port(host)
    assert 0 < port < 65536
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()


def test_a_port_someone_listens_on_is_never_given() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        assert all(free_port() != busy for _ in range(50))

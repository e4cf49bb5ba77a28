"""A free TCP port for a server about to start on this machine: one way for every caller."""

from __future__ import annotations

import socket


def free_port(host: str = "") -> int:
    """A port nobody listens on now on `host` (every address by default, so it is free on
    each of them). Another process may take it before the server binds it: callers start
    their server soon after, and a rare clash fails that start."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])

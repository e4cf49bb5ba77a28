"""Listeners on the host's own addresses, for tests of what model-written code can reach.

`Listener` records every connection it accepts, so a test can show that a sandboxed
process reached nothing; `host_addresses` names the host's addresses a container could
try: loopback, the Docker bridge's and the Swarm gateway bridge's host sides, the swarm
node's address and every other address of the host's interfaces; `connect_probe` is model
code that tries each and records what happened.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import subprocess
import threading
from typing import Any

SIOCGIFADDR = 0x8915
"""Linux's ioctl that reads an interface's IPv4 address."""


class Listener:
    """A TCP listener on `address` that records every connection it accepts."""

    def __init__(self, address: str) -> None:
        self.sock = socket.create_server((address, 0))
        self.address, self.port = address, self.sock.getsockname()[1]
        self.accepted: list[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.accepted.append(peer)
            conn.close()

    def close(self) -> None:
        self.sock.close()


def _docker(*args: str) -> str:
    """The machine's daemon's answer (never a throwaway daemon's: DOCKER_HOST is dropped)."""
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    return subprocess.run(["docker", *args], capture_output=True, text=True, env=env).stdout.strip()


def network_gateway(network: str) -> str | None:
    """The host side of one of the machine's daemon's bridge networks (None when it has none)."""
    return _docker("network", "inspect", network, "--format", "{{(index .IPAM.Config 0).Gateway}}") or None


def bridge_address() -> str:
    """The Docker bridge's host address (docker0's gateway) on the machine's daemon."""
    return network_gateway("bridge") or "172.17.0.1"


def interface_addresses() -> list[str]:
    """The IPv4 address of each of this network namespace's interfaces that has one."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                reply = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
            except OSError:  # no IPv4 address
                continue
            found.append(socket.inet_ntoa(reply[20:24]))
    return found


def host_addresses() -> list[str]:
    """Loopback, the docker0 and docker_gwbridge gateways, the swarm node's address and
    every other address of the host's interfaces: each that a container could try."""
    node = _docker("info", "--format", "{{.Swarm.NodeAddr}}")
    found = ["127.0.0.1", bridge_address(), network_gateway("docker_gwbridge"), node, *interface_addresses()]
    return list(dict.fromkeys(a for a in found if a and a != "0.0.0.0"))


def connect_probe(listeners: list[Listener]) -> list[str]:
    """Lines of model code that try a TCP connection to each listener and record, in the
    dict `found`, `connected` or the error's name by address."""
    targets = json.dumps([[listener.address, listener.port] for listener in listeners])
    return [
        "import socket",
        f"for address in {targets}:",
        "    try:",
        "        socket.create_connection(tuple(address), timeout=3).close()",
        "        found[address[0]] = 'connected'",
        "    except OSError as e:",
        "        found[address[0]] = type(e).__name__",
    ]

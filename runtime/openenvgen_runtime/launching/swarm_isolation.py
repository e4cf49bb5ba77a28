"""Swarm replicas without network: a network of their own, and the launch's router as the one way in.

`docker service create` has no network-less mode, and a replica must be reachable. So a
sandboxed Swarm launch without network (`sandbox_network = "none"`) makes, per launch:

- an internal overlay network for its replicas (`--internal`: it has no gateway, so a
  replica's code reaches no node address, no Docker bridge and nothing outside; names
  outside it do not resolve) on which the replicas publish no port;
- the router (`openenvgen_runtime.access.router`, standard library only, shipped as a
  Swarm config and run by the image's own `python3`), a global service on that network and
  on a second overlay network of the launch, from which it publishes its port on each node
  (`mode=host`). It opens `CONNECT` tunnels to the replicas' gates and to nothing else;
  the gates still require the launch's secret, which the router never holds;
- one loopback `Relay` per replica in this process, that admits only the run's requests
  (its URL's token), adds the launch's secret to each, and tunnels each connection through
  the router on the replica's node (any router when that node has none). A replica's base
  URL is its relay's, so the pool, its health probes and OpenEnv's client reach it as any
  other server, through no second relay; a replica that Swarm replaces gets a new relay
  and URL, and the old one's port, once closed, is given nothing.

The networks, the router service and its config carry the run's labels, so the run's
reaper removes them however the run ends; `remove` removes them on a normal stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import subprocess
import threading
import time
import uuid
from importlib import resources
from typing import Any

from openenvgen_runtime.launching.docker_cli import (
    OWNER_LABEL,
    docker,
    label_args,
    last_line,
    node_address,
    service_tasks,
    task_failure,
)
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.sandbox.hardening import USER
from openenvgen_runtime.launching.sandbox.relay import Relay
from openenvgen_runtime.launching.swarm_gate import GATE_PORT

ROUTER_PORT = 18080
"""The port the router listens on in its container, published on its node."""
ROUTER_FILE = "/openenvgen-router.py"
ROUTER_LIMITS = ["--limit-memory", "128m", "--limit-pids", "64", "--limit-cpu", "0.5"]
"""The router's own limits: a splice of bytes needs little."""
TUNNEL_TIMEOUT = 15.0
"""Seconds to reach the router and have it open a tunnel."""


def router_program() -> bytes:
    """The router's source, as shipped to the nodes."""
    return resources.files("openenvgen_runtime.access").joinpath("router.py").read_bytes()


async def open_tunnel(
    router: tuple[str, int], replica: str, *, port: int = GATE_PORT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to `replica`'s gate (its `port`) through `router`; ConnectionError when refused."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*router), TUNNEL_TIMEOUT)
    try:
        authority = f"{replica}:{port}"
        writer.write(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("ascii"))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TUNNEL_TIMEOUT)
    except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        writer.close()
        raise ConnectionError(f"the router did not open a tunnel ({type(e).__name__})") from None
    except BaseException:
        writer.close()
        raise
    if not head.startswith(b"HTTP/1.1 200 "):
        writer.close()
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        raise ConnectionError(f"the router refused the tunnel: {status}")
    return reader, writer


def running(task: dict[str, Any]) -> bool:
    return task.get("Status", {}).get("State") == "running" and task.get("DesiredState") == "running"


class IsolatedNetwork:
    """One launch's replica network, router and relays."""

    def __init__(
        self,
        labels: dict[str, str],
        image: str,
        constraints: list[str] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.headers = dict(headers or {})
        """What each relay adds to every request (the launch's secret, for its gates)."""
        self.name = f"openenvgen-{uuid.uuid4().hex[:12]}"
        self.labels = labels
        self.image = image
        self.constraints = list(constraints or [])
        self.replica_network = f"{self.name}-replicas"
        """The replicas' one network: internal, so no way off it."""
        self.router_network = f"{self.name}-outside"
        """The router's second network, which gives it a port on its node."""
        self.router = f"{self.name}-router"
        """The router's service and config name."""
        self._made: list[tuple[str, str]] = []
        self._relays: dict[str, tuple[tuple[str, int], str, Relay]] = {}
        """By replica task ID: (router address, replica address, its relay)."""
        self._nodes: dict[str, str] = {}
        self._lock = threading.Lock()
        """`urls` and `remove` run in worker threads: one at a time."""

    def create(self, replica_service: str) -> None:
        """Make the networks, the router's config and its service, before the replicas'
        service; one-line LaunchErrors (everything made so far removed)."""
        self._create("network", self.replica_network, "--driver", "overlay", "--internal", self.replica_network)
        self._create("network", self.router_network, "--driver", "overlay", self.router_network)
        self._create("config", self.router, self.router, "-", content=router_program())
        options = ["--detach", "--name", self.router, "--mode", "global"]
        options += ["--network", self.replica_network, "--network", self.router_network]
        options += ["--publish", f"mode=host,target={ROUTER_PORT}"]
        options += ["--config", f"source={self.router},target={ROUTER_FILE},mode=0444"]
        options += label_args("--container-label", self.labels)
        options += ["--user", USER, "--cap-drop", "ALL", "--read-only", *ROUTER_LIMITS]
        for constraint in self.constraints:  # where the replicas may run, so may their routers
            options += ["--constraint", constraint]
        router = ["-I", ROUTER_FILE, "--replicas", f"tasks.{replica_service}", "--port", str(GATE_PORT)]
        router += ["--listen", str(ROUTER_PORT)]
        self._create("service", self.router, *options, "--entrypoint", "python3", self.image, *router)

    def _create(self, kind: str, name: str, *args: str, content: bytes | None = None) -> None:
        """`docker KIND create` with the run's labels and `args`, `content` on stdin."""
        command = ["docker", kind, "create", *label_args("--label", self.labels), *args]
        made = subprocess.run(command, input=content, capture_output=True, timeout=120)
        if made.returncode != 0:
            self.remove()
            error = last_line(made.stderr.decode(errors="replace"))
            raise LaunchError(f"use_swarm: `docker {kind} create` failed: {error}")
        self._made.append((kind, name))

    def replica_args(self) -> list[str]:
        """The replicas' `docker service create` network: theirs alone."""
        return ["--network", self.replica_network]

    def routers(self) -> dict[str, tuple[str, int]]:
        """(address, port) of the router running on each node, by node ID."""
        found = {}
        for task in service_tasks(self.router):
            ports = task.get("Status", {}).get("PortStatus", {}).get("Ports") or []
            published = [p["PublishedPort"] for p in ports if p.get("TargetPort") == ROUTER_PORT]
            node = task.get("NodeID", "")
            if running(task) and published:
                if node not in self._nodes:
                    self._nodes[node] = node_address(node)
                found[node] = (self._nodes[node], published[0])
        return found

    def address(self, task: dict[str, Any]) -> str | None:
        """A replica task's address on the replica network."""
        for attachment in task.get("NetworksAttachments") or []:
            if attachment.get("Network", {}).get("Spec", {}).get("Name") == self.replica_network:
                addresses = attachment.get("Addresses") or []
                return str(addresses[0]).split("/")[0] if addresses else None
        return None

    def urls(self, replica_tasks: list[dict[str, Any]]) -> list[str]:
        """The loopback URL of each running replica, its relay started on first sight
        (and restarted when its router or address changed); relays of replicas gone close."""
        with self._lock:
            return self._urls(replica_tasks)

    def _urls(self, replica_tasks: list[dict[str, Any]]) -> list[str]:
        routers = self.routers()
        if not routers:  # none running this moment (one being replaced): keep what was known
            return sorted(relay.url for _, _, relay in self._relays.values())
        seen = set()
        for task in replica_tasks:
            address = self.address(task)
            if not running(task) or address is None:
                continue
            router = routers.get(task.get("NodeID", ""), next(iter(routers.values())))
            seen.add(task["ID"])
            known = self._relays.get(task["ID"])
            if known is not None and known[:2] == (router, address):
                continue
            if known is not None:
                known[2].close()

            opener = functools.partial(open_tunnel, router, address)
            relay = Relay(opener, f"{self.name} {address}", self.labels.get(OWNER_LABEL), headers=self.headers)
            self._relays[task["ID"]] = (router, address, relay)
        for gone in set(self._relays) - seen:
            self._relays.pop(gone)[2].close()
        return sorted(relay.url for _, _, relay in self._relays.values())

    def failure(self) -> str | None:
        """The swarm's reason when no router can start (no node fits, no image)."""
        tasks = service_tasks(self.router)
        if any(running(task) for task in tasks):
            return None
        problem = task_failure(tasks)
        return None if problem is None else f"the router: {problem}"

    def remove(self) -> None:
        """Close the relays; remove the router, its config and the networks (once the
        replicas' service is gone: a network in use cannot be removed)."""
        with self._lock:
            relays, self._relays = self._relays, {}
        for _, _, relay in relays.values():
            relay.close()
        made, self._made = self._made, []
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            if ("service", self.router) in made:
                docker("service", "rm", self.router, timeout=60)
            if ("config", self.router) in made:
                docker("config", "rm", self.router, timeout=60)
            networks = [name for kind, name in made if kind == "network"]
            deadline = time.monotonic() + 30
            while networks and time.monotonic() < deadline:
                # The swarm frees a network shortly after the last container on it goes.
                networks = [n for n in networks if docker("network", "rm", n, timeout=60).returncode != 0]
                if networks:
                    time.sleep(0.5)

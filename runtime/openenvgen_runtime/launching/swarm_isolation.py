"""Swarm replicas without network: a network of their own, and the launch's router as the one way in.

`docker service create` has no network-less mode, and a replica must be reachable. So a
sandboxed Swarm launch without network (`sandbox_network = "none"`) makes, per launch:

- an internal overlay network for its replicas (`--internal`: it has no gateway, so a
  replica's code reaches no node address, no Docker bridge and nothing outside; names
  outside it do not resolve) on which the replicas publish no port;
- the router (the `router` role of `openenvgen_runtime.access.incontainer`, the launch's
  program config that its gates run, by the image's own `python3`), a global service on that network and
  on a second overlay network of the launch, from which it publishes its port on each node
  (`mode=host`). It opens `CONNECT` tunnels to the replicas' gates and to nothing else;
  the gates still require the launch's secret, which the router never holds;
- one loopback `Relay` per replica in this process, that admits only the run's requests
  (its URL's token), adds the launch's secret to each, and tunnels each connection through
  the router on the replica's node (any router when that node has none). A replica's base
  URL is its relay's, so the pool, its health probes and OpenEnv's client reach it as any
  other server, through no second relay; a replica that Swarm replaces gets a new relay
  and URL, and the old one's port, once closed, is given nothing.

The networks and the router service are `SwarmObjects` (the run's labels, so the run's
reaper removes them however the run ends); `remove` removes them on a normal stop.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import uuid
from typing import Any

from openenvgen_runtime.launching.docker_cli import (
    OWNER_LABEL,
    docker,
    label_args,
    node_address,
    service_tasks,
    task_failure,
)
from openenvgen_runtime.launching.sandbox.hardening import USER
from openenvgen_runtime.launching.sandbox.relay import Relay
from openenvgen_runtime.launching.swarm_gate import GATE_PORT, SwarmObjects

ROUTER_PORT = 18080
"""The port the router listens on in its container, published on its node."""
ROUTER_FILE = "/openenvgen-router.py"
"""Where the router has the in-container program."""
ROUTER_LIMITS = ["--limit-memory", "128m", "--limit-pids", "64", "--limit-cpu", "0.5"]
"""The router's own limits: a splice of bytes needs little."""
TUNNEL_TIMEOUT = 15.0
"""Seconds to reach the router and have it open a tunnel."""


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
        self.image = image
        self.constraints = list(constraints or [])
        self.replica_network = f"{self.name}-replicas"
        """The replicas' one network: internal, so no way off it."""
        self.router_network = f"{self.name}-outside"
        """The router's second network, which gives it a port on its node."""
        self.router = f"{self.name}-router"
        """The router's service name."""
        self.objects = SwarmObjects(labels)
        self._relays: dict[str, tuple[tuple[str, int], str, Relay]] = {}
        """By replica task ID: (router address, replica address, its relay)."""
        self._nodes: dict[str, str] = {}
        self._lock = threading.Lock()
        """`urls` and `remove` run in worker threads: one at a time."""

    def create(self, replica_service: str, program: str) -> None:
        """Make the networks and the router's service (running the config `program`), before
        the replicas' service; one-line LaunchErrors (everything made so far removed)."""
        self.objects.create("network", self.replica_network, "--driver", "overlay", "--internal", self.replica_network)
        self.objects.create("network", self.router_network, "--driver", "overlay", self.router_network)
        options = ["--detach", "--name", self.router, "--mode", "global"]
        options += ["--network", self.replica_network, "--network", self.router_network]
        options += ["--publish", f"mode=host,target={ROUTER_PORT}"]
        options += ["--config", f"source={program},target={ROUTER_FILE},mode=0444"]
        options += label_args("--container-label", self.objects.labels)
        options += ["--user", USER, "--cap-drop", "ALL", "--read-only", *ROUTER_LIMITS]
        for constraint in self.constraints:  # where the replicas may run, so may their routers
            options += ["--constraint", constraint]
        router = ["-I", ROUTER_FILE, "router", "--replicas", f"tasks.{replica_service}", "--port", str(GATE_PORT)]
        router += ["--listen", str(ROUTER_PORT)]
        self.objects.create("service", self.router, *options, "--entrypoint", "python3", self.image, *router)

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
            relay = Relay(opener, f"{self.name} {address}", self.objects.labels.get(OWNER_LABEL), headers=self.headers)
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
        """Close the relays; remove the router and the networks (once the replicas' service
        is gone: a network in use cannot be removed)."""
        with self._lock:
            relays, self._relays = self._relays, {}
        for _, _, relay in relays.values():
            relay.close()
        self.objects.remove()


DNS_FIXED = {(23, 0): (23, 0, 11), (25, 0): (25, 0, 5)}
"""Releases of Docker Engine (moby) before 26.0.0 with the fix for CVE-2024-29018, by line:
before it an `--internal` network's embedded DNS forwards names it does not know to the
node's resolvers, so code on the network can send data off it in DNS queries. 26.0.0 and
later have the fix; 24.0 never got it."""


def dns_fix_missing(version: str) -> bool:
    """Whether an engine `version` (`docker version`'s, e.g. `20.10.24+dfsg1`) predates the
    fix for CVE-2024-29018; False for a version this cannot read."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", version.strip())
    if match is None:
        return False
    found = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    if found >= (26, 0, 0):
        return False
    fixed = DNS_FIXED.get(found[:2])
    return fixed is None or found < fixed


def dns_warning() -> str | None:
    """One line naming the swarm's nodes whose engine predates the fix for CVE-2024-29018
    (an internal network's DNS forwarding), or None when every node has it."""
    listed = docker("node", "ls", "--format", "{{.Hostname}} {{.EngineVersion}}")
    nodes = [line.split(maxsplit=1) for line in listed.stdout.splitlines() if line.strip()]
    old = [f"{node[0]} ({node[1]})" for node in nodes if len(node) == 2 and dns_fix_missing(node[1])]
    if not old:
        return None
    return (
        f"use_swarm: Docker Engine on {', '.join(old)} predates the fix for CVE-2024-29018 "
        "(23.0.11, 25.0.5, 26.0.0): the replicas' internal network forwards DNS queries off the node, "
        "so their code can send data out in names it looks up; upgrade the engine (a distribution's "
        "package may carry the fix under an older version)"
    )

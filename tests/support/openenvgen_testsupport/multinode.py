"""A real multi-node Docker Swarm on one machine, for the `multinode` tests.

`multinode_swarm` makes a manager and N workers: one Docker daemon each, in a network
namespace of its own (own socket, data root, exec root with its own containerd, pid file,
cgroup parent), linked by veth pairs to a bridge in a switch namespace of the test's own
(bridged traffic there meets no firewall: the machine's FORWARD chain, which Docker sets
to DROP, never sees it). The machine itself is on that bridge too (one more veth, the
first address of the subnet), so the test process reaches every node's published ports
and the nodes reach the registry: Debian's `docker-registry`, started here on the
machine's bridge address, insecure in every node's daemon. The env image is pushed to it
from the machine's daemon (through a loopback forwarder for the push only, as Docker
trusts plain-HTTP registries on loopback alone) and each node pulls it from there.

Everything is undone at the end, also when the block fails: containers (killed through
each node's cgroup parent), daemons and their shims (every process left in a node's
namespace), mounts under the data roots, namespaces (their veths go with them), the
machine's veth, the registry and the temporary directory. The machine's daemon, swarm,
networks and bridges are never touched. `MultinodeUnavailable` says why a machine
cannot make the cluster (no root, no network namespaces, a missing tool). `Cluster.kill_node`
takes a node down mid-run as a dying machine goes (`swarm_node`), `revive_node` brings it back.
`Cluster` also reads what runs where (`services`, `placement`, `replica_urls`, `sessions`,
`leftovers`): the multinode tests and bench/r5_cluster.py share these readings.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import os
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from openenvgen_runtime.launching.swarm_gate import GATE_PORT
from openenvgen_servers.ports import free_port
from openenvgen_testsupport import swarm_node
from openenvgen_testsupport.swarm_node import Node, start_daemon, stop_node

TMPFS_SIZE = "6g"
"""Room for the nodes' data roots (each worker holds the env image once)."""
TOOLS = {"ip": "iproute2", "nsenter": "util-linux", "dockerd": "docker.io", "docker-registry": "docker-registry"}


class MultinodeUnavailable(RuntimeError):
    """This machine cannot make the multi-node swarm; the message says why."""


@dataclass
class Cluster:
    manager: Node
    workers: list[Node]
    registry: str
    """host:port of the registry, as the nodes reach it."""
    image: str
    """The env image's reference in the registry (what a service must use)."""
    nodes: list[Node] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds each set-up step took (network, daemons, swarm, push)."""

    def docker(self, node: Node, *args: str, timeout: float = 120, check: bool = True) -> str:
        """`docker ARGS` against `node`'s daemon; its stdout."""
        env = {**os.environ, "DOCKER_HOST": node.host}
        proc = subprocess.run(["docker", *args], env=env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)} on {node.name}: {proc.stderr.strip()}")
        return proc.stdout

    def placement(self, service: str) -> dict[str, int]:
        """Running tasks of `service` per node (from `docker node ps` on the manager)."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            out = self.docker(
                self.manager,
                "node",
                "ps",
                node.name,
                "--filter",
                "desired-state=running",
                "--format",
                "{{.Name}} {{.CurrentState}}",
            )
            running = [line for line in out.splitlines() if line.startswith(f"{service}.") and "Running" in line]
            if running:
                counts[node.name] = len(running)
        return counts

    def services(self, label: str) -> list[str]:
        """Names of the services carrying `label` (key=value), as the manager lists them."""
        out = self.docker(self.manager, "service", "ls", "--filter", f"label={label}", "--format", "{{.Name}}")
        return sorted(out.split())

    def replica_urls(self, service: str) -> list[str]:
        """Base URLs of `service`'s running replicas: each one's node address and the port
        published for it there, its access gate's (what the runtime's pool addresses)."""
        ids = self.docker(self.manager, "service", "ps", "-q", "--no-trunc", service).split()
        tasks = json.loads(self.docker(self.manager, "inspect", *ids)) if ids else []
        addresses = {node.node_id: node.address for node in self.nodes}
        urls = set()  # a port is listed once per address family
        for task in tasks:
            status = task.get("Status", {})
            if status.get("State") != "running" or task.get("DesiredState") != "running":
                continue
            for port in status.get("PortStatus", {}).get("Ports") or []:
                if port.get("TargetPort") == GATE_PORT:
                    urls.add(f"http://{addresses[task['NodeID']]}:{port['PublishedPort']}")
        return sorted(urls)

    def sessions(self, label: str, nodes: list[Node] | None = None) -> dict[str, int]:
        """WebSocket sessions each running container carrying `label` accepted (its server's
        access log), by `node/container`, on `nodes` (default all; a killed node answers nothing)."""
        counts = {}
        for node in self.nodes if nodes is None else nodes:
            for container in self.docker(node, "ps", "-q", "--filter", f"label={label}").split():
                log = self.logs(node, container)
                counts[f"{node.name}/{container}"] = sum("WebSocket /ws" in line for line in log.splitlines())
        return counts

    def kill_node(self, node: Node) -> None:
        """`node` dies as a machine does (`swarm_node.kill_node`); the swarm notices by itself."""
        swarm_node.kill_node(node)

    def revive_node(self, node: Node, timeout: float = 120) -> None:
        """Start a killed node's daemon again; back once the manager lists it ready."""
        swarm_node.revive_node(node)
        _wait(functools.partial(_daemon_answers, node), f"the revived {node.name} daemon", timeout, node.proc)

        def ready() -> bool:
            state = self.docker(self.manager, "node", "inspect", node.name, "--format", "{{.Status.State}}")
            return state.strip() == "ready"

        _wait(ready, f"{node.name} rejoining the swarm", timeout)

    def logs(self, node: Node, container: str) -> str:
        """A container's log on `node`, its stdout and stderr."""
        env = {**os.environ, "DOCKER_HOST": node.host}
        proc = subprocess.run(["docker", "logs", container], env=env, capture_output=True, text=True, timeout=60)
        return proc.stdout + proc.stderr

    def leftovers(self, label: str) -> dict[str, list[str]]:
        """Per node, the services, containers, networks, secrets and configs carrying `label` (key=value)."""
        found: dict[str, list[str]] = {}
        for node in self.nodes:
            items = self.docker(node, "ps", "-aq", "--filter", f"label={label}").split()
            items += self.docker(node, "network", "ls", "-q", "--filter", f"label={label}").split()
            if node is self.manager:
                items += self.docker(node, "service", "ls", "-q", "--filter", f"label={label}").split()
                items += self.docker(node, "secret", "ls", "-q", "--filter", f"label={label}").split()
                items += self.docker(node, "config", "ls", "-q", "--filter", f"label={label}").split()
            if items:
                found[node.name] = items
        return found


def problem() -> str | None:
    """Why this machine cannot make the cluster, or None."""
    if os.geteuid() != 0:
        return "a multi-node swarm on one machine needs root (network namespaces, veths, dockerd)"
    for tool, package in TOOLS.items():
        if shutil.which(tool) is None:
            return f"a multi-node swarm needs `{tool}` (apt-get install {package})"
    probe = f"oeprobe{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"this machine cannot make network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*args: str, netns: str | None = None) -> None:
    command = ["ip", "netns", "exec", netns, *args] if netns else list(args)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise MultinodeUnavailable(f"`{' '.join(command)}` failed: {proc.stderr.strip()}")


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 no route of this machine covers."""
    routes = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    used = []
    for line in routes.split("\n"):
        with contextlib.suppress(ValueError, IndexError):
            used.append(ipaddress.ip_network(line.split()[0], strict=False))
    for third in range(213, 250):
        candidate = ipaddress.IPv4Network(f"192.168.{third}.0/24")
        if not any(candidate.overlaps(net) for net in used if net.prefixlen > 0):
            return candidate
    raise MultinodeUnavailable("no free 192.168.x.0/24 subnet for the test bridge")


def _wait(check: Callable[[], bool], what: str, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise MultinodeUnavailable(f"{what} did not come up")
        time.sleep(0.3)


class _Forward(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextlib.contextmanager
def loopback_forward(target: tuple[str, int]) -> Iterator[int]:
    """A TCP forwarder from a free 127.0.0.1 port to `target` for the block; yields the port."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with socket.create_connection(target) as upstream:

                def pump(src: socket.socket, dst: socket.socket) -> None:
                    with contextlib.suppress(OSError):
                        while data := src.recv(65536):
                            dst.sendall(data)
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)

                back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
                back.start()
                pump(self.request, upstream)
                back.join()

    with _Forward(("127.0.0.1", 0), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield int(server.server_address[1])
        finally:
            server.shutdown()


def _unmount_under(root: Path) -> None:
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(str(root) + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def _push(image: str, registry_port: int, registry_address: str) -> str:
    """Push `image` from the machine's daemon to the registry; its reference as nodes see it."""
    repository_tag = image.split("/")[-1]
    with loopback_forward((registry_address, registry_port)) as port:
        local = f"127.0.0.1:{port}/{repository_tag}"
        subprocess.run(["docker", "tag", image, local], check=True, capture_output=True, timeout=60)
        try:
            pushed = subprocess.run(["docker", "push", local], capture_output=True, text=True, timeout=900)
        finally:
            subprocess.run(["docker", "rmi", local], capture_output=True, timeout=60)
        if pushed.returncode != 0:
            raise MultinodeUnavailable(f"docker push to the test registry failed: {pushed.stderr.strip()}")
    return f"{registry_address}:{registry_port}/{repository_tag}"


@contextlib.contextmanager
def multinode_swarm(image: str, *, workers: int = 2, registry_cache: Path | None = None) -> Iterator[Cluster]:
    """A manager and `workers` worker daemons joined in one swarm, with `image` in a registry
    they pull from; everything removed at the end. `registry_cache` keeps the registry's
    blobs between runs (the push then sends nothing new)."""
    reason = problem()
    if reason:
        raise MultinodeUnavailable(reason)
    tag = uuid.uuid4().hex[:6]
    prefix = f"oe{tag}"
    subnet = _free_subnet()
    hosts = list(subnet.hosts())
    bridge_address = str(hosts[0])
    root = Path(tempfile.mkdtemp(prefix="oeg-mn-", dir="/tmp"))  # short: unix socket paths are limited
    switch = f"{prefix}-sw"
    names = ["manager"] + [f"worker{i}" for i in range(1, workers + 1)]
    nodes = [
        Node(name, f"{prefix}-{name}", str(hosts[i + 1]), f"unix://{root}/{name}.sock", f"/oeg-mn-{tag}-{name}")
        for i, name in enumerate(names)
    ]
    started = time.monotonic()
    timings: dict[str, float] = {}

    def lap(step: str) -> None:
        timings[step] = round(time.monotonic() - started - sum(timings.values()), 1)

    with contextlib.ExitStack() as undo:
        undo.callback(shutil.rmtree, root, ignore_errors=True)
        # The data roots live in memory: deleting a pulled image's layers from a disk mounted
        # with `discard` takes minutes, unmounting a tmpfs none.
        _run("mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(root))
        undo.callback(subprocess.run, ["umount", "-l", str(root)], capture_output=True)
        undo.callback(_unmount_under, root)
        _run("ip", "netns", "add", switch)
        undo.callback(subprocess.run, ["ip", "netns", "del", switch], capture_output=True)
        _run("ip", "link", "add", f"{prefix}br", "type", "bridge", netns=switch)
        _run("ip", "link", "set", f"{prefix}br", "up", netns=switch)
        # The machine's leg: its end keeps the bridge address, the other end joins the bridge.
        _run("ip", "link", "add", f"{prefix}h", "type", "veth", "peer", "name", f"{prefix}hb")
        undo.callback(subprocess.run, ["ip", "link", "del", f"{prefix}h"], capture_output=True)
        _run("ip", "link", "set", f"{prefix}hb", "netns", switch)
        _run("ip", "link", "set", f"{prefix}hb", "master", f"{prefix}br", "up", netns=switch)
        _run("ip", "addr", "add", f"{bridge_address}/{subnet.prefixlen}", "dev", f"{prefix}h")
        _run("ip", "link", "set", f"{prefix}h", "up")
        for i, node in enumerate(nodes):
            _run("ip", "netns", "add", node.netns)
            undo.callback(stop_node, node)
            leg = f"{prefix}n{i}"
            _run("ip", "link", "add", leg, "type", "veth", "peer", "name", f"{leg}b")
            _run("ip", "link", "set", f"{leg}b", "netns", switch)
            _run("ip", "link", "set", f"{leg}b", "master", f"{prefix}br", "up", netns=switch)
            _run("ip", "link", "set", leg, "netns", node.netns)
            _run("ip", "link", "set", leg, "name", "eth0", netns=node.netns)
            _run("ip", "addr", "add", f"{node.address}/{subnet.prefixlen}", "dev", "eth0", netns=node.netns)
            _run("ip", "link", "set", "eth0", "up", netns=node.netns)
            _run("ip", "link", "set", "lo", "up", netns=node.netns)
            _run("ip", "route", "add", "default", "via", bridge_address, netns=node.netns)

        lap("network")
        port = free_port(bridge_address)
        registry = f"{bridge_address}:{port}"
        storage = registry_cache or root / "registry"
        storage.mkdir(parents=True, exist_ok=True)
        config = root / "registry.yml"
        config.write_text(
            f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
            f"http:\n  addr: {registry}\n"
        )
        registry_log = (root / "registry.log").open("wb")
        registry_proc = subprocess.Popen(
            ["docker-registry", "serve", str(config)], stdout=registry_log, stderr=subprocess.STDOUT
        )
        registry_log.close()
        undo.callback(_stop_process, registry_proc)
        _wait(lambda: _answers(bridge_address, port), "the test registry", 30, registry_proc)

        for i, node in enumerate(nodes):
            start_daemon(node, root, registry, f"172.{25 + i}.0.1/16")
        cluster = Cluster(nodes[0], nodes[1:], registry, "", nodes, timings)
        for node in nodes:
            _wait(functools.partial(_daemon_answers, node), f"the {node.name} daemon", 60, node.proc)
        lap("daemons")
        manager = nodes[0]
        cluster.docker(manager, "swarm", "init", "--advertise-addr", manager.address)
        token = cluster.docker(manager, "swarm", "join-token", "-q", "worker").strip()
        for node in nodes[1:]:
            cluster.docker(node, "swarm", "join", "--token", token, f"{manager.address}:2377")
        for node in nodes:
            node.node_id = cluster.docker(node, "info", "--format", "{{.Swarm.NodeID}}").strip()
        lap("swarm")
        cluster.image = _push(image, port, bridge_address)
        lap("push")
        yield cluster


def _answers(address: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1):
        return True
    return False


def _daemon_answers(node: Node) -> bool:
    env = {**os.environ, "DOCKER_HOST": node.host}
    return subprocess.run(["docker", "info"], env=env, capture_output=True, timeout=20).returncode == 0


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

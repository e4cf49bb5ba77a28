"""One node of the `multinode` swarm: its Docker daemon in a network namespace of its own,
started, killed the way a machine dies, brought back, and stopped for good.

A node's processes live in two places: its daemon, containerd and container shims in the
node's network namespace (`ip netns pids`), its containers in their own namespaces but under
the node's cgroup parent. Killing a node means killing both: killing only `dockerd` leaves
the containers serving.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class Node:
    name: str
    """`manager`, `worker1`, ...: also the daemon's hostname in `docker node ls`."""
    netns: str
    address: str
    host: str
    """Its DOCKER_HOST (a unix socket)."""
    cgroup_parent: str
    proc: subprocess.Popen[bytes] | None = None
    node_id: str = ""
    command: list[str] = field(default_factory=list)
    """How its daemon was started (`revive_node` starts it again the same way)."""
    log: Path | None = None


def start_daemon(node: Node, root: Path, registry: str, bip: str) -> None:
    home = root / node.name
    home.mkdir()
    # nsenter, not `ip netns exec` (it remounts /sys, hiding the cgroup mounts dockerd needs);
    # a hostname of its own, so `docker node ls` tells the nodes apart.
    command = ["nsenter", f"--net=/run/netns/{node.netns}", "unshare", "--uts", "sh", "-c"]
    command += ['hostname "$0" && exec "$@"', node.name, "dockerd", "-H", node.host, "--bip", bip]
    command += ["--data-root", str(home / "data"), "--exec-root", str(home / "exec")]
    command += ["--pidfile", str(home / "dockerd.pid"), "--cgroup-parent", node.cgroup_parent]
    command += ["--insecure-registry", registry]
    node.command, node.log = command, home / "dockerd.log"
    _spawn(node)


def _spawn(node: Node) -> None:
    assert node.log is not None
    with node.log.open("ab") as log:
        node.proc = subprocess.Popen(node.command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kill_node(node: Node) -> None:
    """The node dies as a machine does: its daemon, containerd, shims and containers are
    SIGKILLed at once, no clean shutdown. Its network namespace and link stay (a dead
    machine's address refuses connections), and its data root stays for `revive_node`."""
    if node.proc is not None and node.proc.poll() is None:
        node.proc.kill()
    _kill_namespace(node)
    _kill_cgroup(node.cgroup_parent)
    if node.proc is not None:
        node.proc.wait(timeout=30)
    _kill_cgroup(node.cgroup_parent)  # anything started while the first sweep ran


def revive_node(node: Node) -> None:
    """Start a killed node's daemon again on its data root: it rejoins the swarm by itself."""
    if node.proc is None or node.proc.poll() is not None:
        _spawn(node)


def stop_node(node: Node) -> None:
    # Containers first (a stopped dockerd leaves them serving), then the daemon, then
    # whatever is left in its namespace (containerd, shims).
    _kill_cgroup(node.cgroup_parent)
    if node.proc is not None and node.proc.poll() is None:
        node.proc.send_signal(signal.SIGTERM)
        try:
            node.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            node.proc.kill()
            node.proc.wait(timeout=30)
    _kill_namespace(node)
    _kill_cgroup(node.cgroup_parent, remove=True)
    subprocess.run(["ip", "netns", "del", node.netns], capture_output=True)


def _kill_namespace(node: Node) -> None:
    pids = subprocess.run(["ip", "netns", "pids", node.netns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def _cgroup_dirs(parent: str) -> list[Path]:
    return [d / parent.strip("/") for d in CGROUP_ROOT.iterdir() if (d / parent.strip("/")).is_dir()]


def _kill_cgroup(parent: str, *, remove: bool = False) -> None:
    for top in _cgroup_dirs(parent):
        for procs in top.rglob("cgroup.procs"):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        if remove:
            for directory in sorted((d for d in top.rglob("*") if d.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    directory.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()

"""The reaper every container run gets: nothing labelled with the run's owner outlives it.

A small watcher process per run waits for its parent to end (however it ends, SIGKILL
included) and then removes every container and Swarm service carrying the run's owner
label, then the Swarm secrets, configs and networks carrying it (a Swarm launch's access
secret, gate and router programs, a sandboxed launch's networks), then the run's sandbox
socket folders (`sandbox.folders`, named by the owner). A normal stop closes it, which runs the same sweep.

Run as `python -m openenvgen_runtime.launching.reaper OWNER`, it is that watcher.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time

from openenvgen_runtime.launching.docker_cli import OWNER_LABEL, docker
from openenvgen_runtime.launching.sandbox import folders


def remove_owned(owner: str, wait: float = 30.0) -> None:
    """Remove every service and container labelled with `owner`; wait for them to go; then
    the secrets and configs labelled with it, and the sandbox folders marked with it."""
    selector = f"label={OWNER_LABEL}={owner}"
    services = docker("service", "ls", "-q", "--filter", selector).stdout.split()
    if services:
        docker("service", "rm", *services)
    deadline = time.monotonic() + wait
    while True:
        containers = docker("ps", "-aq", "--filter", selector).stdout.split()
        if containers:
            docker("rm", "-f", *containers)
        # A removed service's task containers are taken down by the swarm shortly after.
        if not containers and not docker("service", "ls", "-q", "--filter", selector).stdout.split():
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for kind in ("secret", "config"):  # once no service uses them; none outside a swarm
        owned = docker(kind, "ls", "-q", "--filter", selector).stdout.split()
        if owned:
            docker(kind, "rm", *owned)
    # A sandboxed swarm launch's networks: freed by the swarm shortly after their last container.
    networks = docker("network", "ls", "-q", "--filter", selector).stdout.split()
    deadline = time.monotonic() + wait
    while networks and time.monotonic() < deadline:
        networks = [n for n in networks if docker("network", "rm", n).returncode != 0]
        if networks:
            time.sleep(0.5)
    folders.remove_owned(owner)


class Reaper:
    """The watcher process that removes this run's containers and services when it ends."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._process = subprocess.Popen(
            [sys.executable, "-m", "openenvgen_runtime.launching.reaper", owner],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own session: a Ctrl-C to the eval's process group must not stop it.
            start_new_session=True,
        )

    def close(self, timeout: float = 60.0) -> None:
        """Sweep now (the watcher sees its input close) and wait for it to finish."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=timeout)


def _watch(owner: str) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    sys.stdin.buffer.read()  # returns when the parent closes it or dies
    remove_owned(owner)


if __name__ == "__main__":
    _watch(sys.argv[1])

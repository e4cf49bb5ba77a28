"""Docker containers for the Docker launch mode, and the reaper every container run gets.

`LabelledDockerProvider` is OpenEnv's `LocalDockerProvider` with three changes: its
containers carry labels (the run's owner label, so they can be found and removed
precisely), the port is published on loopback only, and stopping is one `docker rm -f`
(OpenEnv's stop gives up after a 10 s `docker stop`, leaving the container). It also
reports a container that exited and the tail of its log.

The reaper is a small watcher process per run: it waits for its parent to end (however
it ends, SIGKILL included) and then removes every container and Swarm service carrying
the run's owner label. A normal stop closes it, which runs the same sweep.

Run as `python -m openenvgen_runtime.containers OWNER`, it is that watcher.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

from openenvgen_runtime import upstream
from openenvgen_runtime.errors import LaunchError

RUNTIME_LABEL = "openenvgen.runtime"
"""On every container and service this runtime starts."""
OWNER_LABEL = "openenvgen.owner"
"""One value per server pool: what the reaper removes."""


def docker(*args: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def ensure_image(image: str, *, mode: str, timeout: float) -> None:
    """The image is on this machine, or pulled now; otherwise a one-line LaunchError."""
    if docker("image", "inspect", image).returncode == 0:
        return
    try:
        pulled = docker("pull", "--quiet", image, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{mode}: image {image} is not on this machine and pulling it took over {timeout:g}s") from None
    if pulled.returncode != 0:
        raise LaunchError(
            f"{mode}: image {image} is not on this machine and cannot be pulled: {last_line(pulled.stderr)}"
        )


def label_args(flag: str, labels: dict[str, str]) -> list[str]:
    args: list[str] = []
    for key, value in labels.items():
        args += [flag, f"{key}={value}"]
    return args


def _provider_class() -> type:
    LocalDockerProvider = upstream.openenv_module("openenv.core.containers.runtime").LocalDockerProvider

    class LabelledDockerProvider(LocalDockerProvider):
        """OpenEnv's local Docker provider with labelled containers on a loopback port."""

        def __init__(self, labels: dict[str, str]) -> None:
            super().__init__()
            self.labels = labels

        def start_container(
            self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **_: Any
        ) -> str:
            port = port or self._find_available_port()
            # OpenEnv names containers by the millisecond; launches in parallel need more.
            self._container_name = f"{self._generate_container_name(image)}-{uuid.uuid4().hex[:6]}"
            command = ["docker", "run", "-d", "--name", self._container_name, "-p", f"127.0.0.1:{port}:8000"]
            command += label_args("--label", self.labels)
            for key, value in (env_vars or {}).items():
                command += ["-e", f"{key}={value}"]
            command.append(image)
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise LaunchError(f"use_docker: `docker run {image}` failed: {last_line(result.stderr)}")
            self._container_id = result.stdout.strip()
            return f"http://127.0.0.1:{port}"

        def stop_container(self) -> None:
            if self._container_id is not None:
                with contextlib.suppress(subprocess.SubprocessError, OSError):
                    docker("rm", "-f", self._container_id, timeout=60)
            self._container_id = None
            self._container_name = None

        def exit_code(self) -> int | None:
            """The container's exit code once it has stopped (-1 when it is gone)."""
            if self._container_id is None:
                return None
            state = docker("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}}", self._container_id)
            if state.returncode != 0:
                return -1
            running, code = state.stdout.split()
            return None if running == "true" else int(code)

        def log_tail(self, lines: int) -> str:
            if self._container_id is None:
                return ""
            logs = docker("logs", "--tail", str(lines), self._container_id)
            return (logs.stdout + logs.stderr).strip()

    return LabelledDockerProvider


def docker_provider(labels: dict[str, str]) -> Any:
    try:
        return _provider_class()(labels)
    except RuntimeError as e:  # OpenEnv's "Docker is not available"
        raise LaunchError(f"use_docker: {e}") from None


def remove_owned(owner: str, wait: float = 30.0) -> None:
    """Remove every service and container labelled with `owner`; wait for them to go."""
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
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.5)


class Reaper:
    """The watcher process that removes this run's containers and services when it ends."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._process = subprocess.Popen(
            [sys.executable, "-m", "openenvgen_runtime.containers", owner],
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

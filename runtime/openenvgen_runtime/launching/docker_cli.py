"""The `docker` command line as the Docker and Swarm launch modes use it, and their labels.

Shared by `docker_provider`, `swarm_provider`, the run's `reaper` and the launcher; imports
nothing of OpenEnv, so the reaper (a process of its own) starts fast.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from openenvgen_runtime.launching.errors import LaunchError

RUNTIME_LABEL = "openenvgen.runtime"
"""On every container and service this runtime starts."""
OWNER_LABEL = "openenvgen.owner"
"""One value per server pool: what the reaper removes."""


def docker(*args: str, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `docker ARGS`, its output captured as text."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def last_line(text: str) -> str:
    """The last non-blank line of `text` (a docker error's message), stripped."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def label_args(flag: str, labels: dict[str, str]) -> list[str]:
    """`labels` as repeated `FLAG key=value` arguments (`--label`, `--container-label`)."""
    args: list[str] = []
    for key, value in labels.items():
        args += [flag, f"{key}={value}"]
    return args


def require_docker(mode: str = "use_docker") -> None:
    """A one-line LaunchError unless a `docker` command and a daemon that answers it exist."""
    if shutil.which("docker") is None:
        raise LaunchError(f"{mode}: no `docker` command on this machine")
    try:
        subprocess.run(["docker", "info"], check=True, capture_output=True, timeout=15)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        raise LaunchError(f"{mode}: no Docker daemon answers (`docker info` failed)") from None


def ensure_image(image: str, *, mode: str, timeout: float) -> None:
    """The image is on this machine, or pulled now; otherwise a one-line LaunchError."""
    if docker("image", "inspect", image).returncode == 0:
        return
    try:
        pulled = docker("pull", "--quiet", image, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"{mode}: image {image} is not on this machine and pulling it took over {timeout:g}s"
        ) from None
    if pulled.returncode != 0:
        raise LaunchError(
            f"{mode}: image {image} is not on this machine and cannot be pulled: {last_line(pulled.stderr)}"
        )


def image_config(image: str, *, mode: str) -> dict[str, Any]:
    """The image's `Config` (command, user, ...) from this engine's copy; a one-line LaunchError
    when it cannot be read."""
    found = docker("image", "inspect", "--format", "{{json .Config}}", image)
    if found.returncode != 0:
        raise LaunchError(f"{mode}: cannot read the command of image {image}: {last_line(found.stderr)}")
    return json.loads(found.stdout) or {}


def image_command(
    image: str, *, mode: str, command: list[str] | str | None = None, config: dict[str, Any] | None = None
) -> list[str]:
    """The command a container of `image` runs: its Entrypoint, then `command` (a list, or a
    string split on spaces) or else its Cmd; read from `config` or this engine's copy of the
    image. A one-line LaunchError when it cannot be read or names no command."""
    config = image_config(image, mode=mode) if config is None else config
    cmd = (command.split() if isinstance(command, str) else list(command)) if command else config.get("Cmd") or []
    whole = [str(part) for part in [*(config.get("Entrypoint") or []), *cmd]]
    if not whole:
        hint = "; set `command`" if mode == "use_swarm" else ""
        raise LaunchError(f"{mode}: image {image} names no command (Entrypoint or Cmd) for its server{hint}")
    return whole


def service_tasks(service: str) -> list[dict[str, Any]]:
    """`docker inspect` of each task of a Swarm service (one per replica, past ones too)."""
    ids = docker("service", "ps", "-q", "--no-trunc", service).stdout.split()
    if not ids:
        return []
    inspected = docker("inspect", *ids)
    return json.loads(inspected.stdout) if inspected.returncode == 0 else []


FAILED_TASKS = 3
"""Failed tasks of a service (ones that could not start, or exited) that make it a failure."""


def task_failure(tasks: list[dict[str, Any]]) -> str | None:
    """Why Swarm cannot run a service's tasks, or None while it may yet: a rejected task (no
    such image, nothing to run it with) at once; tasks that failed (could not start, or
    exited) once `FAILED_TASKS` of them have, the latest named. Swarm restarts a failed task,
    and one failure can be passing: a daemon at times cannot remount a task's secrets or
    configs read-only ("device or resource busy", moby/moby#48783)."""
    failed = []
    for task in tasks:
        status = task.get("Status", {})
        if not status.get("Err"):
            continue
        if status.get("State") == "rejected":
            return f"rejected: {status['Err']}"
        if status.get("State") == "failed":
            failed.append(status)
    if len(failed) < FAILED_TASKS:
        return None
    latest = max(failed, key=lambda status: str(status.get("Timestamp", "")))
    return f"failed: {latest['Err']}"


def node_address(node: str) -> str:
    """A Swarm node's address as this machine reaches it (127.0.0.1 for a node without one)."""
    addr = docker("node", "inspect", node, "--format", "{{.Status.Addr}}").stdout.strip()
    return "127.0.0.1" if addr in {"", "0.0.0.0"} else addr

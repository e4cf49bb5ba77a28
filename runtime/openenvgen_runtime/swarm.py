"""Docker Swarm as the multi-machine engine: one service of N replicas per run.

`SwarmService` is OpenEnv's `DockerSwarmProvider` with one change to how the service is
published: instead of one port on Swarm's routing mesh (which hands each connection to
some replica, so no replica's session capacity can be learnt), every replica publishes
port 8000 on its own node port (`mode=host`, port chosen by Docker). The pool then
addresses each replica as a server of its own, spreading episodes over them and learning
each one's capacity, wherever the swarm placed it. Swarm replaces a replica that dies;
`replicas()` lists the ones running now. Labels go on the service and its containers,
so the run's reaper removes them on every path.

The swarm must already exist (`docker swarm init`, or nodes joined to a manager): the
runtime never initialises one behind the user's back.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from typing import Any

from openenvgen_runtime import upstream
from openenvgen_runtime.containers import docker, label_args, last_line
from openenvgen_runtime.errors import LaunchError

SERVICE_OPTIONS = ("cpu_limit", "memory_limit", "constraints", "command", "overlay_network")


def _provider_class() -> type:
    DockerSwarmProvider = upstream.openenv_module("openenv.core.containers.runtime").DockerSwarmProvider

    class SwarmService(DockerSwarmProvider):
        """OpenEnv's Swarm provider with every replica published on its own node port."""

        def __init__(self, labels: dict[str, str], overlay_network: str | None = None) -> None:
            self.labels = labels
            self.image = ""
            super().__init__(auto_init_swarm=False, overlay_network=overlay_network)

        def start_container(
            self,
            image: str,
            port: int | None = None,
            env_vars: dict[str, str] | None = None,
            *,
            replicas: int = 2,
            cpu_limit: float | str | None = None,
            memory_limit: str | None = None,
            constraints: list[str] | None = None,
            command: list[str] | str | None = None,
            **_: Any,
        ) -> str:
            self.image = image
            self._service_name = self._generate_service_name(image)
            cmd = ["docker", "service", "create", "--detach", "--name", self._service_name]
            cmd += ["--replicas", str(max(1, replicas)), "--publish", "mode=host,target=8000"]
            cmd += label_args("--label", self.labels) + label_args("--container-label", self.labels)
            if self._overlay_network:
                cmd += ["--network", self._overlay_network]
            for key, value in (env_vars or {}).items():
                cmd += ["--env", f"{key}={value}"]
            if cpu_limit is not None:
                cmd += ["--limit-cpu", str(cpu_limit)]
            if memory_limit is not None:
                cmd += ["--limit-memory", str(memory_limit)]
            for constraint in constraints or ():
                cmd += ["--constraint", constraint]
            cmd.append(image)
            if command:
                cmd += command.split() if isinstance(command, str) else list(command)
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                raise LaunchError(f"use_swarm: `docker service create` failed: {last_line(result.stderr)}")
            self._service_id = result.stdout.strip()
            return self._service_name

        def _tasks(self) -> list[dict[str, Any]]:
            if not self._service_name:
                return []
            ids = docker("service", "ps", "-q", "--no-trunc", self._service_name).stdout.split()
            if not ids:
                return []
            inspected = docker("inspect", *ids)
            return json.loads(inspected.stdout) if inspected.returncode == 0 else []

        def replicas(self) -> list[str]:
            """Base URLs of the replicas running now, one per task."""
            addresses: dict[str, str] = {}
            urls = []
            for task in self._tasks():
                status = task.get("Status", {})
                if status.get("State") != "running" or task.get("DesiredState") != "running":
                    continue
                ports = [p for p in (status.get("PortStatus", {}).get("Ports") or []) if p.get("TargetPort") == 8000]
                if not ports:
                    continue
                node = task.get("NodeID", "")
                if node not in addresses:
                    addr = docker("node", "inspect", node, "--format", "{{.Status.Addr}}").stdout.strip()
                    addresses[node] = "127.0.0.1" if addr in {"", "0.0.0.0"} else addr
                urls.append(f"http://{addresses[node]}:{ports[0]['PublishedPort']}")
            return sorted(set(urls))

        def failure(self) -> str | None:
            """The swarm's reason when replicas cannot start (no such image, no node fits)."""
            for task in self._tasks():
                status = task.get("Status", {})
                if status.get("State") in {"rejected", "failed"} and status.get("Err"):
                    return f"{status['State']}: {status['Err']}"
            return None

        def log_tail(self, lines: int) -> str:
            if not self._service_name:
                return ""
            logs = docker("service", "logs", "--raw", "--tail", str(lines), self._service_name, timeout=30)
            return (logs.stdout + logs.stderr).strip()

        def exit_code(self) -> int | None:
            # Swarm restarts replicas itself; the service as a whole never "exits".
            return None

        def stop_container(self) -> None:
            name = self._service_name
            if name:
                with contextlib.suppress(subprocess.SubprocessError, OSError):
                    docker("service", "rm", name, timeout=60)
                    # The service's containers go down shortly after; wait so a caller that
                    # checks `docker ps -a` right after stop finds nothing.
                    deadline = time.monotonic() + 30
                    selector = f"label=com.docker.swarm.service.name={name}"
                    while docker("ps", "-aq", "--filter", selector).stdout.split() and time.monotonic() < deadline:
                        time.sleep(0.5)
            self._service_name = None
            self._service_id = None

    return SwarmService


def start(
    env_id: str, image: str, provider_kwargs: dict[str, Any], *, replicas: int, labels: dict[str, str], timeout: float
) -> Any:
    """Create the service (not waiting for its replicas); returns the provider."""
    from openenvgen_runtime.containers import ensure_image
    from openenvgen_runtime.launch import require_docker

    require_docker("use_swarm")
    state = docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip() or "unknown"
    if state != "active":
        raise LaunchError(
            f"use_swarm: this Docker engine is not part of a swarm (state: {state}); "
            "run `docker swarm init` (or `docker swarm join` to a manager) first"
        )
    manager = docker("info", "--format", "{{.Swarm.ControlAvailable}}").stdout.strip()
    if manager != "true":
        raise LaunchError("use_swarm: this Docker engine is a swarm worker; run the eval on a manager node")
    ensure_image(image, mode="use_swarm", timeout=timeout)
    options = {k: v for k, v in provider_kwargs.items() if k in SERVICE_OPTIONS}
    try:
        provider = _provider_class()(labels, overlay_network=options.pop("overlay_network", None))
    except RuntimeError as e:
        raise LaunchError(f"use_swarm: {e}") from None
    provider.start_container(image, env_vars=provider_kwargs.get("env_vars"), replicas=replicas, **options)
    return provider

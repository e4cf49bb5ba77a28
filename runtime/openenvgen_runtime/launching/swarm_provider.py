"""The Swarm launch mode: one Docker Swarm service of N replicas per run, the multi-machine engine.

`SwarmService` is OpenEnv's `DockerSwarmProvider` with one change to how the service is
published: instead of one port on Swarm's routing mesh (which hands each connection to
some replica, so no replica's session capacity can be learnt), every replica publishes
its access gate's port on its own node port (`mode=host`, port chosen by Docker): the
gate (`swarm_gate`) admits only requests that carry the launch's secret, which Swarm
delivers to the replicas as a Swarm secret, and runs the image's own command behind it
on the container's port 8000, unpublished. The pool then
addresses each replica as a server of its own, spreading episodes over them and learning
each one's capacity, wherever the swarm placed it. Swarm replaces a replica that dies;
`replicas()` lists the ones running now. Labels go on the service and its containers,
and on the launch's secret and gate config, so the run's reaper removes them on every
path. A replica's environment is `env_vars` (`--env NAME=VALUE`, in the service's spec)
and the `pass_env` variables, each delivered as a Swarm secret of the launch that the gate
sets in its server's environment (`--env NAME` would put the value in the spec).

A sandbox without network (`sandbox_network = "none"`) changes how replicas are reached:
they publish nothing and sit on an internal network of their own, behind the launch's
router (`swarm_isolation`), and each is addressed by a loopback relay of this process,
which adds the launch's secret itself.

The swarm must already exist (`docker swarm init`, or nodes joined to a manager): the
runtime never initialises one behind the user's back. Importing this module imports
OpenEnv's providers: `launch` imports it only for a Swarm run.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openenvgen_runtime.launching.docker_cli import (
    docker,
    label_args,
    last_line,
    node_address,
    service_tasks,
    task_failure,
)
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.launching.sandbox.hardening import USER
from openenvgen_runtime.launching.swarm_gate import GATE_PORT, SwarmGate, server_command
from openenvgen_runtime.launching.swarm_isolation import IsolatedNetwork, dns_warning
from openenvgen_servers.environment import container_env_args, passed_values
from openenvgen_servers.logs import DEFAULT_LOG_LIMIT

logger = logging.getLogger(__name__)

SERVICE_OPTIONS = ("cpu_limit", "memory_limit", "constraints")
"""`provider_kwargs` that shape the service (besides `env_vars` and `overlay_network`)."""

if TYPE_CHECKING:  # the checker reads OpenEnv's class; at run time it is imported without the web UI
    from openenv.core.containers.runtime import DockerSwarmProvider
else:
    DockerSwarmProvider = openenv_module("openenv.core.containers.runtime").DockerSwarmProvider


class SwarmService(DockerSwarmProvider):
    """OpenEnv's Swarm provider with every replica published on its own node port."""

    hardening: list[str] = []  # noqa: RUF012 - replaced, never mutated
    """`docker service create` arguments of the run's sandbox (`sandbox.hardening`)."""
    log_args: list[str] = DEFAULT_LOG_LIMIT.docker_args()  # noqa: RUF012 - replaced, never mutated
    """`docker service create` arguments that rotate each replica's log (the run's `LogLimit`)."""

    def __init__(
        self,
        image: str,
        *,
        labels: dict[str, str],
        replica_count: int,
        env_vars: dict[str, str] | None = None,
        pass_env: Sequence[str] = (),
        overlay_network: str | None = None,
        server_command: Sequence[str] = (),
        isolated: bool = False,
        **service_options: Any,
    ) -> None:
        # RuntimeError when no Docker answers or no swarm is active; creates the overlay network.
        super().__init__(auto_init_swarm=False, overlay_network=overlay_network)
        self.image = image
        self.labels = labels
        self.replica_count = replica_count
        self.env_vars = env_vars
        self.pass_env = list(pass_env)
        self.network = overlay_network
        self.service_options = service_options
        self.service_name: str | None = None
        self.server_command = list(server_command)
        """What each replica's gate starts: the image's Entrypoint and Cmd (or `command`)."""
        self.gate = SwarmGate(labels)
        self.isolated = (
            IsolatedNetwork(labels, image, service_options.get("constraints"), headers=self.gate.request_headers())
            if isolated
            else None
        )
        """The replicas' own network and router, for a sandbox without network: its relays
        add the launch's secret themselves."""
        self._nodes: dict[str, str] = {}

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
        **_: Any,
    ) -> str:
        """Create the service (not waiting for its replicas); returns its name, as its
        replicas have a base URL each (see `replicas`)."""
        name = f"{image.split('/')[-1].split(':')[0]}-swarm-{uuid.uuid4().hex[:12]}"
        self.gate.create(passed_values(self.pass_env, env_vars))
        if self.isolated is not None:
            try:
                self.isolated.create(name, self.gate.program)
            except LaunchError:
                self.gate.remove()
                raise
        gate_options, gate_command = self.gate.service_args(
            self.server_command,
            publish=self.isolated is None,
            server_user=USER if self.hardening else None,
            wall=f"tasks.{self.isolated.router}" if self.isolated is not None else "",
        )
        cmd = ["docker", "service", "create", "--detach", "--name", name]
        cmd += ["--replicas", str(max(1, replicas)), *gate_options]
        cmd += label_args("--label", self.labels) + label_args("--container-label", self.labels)
        if self.isolated is not None:
            cmd += self.isolated.replica_args()
        elif self.network:
            cmd += ["--network", self.network]
        cmd += container_env_args("--env", env_vars, ())  # the pass_env values are the gate's (secrets)
        cmd += self.hardening  # the sandbox's, when the run has one (launch.make_provider)
        cmd += self.log_args
        if cpu_limit is not None:
            cmd += ["--limit-cpu", str(cpu_limit)]
        if memory_limit is not None:
            cmd += ["--limit-memory", str(memory_limit)]
        for constraint in constraints or ():
            cmd += ["--constraint", constraint]
        cmd.append(image)
        cmd += gate_command
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            if self.isolated is not None:
                self.isolated.remove()
            self.gate.remove()
            raise LaunchError(f"use_swarm: `docker service create` failed: {last_line(result.stderr)}")
        self.service_name = name
        return name

    def stop_container(self) -> None:
        """Remove the service, and wait for its containers to go."""
        name = self.service_name
        if name:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                docker("service", "rm", name, timeout=60)
                # The service's containers go down shortly after; wait so a caller that
                # checks `docker ps -a` right after stop finds nothing.
                deadline = time.monotonic() + 30
                selector = f"label=com.docker.swarm.service.name={name}"
                while docker("ps", "-aq", "--filter", selector).stdout.split() and time.monotonic() < deadline:
                    time.sleep(0.5)
        if self.isolated is not None:
            self.isolated.remove()
        self.gate.remove()
        self.service_name = None

    def task_states(self) -> list[dict[str, Any]]:
        """`docker inspect` of each of the service's tasks (one per replica, past ones too)."""
        return service_tasks(self.service_name) if self.service_name else []

    # -- the pool's ReplicatedProvider --------------------------------------------------

    def launch(self) -> list[str]:
        """Create the service; no URL yet (its replicas come from `replicas`)."""
        self.start_container(self.image, env_vars=self.env_vars, replicas=self.replica_count, **self.service_options)
        return []

    def replicas(self) -> list[str]:
        """Base URLs of the replicas running now, one per task."""
        if self.isolated is not None:
            return self.isolated.urls(self.task_states())
        urls = []
        for task in self.task_states():
            status = task.get("Status", {})
            if status.get("State") != "running" or task.get("DesiredState") != "running":
                continue
            ports = [p for p in (status.get("PortStatus", {}).get("Ports") or []) if p.get("TargetPort") == GATE_PORT]
            if not ports:
                continue
            node = task.get("NodeID", "")
            if node not in self._nodes:
                self._nodes[node] = node_address(node)
            urls.append(f"http://{self._nodes[node]}:{ports[0]['PublishedPort']}")
        return sorted(set(urls))

    def request_headers(self) -> dict[str, str]:
        """What every request to a replica carries: the launch's secret (see `swarm_gate`).
        None for replicas without network: their relays add it, and their loopback URLs
        are then all a run's clients reach them by (no second relay in front)."""
        return {} if self.isolated is not None else self.gate.request_headers()

    def failure(self) -> str | None:
        """The swarm's reason when replicas (or their router) cannot start (no such
        image, no node fits; a start that keeps failing: `task_failure`)."""
        problem = task_failure(self.task_states())
        if problem is None and self.isolated is not None:
            return self.isolated.failure()
        return problem

    def exit_code(self) -> int | None:
        """Always None: Swarm restarts replicas itself, so the service as a whole never exits."""
        return None

    def log_tail(self, lines: int = 15) -> str:
        """The service's last log lines, all replicas together."""
        if not self.service_name:
            return ""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            logs = docker("service", "logs", "--raw", "--tail", str(lines), self.service_name, timeout=30)
            return (logs.stdout + logs.stderr).strip()
        return ""

    def stop(self) -> None:
        """`stop_container`."""
        self.stop_container()


def provider_for(
    image: str,
    options: dict[str, Any],
    *,
    labels: dict[str, str],
    replicas: int,
    timeout: float,
    isolated: bool = False,
) -> SwarmService:
    """A Swarm service for `image`, not created yet (its replicas without network when
    `isolated`); one-line LaunchErrors for an engine outside a swarm or a worker node, and
    for an `overlay_network` asked of replicas without network. The image's command is read here, for the gate to
    start it: from the manager's copy of the image, pulled first when the manager has none
    (the nodes that run the replicas pull it themselves, on a cluster from a registry)."""
    if isolated and options.get("overlay_network"):
        raise LaunchError(
            "overlay_network: the sandbox keeps replicas off every network but their own "
            f"(sandbox_network = none); set sandbox_network = egress to attach them to {options['overlay_network']}"
        )
    state = docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip() or "unknown"
    if state != "active":
        raise LaunchError(
            f"use_swarm: this Docker engine is not part of a swarm (state: {state}); "
            "run `docker swarm init` (or `docker swarm join` to a manager) first"
        )
    manager = docker("info", "--format", "{{.Swarm.ControlAvailable}}").stdout.strip()
    if manager != "true":
        raise LaunchError("use_swarm: this Docker engine is a swarm worker; run the eval on a manager node")
    if isolated and (warning := dns_warning()) is not None:
        logger.warning(warning)
    service_options = {k: v for k, v in options.items() if k in SERVICE_OPTIONS}
    command = server_command(image, options.get("command"), timeout=timeout)
    try:
        return SwarmService(
            image,
            labels=labels,
            replica_count=replicas,
            env_vars=options.get("env_vars"),
            pass_env=options.get("pass_env", ()),
            overlay_network=options.get("overlay_network"),
            server_command=command,
            isolated=isolated,
            **service_options,
        )
    except RuntimeError as e:
        raise LaunchError(f"use_swarm: {e}") from None

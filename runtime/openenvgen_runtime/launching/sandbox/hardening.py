"""What a sandboxed container is: its limits, its runtime (runc or gVisor's runsc), and the
`docker` arguments that make it, for `docker run` and `docker service create` alike.

`Sandbox` is made once per run from the taskset's settings (`sandbox_for`); `hardening_args`
is the one place the hardening is spelt, for both launch modes: a non-root user, no
capabilities, a read-only root with a scratch tmpfs at /tmp (HOME), memory, process and CPU
limits, no swap beyond the memory limit (for a Swarm service, where the engine and the
`docker` CLI take it: `swarm_swap_warning`), and, for `docker run`, `no-new-privileges`, no
network (`sandbox_network = "none"`) and the chosen runtime (which must serve the host the
container's socket, `shim`). `docker service create` has no `--security-opt`, `--runtime`
or network-less mode: a Swarm replica runs on its node's default runtime, and without
network it is kept on an internal network of its launch behind a router instead
(`swarm_isolation`; docs: Security).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Literal

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.launching.docker_cli import docker
from openenvgen_runtime.launching.errors import LaunchError

USER = "65534:65534"
"""nobody:nogroup, on every Linux image: the model's code runs as no user of the image's."""
logger = logging.getLogger(__name__)

SCRATCH = "/tmp"
"""The one writable place in a sandboxed container (a tmpfs), and its HOME."""
SERVICE_SWAP_API = (1, 52)
"""The Engine API version whose services take a swap limit (moby/moby#51114, Docker 29)."""
UDS_FLAG = "--host-uds"
"""runsc's option that lets a sandboxed process serve a Unix socket the host connects to."""


@dataclass(frozen=True)
class Sandbox:
    """A run's sandbox: limits, network and runtime, the same for each of its containers."""

    runtime: str
    """"runc" or "runsc"; for Swarm, always the node's default (said as "runc")."""
    memory: str
    pids: int
    cpus: float
    scratch: str
    network: Literal["none", "egress"]
    swap_capped: bool = True
    """Whether its containers get no swap beyond `memory` (a Swarm service: where the engine takes it)."""

    @property
    def isolated(self) -> bool:
        """No network beyond the server's own way in: a container's shim socket, a Swarm
        replica's internal network behind its launch's router."""
        return self.network == "none"

    def describe(self, mode: str) -> str:
        """The launch line's words for it: `sandboxed on runsc, no network`."""
        on = "the node's runtime" if mode == "swarm" else self.runtime
        net = "no network" if self.isolated else "network egress"
        return f"sandboxed on {on}, {net}"


SHIM_CAPABILITIES = ("SETUID", "SETGID", "DAC_OVERRIDE")
"""What the shim of a container holds (as the container's root) to create its socket in the
host's private folder and become `USER` (and, with network, NET_ADMIN to keep the server's
port off it); the server it starts holds none."""
GATE_CAPABILITIES = ("SETUID", "SETGID")
"""What a Swarm replica's gate holds (as the container's root, so that it alone reads the
launch's secret) to become `USER` for the server it starts, which holds none; without
network, NET_ADMIN too, to route every other replica's address nowhere (`--wall`)."""


def hardening_args(sandbox: Sandbox, cli: Literal["run", "service"]) -> list[str]:
    """The hardening as `docker run` (`cli="run"`) or `docker service create` arguments."""
    tmpfs = f"{SCRATCH}:rw,nosuid,nodev,size={sandbox.scratch}"
    args = ["--cap-drop", "ALL", "--read-only"]
    # The gate (`swarm_gate`) or the shim (`shim`) starts as root with these alone and runs
    # the server as USER; NET_ADMIN walls a Swarm replica without network off the others, or
    # keeps a container's server port off its network.
    capabilities: tuple[str, ...] = SHIM_CAPABILITIES if cli == "run" else GATE_CAPABILITIES
    capabilities += ("NET_ADMIN",) if (cli == "service") == sandbox.isolated else ()
    args += ["--user", "0:0", *(arg for cap in capabilities for arg in ("--cap-add", cap))]
    if cli == "run":
        args += ["--security-opt", "no-new-privileges", "--tmpfs", tmpfs]
        args += ["--memory", sandbox.memory, "--memory-swap", sandbox.memory]
        args += ["--pids-limit", str(sandbox.pids), "--cpus", f"{sandbox.cpus:g}", "--env", f"HOME={SCRATCH}"]
        args += ["--runtime", sandbox.runtime]
        if sandbox.isolated:
            args += ["--network", "none"]
        return args
    args += ["--mount", f"type=tmpfs,destination={SCRATCH},tmpfs-size={_bytes(sandbox.scratch)}"]
    args += ["--limit-memory", sandbox.memory, "--limit-pids", str(sandbox.pids)]
    args += ["--memory-swap", sandbox.memory] if sandbox.swap_capped else []
    args += ["--limit-cpu", f"{sandbox.cpus:g}", "--env", f"HOME={SCRATCH}"]
    return args


def _bytes(size: str) -> int:
    """A size as the config takes it (`256m`: digits and an optional b, k, m or g) in bytes,
    as `--mount tmpfs-size` wants it."""
    text = size.strip().lower()
    if text[-1:].isalpha():
        return int(text[:-1]) * {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[text[-1]]
    return int(text)


def wanted(config: AdapterConfig, mode: str) -> bool:
    """Whether this run's servers are sandboxed: `sandbox` when set, else on for a package
    whose env runs model-written code in a container launch; a one-line LaunchError for a
    sandbox asked of a launch that runs no container."""
    if config.sandbox and mode == "uv":
        raise LaunchError(
            "sandbox = true needs a container launch: set use_docker = true (--env.taskset.use-docker true) "
            "or use_swarm = true"
        )
    if config.sandbox is not None:
        return config.sandbox and mode != "uv"
    return type(config).EXECUTES_CODE and mode in {"docker", "swarm"}


def daemon_runtimes() -> dict[str, dict[str, object]]:
    """The runtimes the Docker daemon offers (`docker info`), by name, with their settings."""
    found = docker("info", "--format", "{{json .Runtimes}}")
    if found.returncode != 0:
        return {}
    try:
        runtimes = json.loads(found.stdout or "{}")
    except json.JSONDecodeError:
        return {}
    return runtimes if isinstance(runtimes, dict) else {}


def _serves_sockets(settings: dict[str, object]) -> bool:
    """Whether a runsc runtime's arguments let the sandbox serve the host a Unix socket."""
    args = settings.get("runtimeArgs")
    return isinstance(args, list) and any(str(a).startswith(UDS_FLAG) and not str(a).endswith("=none") for a in args)


def choose_runtime(config: AdapterConfig, mode: str) -> str:
    """runc or runsc, from `container_runtime`, the network and what the daemon offers;
    one-line LaunchErrors for a runtime asked for that the daemon cannot run this sandbox on."""
    if mode == "swarm":
        if config.container_runtime == "runsc":
            raise LaunchError(
                "container_runtime = runsc: `docker service create` cannot choose a runtime; "
                "make runsc the default runtime of the swarm's nodes and leave container_runtime auto"
            )
        return "runc"
    # With egress, the shim keeps the server's port off the container's network by a routing
    # rule, which gVisor's network stack is not known to take: `auto` is runc there.
    if config.container_runtime == "runc" or (
        config.container_runtime == "auto" and config.sandbox_network == "egress"
    ):
        return "runc"
    runtimes = daemon_runtimes()
    runsc = runtimes.get("runsc")
    usable = isinstance(runsc, dict) and _serves_sockets(runsc)
    if config.container_runtime == "runsc" and not usable:
        why = (
            "this Docker daemon offers no runsc runtime"
            if runsc is None
            else f"the daemon's runsc runtime lacks {UDS_FLAG}=all, which the container's socket needs"
        )
        raise LaunchError(f"container_runtime = runsc: {why} (its runtimes: {', '.join(sorted(runtimes)) or 'none'})")
    return "runsc" if usable else "runc"


def swarm_swap_warning() -> str | None:
    """None when this engine (API 1.52 on) and `docker` CLI (`service create --memory-swap`)
    cap a service's swap; otherwise the one line that says they do not, and what it means."""
    found = docker("version", "--format", "{{.Server.Version}} {{.Server.APIVersion}}").stdout.split()
    version, api = (found + ["?", "?"])[:2]
    try:
        new_enough = tuple(int(part) for part in api.split(".")) >= SERVICE_SWAP_API
    except ValueError:
        new_enough = False
    if new_enough and "--memory-swap" in docker("service", "create", "--help").stdout:
        return None
    return (
        f"use_swarm: Docker Engine {version} (API {api}) and this docker CLI set no swap limit on a service "
        f"(API {'.'.join(map(str, SERVICE_SWAP_API))} and `docker service create --memory-swap` do): "
        "a sandboxed replica may also swap as much as sandbox_memory (Docker's default: memory and swap twice it)"
    )


def sandbox_for(config: AdapterConfig, mode: str) -> Sandbox | None:
    """Blocking (it may ask the daemon): the run's sandbox, or None when it runs without one;
    a Swarm launch whose engine cannot cap a replica's swap warns in one line."""
    if not wanted(config, mode):
        return None
    swap_warning = swarm_swap_warning() if mode == "swarm" else None
    if swap_warning is not None:
        logger.warning(swap_warning)
    return Sandbox(
        runtime=choose_runtime(config, mode),
        memory=config.sandbox_memory,
        pids=config.sandbox_pids,
        cpus=config.sandbox_cpus,
        scratch=config.sandbox_scratch,
        network=config.sandbox_network,
        swap_capped=swap_warning is None,
    )

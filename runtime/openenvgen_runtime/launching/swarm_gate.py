"""The access gate in front of every Swarm replica: only the run that launched it may use it.

A replica is published on its node's interfaces, where anyone who reaches the node could
open sessions. So each launch makes a random secret, hands it to Swarm as a Swarm secret
(`docker secret create`, the value on stdin: never on a command line, in the service's
spec or in a log), and ships the in-container program (`openenvgen_runtime.access.incontainer`,
standard library only) as a Swarm config, so both reach every node that runs a replica. Each
replica runs its `gate` role with the image's own `python3`: the gate starts the image's own
command (its Entrypoint and Cmd, read from the image, or `provider_kwargs.command` for the
Cmd) serving on the container's port 8000, and publishes only its own port, `GATE_PORT`,
where it requires `Authorization: Bearer SECRET` on every connection but an open `GET
/health`. The runtime presents the secret (`request_headers`) on its HTTP requests and,
through its loopback session relay, on each WebSocket session. In a sandboxed launch the
gate starts as root and runs the server as the sandbox's user (`server_user`), and the secret
file is root's alone (0400): the server, and the model's code it runs, cannot read it.

The `pass_env` variables reach the server the same way: the docker CLI would write an
`--env NAME`'s value into the service's spec (`docker service inspect` shows it), so each
set one becomes a Swarm secret of its own (value on stdin), mounted in the replica, and the
gate sets it as the variable of the server it starts (`--env-file NAME=FILE`): in the
server's environment, never on the gate's command line or in its own environment.

The secrets and the config are `SwarmObjects`: made with the run's labels, so the run's
reaper removes them with the service however the run ends, and removed by `remove` on a
normal stop (the router's networks and service too, `swarm_isolation`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Mapping
from importlib import resources

from openenvgen_runtime.launching.docker_cli import docker, ensure_image, image_command, label_args, last_line
from openenvgen_runtime.launching.errors import LaunchError

logger = logging.getLogger(__name__)

GATE_PORT = 18000
"""The port a replica publishes: its gate's (the server's own 8000 stays unpublished)."""
SERVER_PORT = 8000
"""Where the image's command serves, inside the container."""
SECRETS_DIR = "/run/secrets"
SECRET_FILE = f"{SECRETS_DIR}/openenvgen-access"
GATE_FILE = "/openenvgen-gate.py"
"""Where a replica has the in-container program."""


def program() -> bytes:
    """The in-container program's source, as shipped to the nodes."""
    return resources.files("openenvgen_runtime.access").joinpath("incontainer.py").read_bytes()


def server_command(image: str, command: list[str] | str | None, *, timeout: float) -> list[str]:
    """The command a replica of `image` runs (`image_command`), the image pulled first when
    this engine has none.

    The manager runs no replica, and a pull that fails here is not the swarm's answer: the
    nodes that run the replicas pull the image themselves (a drained manager may not reach
    their registry; an image no node can pull, the swarm rejects with its own reason, which
    the launch reports). So then one warning line, and `command` is the whole command (the
    Entrypoint is unknown here), or none: the gate then exits saying `command` is needed."""
    try:
        ensure_image(image, mode="use_swarm", timeout=timeout)
    except LaunchError as e:
        fallback = command.split() if isinstance(command, str) else list(command or [])
        then = "run `command` as the whole command" if fallback else "need `command` to start (set it)"
        logger.warning(f"{e}; the swarm's nodes pull it themselves, and its replicas {then}")
        return fallback
    return image_command(image, mode="use_swarm", command=command)


class SwarmObjects:
    """The labelled Swarm objects (secrets, configs, networks, services) a launch makes:
    each made with the run's labels and recorded, and `remove`d, newest first."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.made: list[tuple[str, str]] = []

    def create(self, kind: str, name: str, *args: str, content: bytes | None = None) -> None:
        """`docker KIND create` with the run's labels and `args` (NAME among them), `content`
        on stdin; a one-line LaunchError naming no value (everything made so far removed)."""
        command = ["docker", kind, "create", *label_args("--label", self.labels), *args]
        made = subprocess.run(command, input=content, capture_output=True, timeout=120)
        if made.returncode != 0:
            self.remove()
            error = last_line(made.stderr.decode(errors="replace"))
            raise LaunchError(f"use_swarm: `docker {kind} create` failed: {error}")
        self.made.append((kind, name))

    def remove(self) -> None:
        """Remove what was made, newest first; networks once the swarm frees them (shortly
        after the last container on them goes: one in use cannot be removed)."""
        made, self.made = self.made, []
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            for kind, name in reversed(made):
                if kind != "network":
                    docker(kind, "rm", name, timeout=60)
            networks = [name for kind, name in made if kind == "network"]
            deadline = time.monotonic() + 30
            while networks and time.monotonic() < deadline:
                networks = [n for n in networks if docker("network", "rm", n, timeout=60).returncode != 0]
                if networks:
                    time.sleep(0.5)


class SwarmGate:
    """One launch's secret and program config in the swarm, and the service arguments that use them."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.name = f"openenvgen-{uuid.uuid4().hex[:12]}"
        """What the secret (NAME-access) and the config (NAME-gate) are named after."""
        self.program = f"{self.name}-gate"
        """The program's config (the router mounts it too)."""
        self.objects = SwarmObjects(labels)
        self._token = secrets.token_urlsafe(32)
        self._variables: list[str] = []
        """The names of the variables made into secrets, in order (secret NAME-env-INDEX)."""
        self._empty: list[str] = []
        """The names of the variables set to "" (Swarm takes no empty secret; `--env NAME=`)."""

    def __repr__(self) -> str:  # never the token
        return f"SwarmGate({self.name!r})"

    def request_headers(self) -> dict[str, str]:
        """What a request to a replica must carry."""
        return {"Authorization": f"Bearer {self._token}"}

    def create(self, variables: Mapping[str, str] | None = None) -> None:
        """Make the secret, the program's config and a secret per variable of `variables` (the
        `pass_env` values) in the swarm (one-line LaunchErrors naming no value). An empty
        value goes as `--env NAME=`: Swarm takes no empty secret, and there is nothing to hide."""
        self.objects.create("secret", f"{self.name}-access", f"{self.name}-access", "-", content=self._token.encode())
        self.objects.create("config", self.program, self.program, "-", content=program())
        for name, value in (variables or {}).items():
            if value:
                secret = f"{self.name}-env-{len(self._variables)}"
                self.objects.create("secret", secret, secret, "-", content=os.fsencode(value))
                self._variables.append(name)
            else:
                self._empty.append(name)

    def service_args(
        self, server_command: list[str], *, publish: bool = True, server_user: str | None = None, wall: str = ""
    ) -> tuple[list[str], list[str]]:
        """(`docker service create` options, the command after the image): the gate
        mounted and run in front of `server_command`, only the gate's port published (none
        when `publish` is false: the replicas are then reached through their router). With
        `server_user` (UID:GID) the gate, root, runs the server as that user, and the secret
        files are root's alone; with `wall` (the routers' name) it routes every address of
        the replicas' network but the routers' nowhere."""
        owner = "uid=0,gid=0,mode=0400" if server_user else "mode=0444"
        options = ["--publish", f"mode=host,target={GATE_PORT}"] if publish else []
        options += [
            "--secret",
            f"source={self.name}-access,target={SECRET_FILE.rsplit('/', 1)[1]},{owner}",
            "--config",
            f"source={self.program},target={GATE_FILE},mode=0444",
            "--entrypoint",
            "python3",
        ]
        gate = ["-I", GATE_FILE, "gate", "--secret-file", SECRET_FILE]
        for index, name in enumerate(self._variables):
            options += ["--secret", f"source={self.name}-env-{index},target=openenvgen-env-{index},{owner}"]
            gate += ["--env-file", f"{name}={SECRETS_DIR}/openenvgen-env-{index}"]
        for name in self._empty:
            options += ["--env", f"{name}="]
        if server_user:
            gate += ["--user", server_user]
        if wall:
            gate += ["--wall", wall]
        gate += ["--listen", str(GATE_PORT), "--upstream", str(SERVER_PORT)]
        return options, [*gate, "--", *server_command]

    def remove(self) -> None:
        """Remove the secrets and config made (once no service uses them)."""
        self.objects.remove()
        self._variables, self._empty = [], []

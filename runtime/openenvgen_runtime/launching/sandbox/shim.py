"""A container's one way in: the shim, its socket folder and the host relay (every `docker run`).

For one `docker run`: `ShimSocket.prepare` reads the image's own command and user (`docker
image inspect`: Entrypoint then Cmd, unchanged) and makes a private folder for the socket,
marked with the run's owner (`folders`: the run's reaper removes it if the run dies);
`run_args` bind-mounts that folder and the in-container programs (read-only) and starts
`access.socket_shim` with the image's `python3` in place of the entrypoint, as root: the shim creates
the socket, keeps the server's port from answering anything but loopback when the container
has a network (`--wall`: it holds CAP_NET_ADMIN, the server does not) and runs the image's
command as the sandbox's user or else the image's own; `connect` starts the host's `Relay`
to the socket and returns its loopback URL (no port is published); `close` stops the relay
and removes the folder, on every path (a failed `docker run` included).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from openenvgen_runtime.access import incontainer, socket_shim
from openenvgen_runtime.launching.docker_cli import image_command, image_config
from openenvgen_runtime.launching.sandbox import folders
from openenvgen_runtime.launching.sandbox.relay import Relay

PYTHON = "python3"
"""The image's interpreter that runs the program (found on the image's PATH)."""
MOUNT = "/run/openenvgen"
"""Where the socket folder is in the container; the program is beside it."""
SOCKET = "server.sock"
UNSANDBOXED_ARGS = ["--user", "0:0", "--cap-add", "NET_ADMIN"]
"""What the shim of a container without the sandbox holds beyond Docker's default capabilities
(which let it enter the host's private folder and become the image's user)."""


class ShimSocket:
    """The socket folder, shim and relay of one container."""

    def __init__(self, command: list[str], user: str, owner: str | None = None) -> None:
        self.command = command
        self.user = user
        """The image's own user ("" for root), which the server runs as without the sandbox."""
        self.owner = owner
        self.folder = folders.make(owner)
        # Ours alone (0700): the shim creates the socket here as the container's root; the
        # server's user, and so model code, cannot enter it, nor can another local user.
        self.sockets = self.folder / "socket"
        self.sockets.mkdir(mode=0o700)
        self.relay: Relay | None = None

    @classmethod
    def prepare(cls, image: str, owner: str | None = None) -> ShimSocket:
        """For a container of `image` of the run whose owner label value is `owner`."""
        config = image_config(image, mode="use_docker")
        return cls(image_command(image, mode="use_docker", config=config), str(config.get("User") or ""), owner)

    def run_args(self, image: str, *, user: str | None, network: bool) -> list[str]:
        """`docker run` arguments from the entrypoint on: mounts, the shim, the image, its
        command; the server runs as `user` (None: the image's own), and with a `network` its
        port answers loopback alone."""
        shim, relaying = Path(socket_shim.__file__).resolve(), Path(incontainer.__file__).resolve()
        user = user or self.user or None
        return [
            "--volume",
            f"{self.sockets}:{MOUNT}/socket",
            "--volume",
            f"{relaying}:{MOUNT}/incontainer.py:ro",
            "--volume",
            f"{shim}:{MOUNT}/socket_shim.py:ro",
            "--entrypoint",
            PYTHON,
            image,
            f"{MOUNT}/socket_shim.py",
            *(["--user", user] if user else []),
            *(["--wall"] if network else []),
            f"{MOUNT}/socket/{SOCKET}",
            *self.command,
        ]

    def connect(self, port: int = 0) -> str:
        """Start the host's relay (on 127.0.0.1:`port`, 0 for a free one) to the container's
        socket; its loopback URL."""
        self.relay = Relay.to_socket(str(self.sockets / SOCKET), self.owner, port=port)
        return self.relay.url

    def close(self) -> None:
        """Stop the relay and remove the folder."""
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        with contextlib.suppress(OSError):
            shutil.rmtree(self.folder, ignore_errors=True)


def no_python(stderr: str) -> bool:
    """Whether a failed `docker run` says the image has no `python3` to run the shim."""
    return PYTHON in stderr and ("not found" in stderr or "no such file" in stderr.lower())

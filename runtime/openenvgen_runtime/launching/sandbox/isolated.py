"""A network-less sandboxed container's way in: the shim, its socket folder and the host relay.

For one `docker run`: `Isolated.prepare` reads the image's own command (`docker image
inspect`: Entrypoint then Cmd, unchanged) and makes a private folder for the socket, marked
with the run's owner (`folders`: the run's reaper removes it if the run dies);
`run_args` bind-mounts that folder and the in-container program (read-only) and starts its
`shim` role with the image's `python3` in place of the entrypoint; `connect` starts the host's `Relay` to the
socket and returns its loopback URL; `close` stops the relay and removes the folder, on
every path (a failed `docker run` included).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from openenvgen_runtime.access import incontainer
from openenvgen_runtime.launching.docker_cli import image_command
from openenvgen_runtime.launching.sandbox import folders
from openenvgen_runtime.launching.sandbox.hardening import USER
from openenvgen_runtime.launching.sandbox.relay import Relay

PYTHON = "python3"
"""The image's interpreter that runs the program (found on the image's PATH)."""
MOUNT = "/run/openenvgen"
"""Where the socket folder is in the container; the program is beside it."""
SOCKET = "server.sock"


class Isolated:
    """The socket folder, shim and relay of one sandboxed container without network."""

    def __init__(self, command: list[str], owner: str | None = None) -> None:
        self.command = command
        self.owner = owner
        self.folder = folders.make(owner)
        # Ours alone (0700): the shim creates the socket here with DAC_OVERRIDE; the server's
        # user, and so model code, cannot enter it, nor can another local user.
        self.sockets = self.folder / "socket"
        self.sockets.mkdir(mode=0o700)
        self.relay: Relay | None = None

    @classmethod
    def prepare(cls, image: str, owner: str | None = None) -> Isolated:
        """For a container of `image` of the run whose owner label value is `owner`."""
        return cls(image_command(image, mode="use_docker"), owner)

    def run_args(self, image: str) -> list[str]:
        """`docker run` arguments from the entrypoint on: mounts, the shim, the image, its command."""
        program = Path(incontainer.__file__).resolve()
        return [
            "--volume",
            f"{self.sockets}:{MOUNT}/socket",
            "--volume",
            f"{program}:{MOUNT}/incontainer.py:ro",
            "--entrypoint",
            PYTHON,
            image,
            f"{MOUNT}/incontainer.py",
            "shim",
            f"{MOUNT}/socket/{SOCKET}",
            USER,
            *self.command,
        ]

    def connect(self) -> str:
        """Start the host's relay to the container's socket; its loopback URL."""
        self.relay = Relay.to_socket(str(self.sockets / SOCKET), self.owner)
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

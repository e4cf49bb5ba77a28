"""The Docker launch mode: one labelled container per server, through OpenEnv's Docker provider.

`DockerServer` is OpenEnv's `LocalDockerProvider` with these changes: its containers carry
labels (the run's owner label, so the reaper can find and remove them precisely), it
publishes no port: the container is reached through its shim's Unix socket and a loopback
relay that admits only the run (`sandbox.shim`; removed with the container, its folder
marked with the container's owner label for the reaper), stopping is one `docker rm -f`
(OpenEnv's stop gives up after a 10 s `docker stop`, leaving the container), its log is
rotated within the run's `log_max_size` and `log_max_files` (`openenvgen_servers.logs`),
and `pass_env` names go to the container as `-e NAME` (the value is read by the docker CLI,
never put on its command line). A container gets nothing of this process's environment but
`env_vars` and `pass_env`. It also reports a container that exited and the tail of its log.
With a `sandbox` (`sandbox.hardening`) the container is hardened.

Importing this module imports OpenEnv's providers: `launch` imports it only for a Docker run.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from openenvgen_runtime.launching.docker_cli import OWNER_LABEL, docker, ensure_image, label_args, last_line
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.launching.sandbox.hardening import USER, Sandbox, hardening_args
from openenvgen_runtime.launching.sandbox.shim import PYTHON, UNSANDBOXED_ARGS, ShimSocket, no_python
from openenvgen_servers.environment import container_env_args
from openenvgen_servers.logs import DEFAULT_LOG_LIMIT, LogLimit

if TYPE_CHECKING:  # the checker reads OpenEnv's class; at run time it is imported without the web UI
    from openenv.core.containers.runtime import LocalDockerProvider
else:
    LocalDockerProvider = openenv_module("openenv.core.containers.runtime").LocalDockerProvider


class DockerServer(LocalDockerProvider):
    """OpenEnv's local Docker provider with labelled containers behind a loopback relay."""

    def __init__(
        self,
        image: str,
        *,
        labels: dict[str, str],
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        pass_env: Sequence[str] = (),
        sandbox: Sandbox | None = None,
        log_limit: LogLimit = DEFAULT_LOG_LIMIT,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # OpenEnv's is unannotated; RuntimeError when no Docker answers
        self.image = image
        self.labels = labels
        self.port = port
        self.env_vars = env_vars
        self.pass_env = list(pass_env)
        self.sandbox = sandbox
        self.log_limit = log_limit
        self.container_id: str | None = None
        self.way_in: ShimSocket | None = None
        self._stopped = False
        """Set by `stop_container`: a launch still under way then undoes itself."""
        self._lock = threading.Lock()

    def start_container(
        self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **_: Any
    ) -> str:
        """Run the image as a labelled container reached through its shim's socket; returns the
        base URL of its loopback relay (on `port` when given)."""
        if self._stopped:
            raise LaunchError("use_docker: stopped before the container started")
        # Unique per launch: launches run in parallel, and by the millisecond is not enough.
        name = f"{image.split('/')[-1].split(':')[0]}-{uuid.uuid4().hex[:12]}"
        command = ["docker", "run", "-d", "--name", name]
        command += label_args("--label", self.labels)
        command += self.log_limit.docker_args()
        command += container_env_args("-e", env_vars, self.pass_env)
        command += hardening_args(self.sandbox, "run") if self.sandbox is not None else UNSANDBOXED_ARGS
        way_in = self.way_in = ShimSocket.prepare(image, self.labels.get(OWNER_LABEL))
        network = self.sandbox is None or not self.sandbox.isolated
        command += way_in.run_args(image, user=USER if self.sandbox is not None else None, network=network)
        result = subprocess.run(command, capture_output=True, text=True)
        with self._lock:
            stopped = self._stopped
            if result.returncode == 0 and not stopped:
                self.container_id = result.stdout.strip()
                try:
                    return way_in.connect(port or 0)
                except OSError as e:  # the container is removed by `stop`
                    raise LaunchError(f"use_docker: no relay on 127.0.0.1:{port}: {e.strerror or e}") from None
        # The run failed (a container the runtime could not start is still created), or `stop`
        # ran while it did (the pool closing, a replacement cancelled): the container is
        # removed here, and no relay starts.
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            docker("rm", "-f", name, timeout=60)
        way_in.close()  # stop removed the socket folder; docker's bind mount may have made it anew
        if stopped:
            raise LaunchError("use_docker: stopped while the container was starting")
        if no_python(result.stderr):
            raise LaunchError(
                f"use_docker: the runtime starts its relay with the image's {PYTHON}, "
                f"and image {image} has none on its PATH"
            )
        raise LaunchError(f"use_docker: `docker run {image}` failed: {last_line(result.stderr)}")

    def stop_container(self) -> None:
        """Remove the container in one step, running or not; a launch still under way
        removes what it makes itself (`_stopped`)."""
        with self._lock:
            self._stopped = True
            container_id, self.container_id = self.container_id, None
            way_in, self.way_in = self.way_in, None
        if container_id is not None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                docker("rm", "-f", container_id, timeout=60)
        if way_in is not None:
            way_in.close()

    # -- the pool's Provider ------------------------------------------------------------

    def launch(self) -> list[str]:
        """Start the container; its base URL."""
        return [self.start_container(self.image, self.port, self.env_vars)]

    def exit_code(self) -> int | None:
        """The container's exit code once it has stopped (-1 when it is gone)."""
        if self.container_id is None:
            return None
        state = docker("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}}", self.container_id)
        if state.returncode != 0:
            return -1
        running, code = state.stdout.split()
        return None if running == "true" else int(code)

    def log_tail(self, lines: int = 15) -> str:
        """The container's last log lines."""
        if self.container_id is None:
            return ""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            logs = docker("logs", "--tail", str(lines), self.container_id)
            return (logs.stdout + logs.stderr).strip()
        return ""

    def stop(self) -> None:
        """`stop_container`."""
        self.stop_container()


def provider_for(
    image: str, options: dict[str, Any], *, labels: dict[str, str], timeout: float, sandbox: Sandbox | None = None
) -> DockerServer:
    """A Docker server for `image` (pulled now if missing), not started; one-line LaunchErrors."""
    ensure_image(image, mode="use_docker", timeout=timeout)
    try:
        return DockerServer(image, labels=labels, sandbox=sandbox, **options)
    except RuntimeError as e:  # OpenEnv's "Docker is not available"
        raise LaunchError(f"use_docker: {e}") from None

"""The UV launch mode (the default): an env server run with `uv run`, through OpenEnv's UV provider.

`UVServer` is OpenEnv's `UVProvider`, running the same command its own way, the way the
generator runs an env too (`openenvgen_servers.uv`): the server gets a minimal environment
(`openenvgen_servers.environment`: what uv needs, `pass_env`, `env_vars`; OpenEnv's provider
hands it this process's whole one, the trainer's credentials included), its output goes to a log file,
rotated within the run's `log_max_size` and `log_max_files` (so a server that dies while
starting is reported with its last lines, not after a timeout, and a server that writes
without end fills no disk),
it runs in a process group of its own (so stopping it also stops the uvicorn that `uv run`
spawned), and the kernel terminates it if this process dies without cleaning up.

It has no port: uvicorn serves (`--fd`) a Unix socket this process made, bound and
listening before the server starts, in a private folder (0700) of its own, so no other
local user can connect to it, take its place or see a port to squat in `ps`. The run
reaches it through a loopback `Relay` (`launching.sandbox.relay`), whose URL's token only
the run holds: another local user cannot reset or step the env, nor run code through it
as the trainer's user. `port` and `host`, when given, are where that relay listens.

Importing this module imports OpenEnv's providers: `launch` imports it only for a UV run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.launching.sandbox.relay import Relay
from openenvgen_servers import uv
from openenvgen_servers.logs import DEFAULT_LOG_LIMIT, LogLimit
from openenvgen_servers.processes import find_uv
from openenvgen_servers.uv import UVServerProcess
from openenvgen_servers.wire import NotHealthy

GIT_URL_PREFIX = "git+"
"""Marks a `project_path` that is a git URL to clone first, as OpenEnv's `UVProvider` reads it."""

if TYPE_CHECKING:  # the checker reads OpenEnv's class; at run time it is imported without the web UI
    from openenv.core.containers.runtime import UVProvider
else:
    UVProvider = openenv_module("openenv.core.containers.runtime").UVProvider


def clone_git_project(git_url: str, timeout_s: float) -> str:
    """A shallow clone of the `git+URL` project in a new temporary folder (`uv run
    --project` takes only a local folder); its path. A failure is a LaunchError."""
    url = git_url.removeprefix(GIT_URL_PREFIX)
    folder = tempfile.mkdtemp(prefix="openenv-uv-clone-")
    try:
        subprocess.run(
            ["git", "clone", "--depth", "1", url, folder], check=True, capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.SubprocessError) as e:
        shutil.rmtree(folder, ignore_errors=True)
        said = e.stderr.strip().splitlines() if isinstance(e, subprocess.CalledProcessError) else []
        detail = said[-1] if said else str(e)
        raise LaunchError(f"could not clone {url}: {detail}") from None
    return folder


class UVServer(UVProvider):
    """OpenEnv's UV provider with the server's output logged and its process group owned."""

    def __init__(
        self,
        *,
        port: int | None = None,
        workers: int = 1,
        pass_env: Sequence[str] = (),
        log_limit: LogLimit = DEFAULT_LOG_LIMIT,
        **options: Any,
    ) -> None:
        super().__init__(**options)  # project_path, app, host, reload, env_vars, context_timeout_s
        self.port = port
        self.workers = workers
        self.pass_env = list(pass_env)
        self.log_limit = log_limit
        self.server: UVServerProcess | None = None
        self.relay: Relay | None = None
        self.socket_dir: str | None = None
        self.clone_dir: str | None = None

    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, workers: int = 1, **_: Any) -> str:
        """OpenEnv's `UVProvider.start`, logged and in a process group of its own, serving a
        socket of this process's behind a relay (see the module); returns the relay's URL."""
        if self.server is not None and self.server.exit_code() is None:
            raise RuntimeError("UVProvider is already running")
        self.stop()
        project = self.project_path
        if project.startswith(GIT_URL_PREFIX):
            project = self.clone_dir = clone_git_project(project, self.context_timeout_s)
        self.socket_dir = tempfile.mkdtemp(prefix="openenv-uv-")  # 0700: ours alone
        path = os.path.join(self.socket_dir, "server.sock")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(path)
                listener.listen(socket.SOMAXCONN)
                self.relay = Relay.to_socket(path, host=self.host, port=port or 0)
                # `uv` as OpenEnv runs it, from PATH (`ensure_uv_on_path`).
                serve = uv.uvicorn(self.app, fd=listener.fileno(), workers=workers, reload=self.reload)
                command = [*uv.uv_run("uv", project), *serve]
                env_vars = {**(self.env_vars or {}), **(env_vars or {})}
                self.server = UVServerProcess.start(
                    command,
                    self.relay.url,
                    env_vars=env_vars,
                    pass_env=self.pass_env,
                    pass_fds=[listener.fileno()],
                    log_limit=self.log_limit,
                )
        except BaseException:
            self.stop()
            raise
        return self.server.url

    @property
    def base_url(self) -> str:
        """The running server's base URL (OpenEnv's property, on this class's state)."""
        if self.server is None:
            raise RuntimeError("UVProvider has not been started")
        return self.server.url

    def wait_for_ready(self, timeout_s: float | None = None) -> None:
        """OpenEnv's `UVProvider.wait_for_ready`, on this class's state."""
        timeout = self.context_timeout_s if timeout_s is None else timeout_s
        if self.server is None:
            raise RuntimeError("UVProvider has not been started")
        try:
            self.server.wait_ready(timeout)
        except NotHealthy as e:
            raise (RuntimeError if e.exit_code is not None else TimeoutError)(str(e)) from None

    # -- the pool's Provider ------------------------------------------------------------

    def launch(self) -> list[str]:
        """Start the server; its base URL."""
        return [self.start(self.port, workers=self.workers)]

    def exit_code(self) -> int | None:
        """The server process's exit code once it has exited, else None."""
        return None if self.server is None else self.server.exit_code()

    def log_tail(self, lines: int = 15) -> str:
        """The log's first line (the command) and its last `lines` lines."""
        return "" if self.server is None else self.server.log_tail(lines)

    def stop(self) -> None:
        """Stop the server's whole process group and its relay; remove its log, its socket's
        folder and any cloned project."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None
        self._remove_clone()

    def _remove_clone(self) -> None:
        if self.clone_dir is not None:
            shutil.rmtree(self.clone_dir, ignore_errors=True)
            self.clone_dir = None


def ensure_uv_on_path() -> None:
    """`uv` installed in this interpreter's environment counts even when that environment
    is not activated (e.g. `.venv/bin/vf-eval`): OpenEnv's provider runs the `uv` on PATH."""
    uv = find_uv()
    if uv is None:
        raise LaunchError("the UV provider needs `uv` on PATH (pip install uv)")
    if shutil.which("uv") is None:
        os.environ["PATH"] = f"{Path(uv).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def provider_for(env_id: str, options: dict[str, Any], *, timeout: float) -> UVServer:
    """A UV server for `env_id` (its Hugging Face Space unless `project_path` is set), not started."""
    ensure_uv_on_path()
    options = dict(options)
    project = options.pop("project_path", None) or f"git+https://huggingface.co/spaces/{env_id}"
    options.setdefault("host", "127.0.0.1")
    return UVServer(project_path=str(project), context_timeout_s=timeout, **options)

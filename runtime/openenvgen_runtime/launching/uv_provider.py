"""The UV launch mode (the default): an env server run with `uv run`, through OpenEnv's UV provider.

`UVServer` is OpenEnv's `UVProvider` (its public class), running the command that provider
runs (`uv run --isolated --project P -- uvicorn APP ...`, built here: OpenEnv keeps its
builder private) its own way: the server's output goes to a log file (so a server that dies while starting is
reported with its last lines, not after a timeout), it runs in a process group of its own
(so stopping it also stops the uvicorn that `uv run` spawned), and the kernel terminates it
if this process dies without cleaning up.

Importing this module imports OpenEnv's providers: `launch` imports it only for a UV run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.launching.provider import free_port
from openenvgen_schemas.processes import find_uv, stop_process_group
from openenvgen_schemas.wire import NotHealthy, wait_healthy

GIT_URL_PREFIX = "git+"
"""Marks a `project_path` that is a git URL to clone first, as OpenEnv's `UVProvider` reads it."""
COMMAND_PREFIX = "$ "
"""Starts the first line of a UV server's log: the command that was run."""
_PR_SET_PDEATHSIG = 1

if TYPE_CHECKING:  # the checker reads OpenEnv's class; at run time it is imported without the web UI
    from openenv.core.containers.runtime import UVProvider
else:
    UVProvider = openenv_module("openenv.core.containers.runtime").UVProvider


def uv_command(*, host: str, port: int, reload: bool, workers: int, app: str, project_path: str) -> list[str]:
    """The command that serves `app` from the project at `project_path` in an isolated
    environment: what OpenEnv's `UVProvider.start` runs for the same options."""
    command = ["uv", "run", "--isolated", "--project", project_path, "--"]
    command += ["uvicorn", app, "--host", host, "--port", str(port), "--workers", str(workers)]
    return [*command, "--reload"] if reload else command


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


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM it when the eval process dies,
    # even by SIGKILL, so no server outlives its run. The kernel ties this to the thread
    # that started the server: launches run in the event loop's executor threads, which
    # live until the loop closes (after the pool has stopped its servers).
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class UVServer(UVProvider):
    """OpenEnv's UV provider with the server's output logged and its process group owned."""

    def __init__(self, *, port: int | None = None, workers: int = 1, **options: Any) -> None:
        super().__init__(**options)  # project_path, app, host, reload, env_vars, context_timeout_s
        self.port = port
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.log_path: Path | None = None
        self.clone_dir: str | None = None

    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, workers: int = 1, **_: Any) -> str:
        """OpenEnv's `UVProvider.start`, logged and in a process group of its own; returns the base URL."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("UVProvider is already running")
        self._remove_clone()
        project = self.project_path
        if project.startswith(GIT_URL_PREFIX):
            project = self.clone_dir = clone_git_project(project, self.context_timeout_s)
        bind_port = port or free_port()
        command = uv_command(
            host=self.host, port=bind_port, reload=self.reload, workers=workers, app=self.app, project_path=project
        )
        env = {**os.environ, **(self.env_vars or {}), **(env_vars or {})}
        fd, log = tempfile.mkstemp(prefix="openenv-server-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as log_file:
            # The log's first line is the command (and so the app) that ran: a failure
            # report then says what was tried, not only how it died.
            log_file.write(f"{COMMAND_PREFIX}{shlex.join(command)}\n".encode())
            log_file.flush()
            self.process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        client_host = "127.0.0.1" if self.host in {"0.0.0.0", "::"} else self.host
        self.url = f"http://{client_host}:{bind_port}"
        return self.url

    @property
    def base_url(self) -> str:
        """The running server's base URL (OpenEnv's property, on this class's state)."""
        if self.url is None:
            raise RuntimeError("UVProvider has not been started")
        return self.url

    def wait_for_ready(self, timeout_s: float | None = None) -> None:
        """OpenEnv's `UVProvider.wait_for_ready`, on this class's state."""
        timeout = self.context_timeout_s if timeout_s is None else timeout_s
        try:
            wait_healthy(self.base_url, timeout, exited=self.exit_code)
        except NotHealthy as e:
            raise (RuntimeError if e.exit_code is not None else TimeoutError)(str(e)) from None

    # -- the pool's Provider ------------------------------------------------------------

    def launch(self) -> list[str]:
        """Start the server; its base URL."""
        return [self.start(self.port, workers=self.workers)]

    def exit_code(self) -> int | None:
        """The server process's exit code once it has exited, else None."""
        return None if self.process is None else self.process.poll()

    def log_tail(self, lines: int = 15) -> str:
        """The log's first line (the command) and its last `lines` lines."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, errors="replace") as fh:
            first = fh.readline()
            rest = deque(fh, maxlen=lines)
        return (first + "".join(rest)).strip()

    def stop(self) -> None:
        """Stop the server's whole process group; remove its log and any cloned project."""
        if self.process is not None:
            stop_process_group(self.process)
            self.process = None
        self.url = None
        self._remove_clone()
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

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

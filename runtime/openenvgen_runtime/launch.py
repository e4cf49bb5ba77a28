"""Starting and stopping one environment server through OpenEnv's own providers.

UV (default): OpenEnv's `UVProvider` builds the `uv run --project ... uvicorn APP` command
and owns the process. We start that command ourselves only to keep its output in a log
file (so a server that dies while starting is reported with its last lines, not after a
timeout), to put it in its own process group (so stopping it also stops the uvicorn that
`uv run` spawned), and to have the kernel terminate it if this process dies without
cleaning up. Docker: OpenEnv's `LocalDockerProvider` with labelled containers (see
`containers`); Docker Swarm: OpenEnv's `DockerSwarmProvider` (see `swarm`). A missing
image, daemon or swarm is a one-line `LaunchError` before any episode starts; so is an
option the chosen provider does not take.

Everything here is blocking; the pool calls it from worker threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

from openenvgen_runtime.errors import LaunchError

_PR_SET_PDEATHSIG = 1
UV_OPTIONS = ("project_path", "app", "host", "reload", "env_vars", "port", "workers")
DOCKER_OPTIONS = ("image", "tag", "port", "env_vars")
SWARM_OPTIONS = ("image", "tag", "env_vars", "cpu_limit", "memory_limit", "constraints", "command", "overlay_network")
TIMEOUT_OPTIONS = ("startup_timeout", "context_timeout_s")
COMMAND_PREFIX = "$ "
"""Starts the first line of a UV server's log: the command that was run."""


def install_error_hook() -> None:
    """Print an uncaught LaunchError as `error: MESSAGE` instead of a traceback.

    A launch failure is the user's to fix (a wrong image, path or env), and its message
    (with the server's log tail) says all there is; other exceptions keep Python's hook."""
    previous = sys.excepthook
    if getattr(previous, "openenvgen", False):
        return

    def hook(kind: type[BaseException], error: BaseException, tb: Any) -> None:
        if isinstance(error, LaunchError):
            print(f"error: {error}", file=sys.stderr)
        else:
            previous(kind, error, tb)

    hook.openenvgen = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def mode_name(*, use_docker: bool = False, use_swarm: bool = False) -> str:
    return "swarm" if use_swarm else "docker" if use_docker else "uv"


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM it when the eval process dies,
    # even by SIGKILL, so no server outlives its run. The kernel ties this to the thread
    # that started the server: launches run in the event loop's executor threads, which
    # live until the loop closes (after the pool has stopped its servers).
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _uv_provider_class() -> type:
    from openenvgen_runtime.upstream import openenv_module

    UVProvider = openenv_module("openenv.core.containers.runtime").UVProvider
    uv_module = openenv_module("openenv.core.containers.runtime.uv_provider")

    class LoggedUVProvider(UVProvider):
        """OpenEnv's UV provider with the server's output logged and its process group owned."""

        log_path: Path | None = None

        def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, workers: int = 1, **_: Any) -> str:
            if self._process is not None and self._process.poll() is None:
                raise RuntimeError("UVProvider is already running")
            project = self.project_path
            if project.startswith(uv_module.GIT_URL_PREFIX):
                self._clone_dir = uv_module._clone_git_project(project, self.context_timeout_s)
                project = self._clone_dir
            bind_port = port or uv_module._find_free_port()
            command = uv_module._create_uv_command(
                host=self.host, port=bind_port, reload=self.reload, workers=workers, app=self.app, project_path=project
            )
            env = {**os.environ, **(self.env_vars or {}), **(env_vars or {})}
            fd, log = tempfile.mkstemp(prefix="openenv-server-", suffix=".log")
            self.log_path = Path(log)
            with os.fdopen(fd, "wb") as log_file:
                # The log's first line is the command (and so the app) that ran: a
                # failure report then says what was tried, not only how it died.
                log_file.write(f"{COMMAND_PREFIX}{shlex.join(command)}\n".encode())
                log_file.flush()
                self._process = subprocess.Popen(
                    command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            client_host = "127.0.0.1" if self.host in {"0.0.0.0", "::"} else self.host
            self._base_url = f"http://{client_host}:{bind_port}"
            return self._base_url

        def stop(self) -> None:
            process = self._process
            if process is not None and process.poll() is None:
                _stop_group(process)
            super().stop()
            if self.log_path is not None:
                self.log_path.unlink(missing_ok=True)

    return LoggedUVProvider


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL what is left after a grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def provider_options(provider_kwargs: dict[str, Any], mode: str) -> dict[str, Any]:
    """`provider_kwargs` checked against what the mode's provider takes (one-line errors)."""
    timeouts = sorted(set(provider_kwargs) & set(TIMEOUT_OPTIONS))
    if timeouts:
        raise LaunchError(
            f"provider_kwargs.{timeouts[0]} is not a provider option: set `startup_timeout` "
            "(--env.taskset.startup-timeout SECONDS), the one startup timeout of every launch mode"
        )
    allowed = {"uv": UV_OPTIONS, "docker": DOCKER_OPTIONS, "swarm": SWARM_OPTIONS}[mode]
    unknown = sorted(set(provider_kwargs) - set(allowed))
    if unknown:
        raise LaunchError(f"provider_kwargs not understood by the {mode} launch mode: {unknown} (it takes {list(allowed)})")
    kwargs = dict(provider_kwargs)
    if isinstance(kwargs.get("env_vars"), str):  # from the command line: a JSON object
        try:
            kwargs["env_vars"] = json.loads(kwargs["env_vars"])
        except json.JSONDecodeError as e:
            raise LaunchError(f"provider_kwargs.env_vars is not a JSON object: {e}") from None
    return kwargs


def image_for(env_id: str, kwargs: dict[str, Any]) -> str:
    """The `image` option, else the env's image on the Hugging Face Spaces registry."""
    tag = kwargs.pop("tag", "latest")
    return kwargs.pop("image", None) or f"registry.hf.space/{env_id.replace('/', '-')}:{tag}"


def start(
    env_id: str,
    provider_kwargs: dict[str, Any],
    *,
    use_docker: bool,
    timeout: float,
    labels: dict[str, str] | None = None,
) -> tuple[Any, str]:
    """Start one server; returns (provider, base_url). Does not wait for readiness."""
    kwargs = provider_options(provider_kwargs, mode_name(use_docker=use_docker))
    if use_docker:
        from openenvgen_runtime import containers

        require_docker("use_docker")
        image = image_for(env_id, kwargs)
        containers.ensure_image(image, mode="use_docker", timeout=timeout)
        provider = containers.docker_provider(labels or {})
        return provider, provider.start_container(image, **kwargs)
    ensure_uv_on_path()
    start_args = {k: kwargs.pop(k) for k in ("port", "workers") if k in kwargs}
    project = kwargs.pop("project_path", None) or f"git+https://huggingface.co/spaces/{env_id}"
    kwargs.setdefault("host", "127.0.0.1")
    provider = _uv_provider_class()(project_path=str(project), context_timeout_s=timeout, **kwargs)
    return provider, provider.start(**start_args)


def ensure_uv_on_path() -> None:
    """`uv` installed in this interpreter's environment counts even when that environment
    is not activated (e.g. `.venv/bin/vf-eval`); OpenEnv's provider looks on PATH only."""
    if shutil.which("uv") is not None:
        return
    bin_dir = Path(sys.executable).parent
    if (bin_dir / "uv").exists():
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        return
    raise LaunchError("the UV provider needs `uv` on PATH (pip install uv)")


def exited(provider: Any) -> int | None:
    """The server's exit code once its process or container has exited, else None."""
    exit_code = getattr(provider, "exit_code", None)
    if exit_code is not None:
        return exit_code()
    process = getattr(provider, "_process", None)
    return None if process is None else process.poll()


def log_tail(provider: Any, lines: int = 15) -> str:
    """The last lines the server wrote (its log file, container or service logs)."""
    tail = getattr(provider, "log_tail", None)
    if callable(tail):
        with contextlib.suppress(Exception):
            return tail(lines)
        return ""
    path = getattr(provider, "log_path", None)
    if path is None or not Path(path).exists():
        return ""
    with open(path, errors="replace") as fh:
        first = fh.readline()
        rest = deque(fh, maxlen=lines)
    return (first + "".join(rest)).strip()


def stop(provider: Any) -> None:
    for name in ("stop", "stop_container"):
        method = getattr(provider, name, None)
        if method is not None:
            with contextlib.suppress(Exception):
                method()
            return


def require_docker(mode: str = "use_docker") -> None:
    if shutil.which("docker") is None:
        raise LaunchError(f"{mode}: no `docker` command on this machine")
    try:
        subprocess.run(["docker", "info"], check=True, capture_output=True, timeout=15)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        raise LaunchError(f"{mode}: no Docker daemon answers (`docker info` failed)") from None

"""Starting and stopping one environment server through OpenEnv's own providers.

UV (default): OpenEnv's `UVProvider` builds the `uv run --project ... uvicorn APP` command
and owns the process. We start that command ourselves only to keep its output in a log
file (so a server that dies while starting is reported with its last lines, not after a
timeout), to put it in its own process group (so stopping it also stops the uvicorn that
`uv run` spawned), and to have the kernel terminate it if this process dies without
cleaning up. Docker: OpenEnv's `LocalDockerProvider`, unchanged.

Everything here is blocking; the pool calls it from worker threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1
UV_OPTIONS = ("project_path", "app", "host", "reload", "env_vars", "port", "workers")
DOCKER_OPTIONS = ("image", "tag", "port", "env_vars")
TIMEOUT_OPTIONS = ("startup_timeout", "context_timeout_s")


class LaunchError(RuntimeError):
    """A server could not be started or reached."""


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM it when the eval process dies,
    # even by SIGKILL, so no server outlives its run.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _uv_provider_class() -> type:
    from openenv.core.containers.runtime import UVProvider
    from openenv.core.containers.runtime import uv_provider as uv_module

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


def startup_timeout(provider_kwargs: dict[str, Any], default: float) -> float:
    for key in TIMEOUT_OPTIONS:
        if key in provider_kwargs:
            return float(provider_kwargs[key])
    return default


def start(env_id: str, provider_kwargs: dict[str, Any], *, use_docker: bool, timeout: float) -> tuple[Any, str]:
    """Start one server; returns (provider, base_url). Does not wait for readiness."""
    kwargs = {k: v for k, v in provider_kwargs.items() if k not in TIMEOUT_OPTIONS}
    if isinstance(kwargs.get("env_vars"), str):  # from the command line: a JSON object
        kwargs["env_vars"] = json.loads(kwargs["env_vars"])
    if use_docker:
        require_docker()
        unknown = set(kwargs) - set(DOCKER_OPTIONS)
        if unknown:
            raise LaunchError(f"provider_kwargs not understood by the Docker provider: {sorted(unknown)}")
        from openenv.core.containers.runtime import LocalDockerProvider

        provider = LocalDockerProvider()
        tag = kwargs.pop("tag", "latest")
        image = kwargs.pop("image", f"registry.hf.space/{env_id.replace('/', '-')}:{tag}")
        return provider, provider.start_container(image, **kwargs)
    unknown = set(kwargs) - set(UV_OPTIONS)
    if unknown:
        raise LaunchError(f"provider_kwargs not understood by the UV provider: {sorted(unknown)}")
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
    """The server process's exit code if it has exited (UV provider only)."""
    process = getattr(provider, "_process", None)
    return None if process is None else process.poll()


def log_tail(provider: Any, lines: int = 15) -> str:
    path = getattr(provider, "log_path", None)
    if path is None or not Path(path).exists():
        return ""
    with open(path, errors="replace") as fh:
        return "".join(deque(fh, maxlen=lines)).strip()


def stop(provider: Any) -> None:
    for name in ("stop", "stop_container"):
        method = getattr(provider, name, None)
        if method is not None:
            with contextlib.suppress(Exception):
                method()
            return


def require_docker() -> None:
    if shutil.which("docker") is None:
        raise LaunchError("use_docker: no `docker` command on this machine")
    try:
        subprocess.run(["docker", "info"], check=True, capture_output=True, timeout=15)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        raise LaunchError("use_docker: no Docker daemon answers (`docker info` failed)") from None

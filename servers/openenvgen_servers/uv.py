"""An env server started with `uv run`, as OpenEnv's UV provider starts it: one way for the
generator and the runtime.

OpenEnv's `UVProvider` runs `uv run --isolated --project ENV -- uvicorn APP --host H --port P
--workers W`; `uv_run` and `uvicorn` build that command (tests/servers/test_uv.py holds it to
what the provider itself runs), with uv's `--python` and `--with` where an env needs them.
`UVServerProcess.start` runs it the way both need: its output into a log whose first line is
the command (a failure report then says what was tried), rotated within a `logs.LogLimit`,
in a process group of its own (so stopping it also stops the uvicorn that `uv run` spawned), ended by the kernel if this
process dies first, with a minimal environment of its own (`environment`: never this
process's whole one, which holds the trainer's credentials); `wait_ready` returns once
`/health` answers. The generator runs an author's or upstream's env with it
(`openenvgen.sources.uv_server`); the runtime wraps it in OpenEnv's provider API
(`openenvgen_runtime.launching.uv_provider`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from openenvgen_servers.environment import server_environment
from openenvgen_servers.logs import DEFAULT_LOG_LIMIT, LogLimit, RotatingLog, log_files
from openenvgen_servers.processes import die_with_parent, stop_process_group
from openenvgen_servers.wire import wait_healthy

COMMAND_PREFIX = "$ "
"""Starts the first line of a UV server's log: the command that was run."""


def uv_run(uv: str, project: str | Path, *, python: str | None = None, with_: Sequence[str] = ()) -> list[str]:
    """`uv run --isolated --project PROJECT --`, what OpenEnv's UV provider runs a server
    behind; `python` adds `--python` (an interpreter), `with_` a `--with` per requirement."""
    command = [uv, "run", "--isolated"]
    if python:
        command += ["--python", python]
    for requirement in with_:
        command += ["--with", requirement]
    return [*command, "--project", str(project), "--"]


def uvicorn(
    app: str, *, host: str = "", port: int = 0, fd: int | None = None, workers: int = 1, reload: bool = False
) -> list[str]:
    """`uvicorn APP --host H --port P --workers W`: the server OpenEnv's UV provider runs after
    `uv run ... --`; with `fd`, `--fd FD` in place of host and port (a listening Unix socket
    the caller made and passes on: `uv run` hands its open descriptors to uvicorn)."""
    where = ["--fd", str(fd)] if fd is not None else ["--host", host, "--port", str(port)]
    args = ["uvicorn", app, *where, "--workers", str(workers)]
    return [*args, "--reload"] if reload else args


class UVServerProcess:
    """One env server run by `start`: its URL, its process group and its log."""

    def __init__(self, url: str, process: subprocess.Popen[bytes], log: RotatingLog, *, owns_log: bool) -> None:
        self.url = url
        self.process = process
        self.log = log.path
        self.log_limit = log.limit
        self._copy = log
        self._owns_log = owns_log

    @classmethod
    def start(
        cls,
        command: Sequence[str],
        url: str,
        *,
        env_vars: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        cwd: Path | None = None,
        log: Path | None = None,
        log_limit: LogLimit = DEFAULT_LOG_LIMIT,
        pass_fds: Sequence[int] = (),
    ) -> UVServerProcess:
        """Run `command`, a server that will answer at `url`, without waiting for it: its
        environment is `environment.server_environment` (the allowlisted part of this
        process's, the `pass_env` names, then `env_vars`), never this process's whole one;
        its output goes to `log` (a temporary file that `stop` removes, when None), rotated
        within `log_limit` (`logs.RotatingLog`); it inherits the descriptors `pass_fds` (a
        socket it is to serve on)."""
        if log is None:
            fd, name = tempfile.mkstemp(prefix="openenv-server-", suffix=".log")
            out: BinaryIO = os.fdopen(fd, "wb")
            path, owns_log = Path(name), True
        else:
            out, path, owns_log = open(log, "wb"), log, False
        header = f"{COMMAND_PREFIX}{shlex.join(command)}\n".encode()
        try:
            with out:
                out.write(header)
            process = subprocess.Popen(
                list(command),
                env=server_environment(env_vars, pass_env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds),
                start_new_session=True,  # stopping the group also stops the uvicorn uv spawned
                preexec_fn=die_with_parent,
            )
        except BaseException:
            if owns_log:
                path.unlink(missing_ok=True)
            raise
        assert process.stdout is not None
        return cls(url, process, RotatingLog(process.stdout, path, log_limit, header), owns_log=owns_log)

    def exit_code(self) -> int | None:
        """The server process's exit code once it has exited, else None."""
        return self.process.poll()

    def wait_ready(self, timeout: float) -> None:
        """Return once the server answers `/health`; `wire.NotHealthy` if it exits or time runs out."""
        wait_healthy(self.url, timeout, exited=self.exit_code)

    def log_tail(self, lines: int = 15) -> str:
        """The log's first line (the command) and its last `lines` lines, across its rotated files."""
        if self.process.poll() is not None:
            self._copy.join(timeout=2)  # what it wrote before it exited is read
        first, rest = "", deque[str](maxlen=lines)
        for path in log_files(self.log, self.log_limit):
            try:
                with open(path, errors="replace") as fh:
                    first = fh.readline()  # every file starts with the command
                    rest.extend(fh)
            except OSError:
                continue
        return (first + "".join(rest)).strip()

    def stop(self) -> None:
        """Stop the server's whole process group; remove the log if `start` made it."""
        stop_process_group(self.process)
        self._copy.join(timeout=10)
        if self._owns_log:
            for path in log_files(self.log, self.log_limit):
                path.unlink(missing_ok=True)

"""Run ASGI apps on real uvicorn servers bound to 127.0.0.1 for tests.

* :func:`serve_app` runs an app object in a background thread of this process
  (cheap; the app's state, e.g. a ``ScriptedChatModel``'s recorded requests,
  stays inspectable).
* :func:`serve_app_subprocess` runs ``python -m uvicorn module:attr`` in its
  own process group, for tests that must kill a server mid-episode or need a
  clean interpreter.

Both yield a ``str`` subclass equal to the base URL (``http://127.0.0.1:PORT``)
that also carries control methods, so ``with serve_app(app) as url:`` works
as a plain string.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from openenvgen_servers.ports import free_port

__all__ = [
    "HOST",
    "ServedApp",
    "ServerProcess",
    "group_gone",
    "serve_app",
    "serve_app_subprocess",
    "wait_until_serving",
]

HOST = "127.0.0.1"


def group_gone(pgid: int) -> bool:
    """Whether no process is left in process group `pgid` (a server started in a session of its own)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until_serving(
    base_url: str,
    *,
    timeout: float = 15.0,
    path: str = "/",
    alive: Callable[[], bool] | None = None,
) -> None:
    """Poll ``GET base_url+path`` until any HTTP response arrives (404 counts).

    ``alive`` is an optional zero-argument callable; when it returns False the
    wait aborts early (the server died), raising ``RuntimeError``.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    # trust_env=False: never route loopback probes through a configured proxy.
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise RuntimeError(f"server for {base_url} exited before answering")
            try:
                client.get(base_url + path)
                return
            except httpx.TransportError as exc:
                last_error = exc
                time.sleep(0.05)
    raise TimeoutError(f"{base_url} did not answer within {timeout}s: {last_error!r}")


class ServedApp(str):
    """Base URL of an in-thread uvicorn server; ``stop()`` shuts it down early."""

    port: int
    _server: uvicorn.Server
    _thread: threading.Thread

    def __new__(cls, base_url: str, port: int, server: uvicorn.Server, thread: threading.Thread) -> ServedApp:
        self = super().__new__(cls, base_url)
        self.port = port
        self._server = server
        self._thread = thread
        return self

    @property
    def base_url(self) -> str:
        return str(self)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful shutdown; escalates to uvicorn's force-exit if it lingers."""
        if not self._thread.is_alive():
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)


@contextmanager
def serve_app(
    app: Any,
    *,
    host: str = HOST,
    port: int | None = None,
    ready_path: str = "/",
    startup_timeout: float = 15.0,
    log_level: str = "warning",
) -> Iterator[ServedApp]:
    """Serve an ASGI app with uvicorn in a daemon thread; yield its base URL.

    The listening socket is bound here (port 0 unless ``port`` is given) and
    handed to uvicorn, so there is no window in which another process can
    take the port.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port or 0))
    bound_port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="auto",
        # Lingering WebSocket sessions must not stall teardown for long.
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # uvicorn reports startup failure via sys.exit
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{bound_port}", daemon=True)
    base_url = f"http://{host}:{bound_port}"
    handle = ServedApp(base_url, bound_port, server, thread)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(f"uvicorn failed to start {app!r}: {failure!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"uvicorn did not start within {startup_timeout}s")
            time.sleep(0.01)
        wait_until_serving(
            base_url,
            timeout=max(0.1, deadline - time.monotonic()),
            path=ready_path,
            alive=thread.is_alive,
        )
        yield handle
    finally:
        handle.stop()
        sock.close()


class ServerProcess(str):
    """Base URL of a subprocess uvicorn server, plus control over the process."""

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    def __new__(cls, base_url: str, port: int, process: subprocess.Popen[bytes], log_path: Path) -> ServerProcess:
        self = super().__new__(cls, base_url)
        self.port = port
        self.process = process
        self.log_path = log_path
        return self

    @property
    def base_url(self) -> str:
        return str(self)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        """Everything the server wrote to stdout/stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def signal_group(self, sig: int) -> None:
        # start_new_session=True made the server a group leader: pgid == pid.
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL the whole process group (an abrupt crash, mid-episode)."""
        self.signal_group(signal.SIGKILL)
        self._reap(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group; SIGKILL it if it has not exited in ``timeout``."""
        if self.alive:
            self.signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout)
                return
            except subprocess.TimeoutExpired:
                pass
        self.kill(timeout)

    def _reap(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


@contextmanager
def serve_app_subprocess(
    app_path: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    *,
    factory: bool = False,
    host: str = HOST,
    ready_path: str = "/",
    startup_timeout: float = 120.0,  # openenv imports gradio: slow on a loaded 2-core machine
    extra_args: Sequence[str] = (),
    python: str | None = None,
    port_attempts: int = 3,
) -> Iterator[ServerProcess]:
    """Run ``python -m uvicorn APP --host 127.0.0.1 --port P`` and yield its URL.

    ``env`` is merged over ``os.environ``; ``cwd`` defaults to this process's (the
    support package is installed, so its apps import from anywhere).
    With ``factory=True`` APP names a zero-argument app factory. The process
    runs in its own process group, which is killed on exit. If the server dies
    before answering because the chosen port was taken in the meantime, a new
    port is tried (``port_attempts`` times in all).
    """
    run_env = {**os.environ, **(env or {})}
    last_log = ""
    for _attempt in range(max(1, port_attempts)):
        port = free_port(host)
        log_fd, log_name = tempfile.mkstemp(prefix="uvicorn-", suffix=".log")
        log_path = Path(log_name)
        cmd = [
            python or sys.executable,
            "-m",
            "uvicorn",
            app_path,
            "--host",
            host,
            "--port",
            str(port),
            "--log-level",
            "warning",
            *(["--factory"] if factory else []),
            *extra_args,
        ]
        with os.fdopen(log_fd, "wb") as log_file:
            process = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        handle = ServerProcess(f"http://{host}:{port}", port, process, log_path)
        try:
            try:
                wait_until_serving(
                    handle, timeout=startup_timeout, path=ready_path, alive=lambda handle=handle: handle.alive
                )
            except (RuntimeError, TimeoutError) as exc:
                last_log = handle.log_text()
                if not handle.alive and "address already in use" in last_log.lower():
                    continue  # lost the port race; the finally below cleans up
                raise RuntimeError(f"{' '.join(cmd)} did not come up ({exc}); log:\n{last_log[-4000:]}") from exc
            yield handle
            return
        finally:
            handle.stop()
            log_path.unlink(missing_ok=True)
    raise RuntimeError(
        f"could not bind a port for {app_path} after {port_attempts} attempts; last log:\n{last_log[-4000:]}"
    )


@contextmanager
def dripping_peer(interval: float = 0.1) -> Iterator[str]:
    """A hostile peer on loopback: to every connection it sends an HTTP status line, then one
    byte of a header that never ends every `interval` seconds (each read answered well
    within any per-read timeout), until the client leaves. Yields its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip(conn: socket.socket) -> None:
        with conn:
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not stop.wait(interval):
                    conn.sendall(b"X")
            except OSError:  # the client left
                return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


@contextmanager
def replay_server(
    command: Sequence[str], log: Path, *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """`command` (an `openenv-gen replay NAME --port 0`) running in a process group of its own;
    its URL, the first line it prints. Its log goes to `log`: a pipe nobody reads would block
    the server once full. Stopped with Ctrl-C's SIGINT, it must end cleanly, its group gone."""
    with log.open("w") as stderr:
        server = subprocess.Popen(
            list(command), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True
        )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), log.read_text()
        yield url
    finally:
        os.killpg(server.pid, signal.SIGINT)
        code = server.wait(timeout=60)
    assert code == 0, log.read_text()
    assert group_gone(server.pid)

"""`openenvgen_servers.uv`: the command OpenEnv's UV provider runs, and one env server run with it.

The command is held to what OpenEnv's public `UVProvider.start` runs, and to what the
runtime's `UVServer` (OpenEnv's provider API, run our way) runs: each is started with a
stand-in `uv` on PATH that records its arguments. `UVServerProcess` runs real servers (a
small Starlette app under `python -m uvicorn`, or a process that never serves).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from openenvgen_servers import environment, uv
from openenvgen_servers.logs import LogLimit
from openenvgen_servers.ports import free_port
from openenvgen_servers.uv import COMMAND_PREFIX, UVServerProcess
from openenvgen_servers.wire import NotHealthy
from openenvgen_testsupport.servers import group_gone

# A `uv` that answers `uv --version` (OpenEnv's provider asks it) and otherwise writes its
# arguments to $ARGV_FILE and exits.
FAKE_UV = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import json, os, sys
    if sys.argv[1:] == ["--version"]:
        print("uv 0.0.0")
    else:
        with open(os.environ["ARGV_FILE"], "w") as out:
            json.dump(sys.argv[1:], out)
    """
)

APP = textwrap.dedent(
    """\
    import os
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def health(request):
        return JSONResponse({"status": "healthy", "cwd": os.getcwd(), "environ": dict(os.environ)})

    app = Starlette(routes=[Route("/health", health)])
    """
)


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH starts with a stand-in `uv`; the returned file is where it writes its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "uv"
    script.write_text(FAKE_UV)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("ARGV_FILE", str(argv_file))
    return argv_file


def recorded(argv_file: Path) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if argv_file.is_file() and argv_file.read_text():
            arguments: list[str] = json.loads(argv_file.read_text())
            argv_file.unlink()
            return arguments
        time.sleep(0.05)
    pytest.fail("the stand-in uv was never run")


CASES = [(1, False), (2, False), (1, True)]


@pytest.mark.parametrize(("workers", "reload"), CASES)
def test_the_command_is_the_one_openenvs_uv_provider_runs(
    fake_uv: Path, tmp_path: Path, workers: int, reload: bool
) -> None:
    from openenv.core.containers.runtime import UVProvider

    project = tmp_path / "env"
    argv = {"ARGV_FILE": str(fake_uv)}
    provider = UVProvider(
        project_path=str(project), app="server.app:app", host="127.0.0.1", reload=reload, env_vars=argv
    )
    try:
        provider.start(port=8123, workers=workers)
        theirs = recorded(fake_uv)
    finally:
        provider.stop()
    ours = [
        *uv.uv_run("uv", project),
        *uv.uvicorn("server.app:app", host="127.0.0.1", port=8123, workers=workers, reload=reload),
    ]
    assert ours[1:] == theirs


@pytest.mark.parametrize(("workers", "reload"), CASES)
def test_the_runtimes_uv_server_runs_what_openenvs_provider_runs(
    fake_uv: Path, tmp_path: Path, workers: int, reload: bool
) -> None:
    from openenv.core.containers.runtime import UVProvider

    from openenvgen_runtime.launching.uv_provider import UVServer

    project = tmp_path / "env"
    commands = []
    # Ours hands the server only what it is told (and uv's needs): the stand-in's file by name.
    options = {"project_path": str(project), "app": "pkg.server.app:app", "host": "127.0.0.1", "reload": reload}
    for provider in (UVProvider(**options), UVServer(**options, pass_env=["ARGV_FILE"])):
        try:
            provider.start(port=8123, workers=workers)
            commands.append(recorded(fake_uv))
        finally:
            provider.stop()
    # The same command, but the runtime's serves the socket it made (`--fd`), on no port.
    theirs, ours = commands
    at = theirs.index("--host")
    assert theirs[at : at + 4] == ["--host", "127.0.0.1", "--port", "8123"]
    assert ours[at] == "--fd" and ours[at + 1].isdigit()
    assert ours[:at] + ours[at + 2 :] == theirs[:at] + theirs[at + 4 :]


def test_uv_run_adds_an_interpreter_and_requirements_before_the_project() -> None:
    assert uv.uv_run("/bin/uv", Path("/src/env"), python="3.12", with_=["a==1", "b"]) == [
        "/bin/uv", "run", "--isolated", "--python", "3.12", "--with", "a==1", "--with", "b",
        "--project", "/src/env", "--",
    ]  # fmt: skip


def app_command(port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port", str(port)]


def test_a_server_runs_in_its_folder_with_its_variables_and_is_stopped_whole(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    port = free_port("127.0.0.1")
    command = app_command(port)
    server = UVServerProcess.start(command, f"http://127.0.0.1:{port}", env_vars={"GREETING": "hi"}, cwd=tmp_path)
    try:
        server.wait_ready(120)
        health = httpx.get(f"{server.url}/health", timeout=10).json()
        assert (health["environ"]["GREETING"], health["cwd"]) == ("hi", str(tmp_path))
        assert server.exit_code() is None
        # The log's first line says what ran; it is a temporary file of the server's own.
        assert server.log_tail().splitlines()[0] == f"{COMMAND_PREFIX}{shlex.join(command)}"
        log = server.log
        assert log.is_file() and log.parent != tmp_path
    finally:
        server.stop()
    assert group_gone(server.process.pid)
    assert not log.exists()


def test_a_server_that_exits_while_starting_says_so_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    command = [sys.executable, "-c", "import sys; print('no such env', flush=True); sys.exit(3)"]
    server = UVServerProcess.start(command, "http://127.0.0.1:9", log=log)
    try:
        with pytest.raises(NotHealthy) as caught:
            server.wait_ready(60)
        assert caught.value.exit_code == 3
        assert server.log_tail().splitlines() == [f"{COMMAND_PREFIX}{shlex.join(command)}", "no such env"]
    finally:
        server.stop()
    assert log.read_text().endswith("no such env\n")  # a log given by the caller is the caller's


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    server = UVServerProcess.start(
        [sys.executable, "-c", "import time; time.sleep(60)"], f"http://127.0.0.1:{free_port()}"
    )
    try:
        with pytest.raises(NotHealthy, match=r"server not ready after 1s") as caught:
            server.wait_ready(1.0)
        assert caught.value.exit_code is None
    finally:
        server.stop()
    assert group_gone(server.process.pid)


def test_a_server_writing_without_end_leaves_at_most_its_log_limit(tmp_path: Path) -> None:
    """1 GB onto stdout (as model code in a REPL env's server could write) leaves the log's
    files within `max_size` x `max_files`; the tail still says what ran and what came last."""
    limit = LogLimit("1m", 3)
    flood = "import os; line = b'x' * (2**20 - 1) + b'\\n'; [os.write(1, line) for _ in range(1024)]; print('end')"
    command = [sys.executable, "-c", flood]
    server = UVServerProcess.start(command, "http://127.0.0.1:9", log=tmp_path / "server.log", log_limit=limit)
    try:
        assert server.process.wait(timeout=300) == 0
        server.log_tail()  # waits for the copy to end
        files = sorted(p.name for p in tmp_path.iterdir())
        assert files == ["server.log", "server.log.1", "server.log.2"]
        assert limit.size_bytes * 2 < sum((tmp_path / f).stat().st_size for f in files) <= limit.total_bytes
        assert all((tmp_path / f).read_bytes().startswith(COMMAND_PREFIX.encode()) for f in files)
        tail = server.log_tail(lines=1).splitlines()
        assert tail == [f"{COMMAND_PREFIX}{shlex.join(command)}", "end"]
    finally:
        server.stop()


PARENT = textwrap.dedent(
    """\
    import sys, time
    from openenvgen_servers.uv import UVServerProcess
    server = UVServerProcess.start([sys.executable, "-c", "import time; time.sleep(120)"], "http://127.0.0.1:9")
    print(server.process.pid, flush=True)
    time.sleep(120)
    """
)


def running(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_server_ends_when_the_process_that_started_it_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert running(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        deadline = time.monotonic() + 30
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(child), "the server outlived the process that started it"
    finally:
        parent.kill()
        parent.wait(30)
        if child and running(child):
            os.kill(child, signal.SIGKILL)


def test_a_server_gets_a_minimal_environment_and_the_variables_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of this process's environment reaches the server but the allowlist (PATH,
    HOME, locale, uv's settings), the names in `pass_env` and `env_vars`."""
    (tmp_path / "app.py").write_text(APP)
    monkeypatch.setenv("SOME_TRAINER_SECRET", "s3cr3t-of-the-trainer")
    monkeypatch.setenv("PASSED_BY_NAME", "named")
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    environs = []
    for pass_env in ([], ["PASSED_BY_NAME", "NOT_SET_ANYWHERE"]):
        port = free_port("127.0.0.1")
        server = UVServerProcess.start(
            app_command(port), f"http://127.0.0.1:{port}", env_vars={"GREETING": "hi"}, pass_env=pass_env, cwd=tmp_path
        )
        try:
            server.wait_ready(120)
            environs.append(httpx.get(f"{server.url}/health", timeout=10).json()["environ"])
        finally:
            server.stop()
    bare, passed = environs
    assert "SOME_TRAINER_SECRET" not in bare and "s3cr3t-of-the-trainer" not in json.dumps(environs)
    assert "PASSED_BY_NAME" not in bare and passed["PASSED_BY_NAME"] == "named"
    assert "NOT_SET_ANYWHERE" not in passed
    assert "PYTHONPATH" not in bare and "VIRTUAL_ENV" not in bare  # our imports are not the server's
    assert (bare["PATH"], bare["HOME"]) == (os.environ["PATH"], os.environ["HOME"])
    assert (bare["UV_OFFLINE"], bare["LC_ALL"], bare["GREETING"]) == ("1", "C.UTF-8", "hi")
    # Python itself may add a variable or two (LC_CTYPE under a C locale); nothing else is there.
    allowed = {k for k in bare if environment.is_base_name(k)} | {"GREETING"}
    assert set(bare) - allowed <= {"LC_CTYPE"}

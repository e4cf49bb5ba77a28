"""The access gate a Swarm replica runs, here as a process on loopback in front of a real
OpenEnv server (the guess env under uvicorn, started by the gate as a replica's would be):
without the secret only `GET /health` answers; `/ws`, `/reset`, `/step`, `/state`, `/mcp`
and the rest are 401, as is a wrong secret; with it, through the runtime's `ServerAccess`
and session relay, sessions play. The secret is in none of its output; SIGTERM reaches the
server and the gate exits with the server's code. The per-step cost of the gate and the
relay is measured and printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from openenvgen_runtime.access import incontainer
from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.relay import SessionRelays
from openenvgen_servers.ports import free_port
from openenvgen_servers.wire import wait_healthy
from openenvgen_testsupport.adapters import wait_for
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT
from openenvgen_testsupport.servers import group_gone


class Gated:
    def __init__(self, url: str, server_url: str, secret: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.server_url, self.secret, self.process, self.log = url, server_url, secret, process, log


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gated]:
    folder = tmp_path_factory.mktemp("gate")
    secret = secrets.token_urlsafe(32)
    (folder / "secret").write_text(secret)
    listen, upstream = free_port("127.0.0.1"), free_port("127.0.0.1")
    server = [sys.executable, "-m", "uvicorn", UV_FIXTURE_APP, "--host", "127.0.0.1", "--port", str(upstream)]
    log = folder / "gate.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(folder / "secret")]
            + ["--listen", str(listen), "--upstream", str(upstream), "--", *server],
            cwd=UV_FIXTURE_PROJECT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the gate and the server it starts: one group to end
        )
    try:
        wait_healthy(f"http://127.0.0.1:{listen}", 120)
        yield Gated(f"http://127.0.0.1:{listen}", f"http://127.0.0.1:{upstream}", secret, process, log)
    finally:
        # SIGTERM goes on to the server and the gate exits with it; then nothing of the
        # group may be left (a SIGKILLed gate would leave its server running, orphaned).
        process.terminate()
        try:
            process.wait(20)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        assert wait_for(lambda: group_gone(process.pid), 10), "the gate left its server running"


def test_without_the_secret_only_health_answers(gated: Gated) -> None:
    wrong = {"Authorization": f"Bearer {secrets.token_urlsafe(32)}"}
    basic = {"Authorization": "Basic " + "b3BlbmVudjp4"}  # openenv:x
    with httpx.Client(base_url=gated.url, trust_env=False, timeout=10) as http:
        assert http.get("/health").status_code == 200
        for headers in ({}, wrong, basic):
            statuses = [
                http.get("/schema", headers=headers).status_code,
                http.get("/metadata", headers=headers).status_code,
                http.post("/reset", json={}, headers=headers).status_code,
                http.post("/step", json={"action": {"guess": 1}}, headers=headers).status_code,
                http.get("/state", headers=headers).status_code,
                http.post(
                    "/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}, headers=headers
                ).status_code,
                http.post("/health", headers=headers).status_code,
            ]
            assert statuses == [401] * 7, (headers.keys(), statuses)

    async def handshake(headers: dict[str, str]) -> int:
        try:
            async with websockets.connect(gated.url.replace("http", "ws") + "/ws", additional_headers=headers):
                return 101
        except InvalidStatus as e:
            return e.response.status_code

    assert asyncio.run(handshake({})) == 401
    assert asyncio.run(handshake(wrong)) == 401


def test_the_run_with_the_secret_plays_and_the_secret_is_never_printed(gated: Gated) -> None:
    from openenv.core import GenericEnvClient

    async def main() -> list[Any]:
        access = ServerAccess()
        access.admit(gated.url, {"Authorization": f"Bearer {gated.secret}"})
        relays = SessionRelays(access, timeout=10)
        try:
            async with httpx.AsyncClient(trust_env=False, auth=access) as http:
                assert (await http.get(f"{gated.url}/schema")).status_code == 200
            results = []
            for seed in range(3):
                client = GenericEnvClient(base_url=await relays.session_url(gated.url))
                try:
                    await client.reset(seed=seed)
                    results.append(await client.step({"guess": 7}))
                finally:
                    await client.close()
            return results
        finally:
            await relays.close()

    results = asyncio.run(main())
    assert [(r.done, r.reward) for r in results] == [(True, 1.0)] * 3
    assert gated.secret not in gated.log.read_text(errors="replace")


def _step_times(url: str, steps: int) -> list[float]:
    from openenv.core import GenericEnvClient

    async def main() -> list[float]:
        client = GenericEnvClient(base_url=url)
        times = []
        try:
            await client.reset(seed=0)
            for _ in range(steps):
                started = time.perf_counter()
                await client.step({"guess": 1})
                times.append(time.perf_counter() - started)
        finally:
            await client.close()
        return times

    return asyncio.run(main())


def test_the_gate_and_the_relay_cost_little_per_step(gated: Gated) -> None:
    """Interleaved rounds of 100 steps each: straight to the server, through the gate
    (what a reader without the relay would see), and gate + relay (the runtime's path)."""

    async def relayed(work: Any) -> Any:
        access = ServerAccess()
        access.admit(gated.url, {"Authorization": f"Bearer {gated.secret}"})
        relays = SessionRelays(access, timeout=10)
        try:
            url = await relays.session_url(gated.url)
            return await asyncio.to_thread(work, url)
        finally:
            await relays.close()

    direct: list[float] = []
    through: list[float] = []
    for _ in range(3):
        direct += _step_times(gated.server_url, 100)
        through += asyncio.run(relayed(lambda url: _step_times(url, 100)))
    median_direct, median_through = statistics.median(direct), statistics.median(through)
    print(
        f"\nper-step latency: direct {median_direct * 1e3:.2f} ms, gate + relay {median_through * 1e3:.2f} ms "
        f"(+{(median_through - median_direct) * 1e3:.2f} ms median over {len(direct)} steps each)"
    )
    assert median_through - median_direct < 0.005, (median_direct, median_through)


def test_sigterm_reaches_the_server_and_the_gate_exits_with_its_code(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x" * 32)
    child = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(7)); "
        "print('up', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen(
        [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(tmp_path / "secret")]
        + ["--listen", str(free_port("127.0.0.1")), "--upstream", "1", "--", sys.executable, "-c", child],
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == b"up"
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 7
    finally:
        if process.poll() is None:
            process.kill()


def test_a_secret_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(tmp_path / "absent")]
        + ["--listen", "1", "--upstream", "2", "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"access gate: cannot read the secret file {tmp_path / 'absent'}: No such file or directory"
    )


def test_variable_files_become_the_servers_environment_and_nothing_else(tmp_path: Path) -> None:
    """Each `--env-file NAME=FILE` is NAME in the server's environment, the file's bytes as
    they are (a trailing newline, a non-UTF-8 byte); the gate's own environment and every
    command line hold no value."""
    (tmp_path / "secret").write_text("x" * 32)
    values = {"PASSED_TOKEN": secrets.token_urlsafe(24).encode(), "PASSED_ODD": b"two words\n\xff "}
    for name, value in values.items():
        (tmp_path / name).write_bytes(value)
    child = (
        "import os, sys, time; "
        "sys.stdout.write(repr({k: os.environb.get(k.encode()) for k in ('PASSED_TOKEN', 'PASSED_ODD')}) + '\\n'); "
        "sys.stdout.flush(); time.sleep(60)"
    )
    env_files = [arg for name in values for arg in ("--env-file", f"{name}={tmp_path / name}")]
    process = subprocess.Popen(
        [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(tmp_path / "secret"), *env_files]
        + ["--listen", str(free_port("127.0.0.1")), "--upstream", "1", "--", sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().decode().strip() == repr(values)
        gate_environment = Path(f"/proc/{process.pid}/environ").read_bytes()
        gate_command = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        for value in values.values():
            assert value not in gate_environment and value not in gate_command
    finally:
        process.kill()
        process.wait(10)


def test_a_variable_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x" * 32)
    proc = subprocess.run(
        [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(tmp_path / "secret")]
        + ["--env-file", f"SOME_KEY={tmp_path / 'absent'}", "--listen", "1", "--upstream", "2", "--", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"access gate: cannot read the variable file {tmp_path / 'absent'}: No such file or directory"
    )


def test_no_server_command_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x" * 32)
    proc = subprocess.run(
        [sys.executable, "-I", incontainer.__file__, "gate", "--secret-file", str(tmp_path / "secret")]
        + ["--listen", "1", "--upstream", "2", "--"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "access gate: no server command given (set provider_kwargs.command)"

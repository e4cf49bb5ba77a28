"""`openenv-gen replay NAME` as a person runs it: start it, then play, doctor and a package's
`connect()` against the URL it prints, with nothing but loopback; a bad NAME and a port in use
are each one line. Every run is a real `openenv-gen` process; the server is stopped with Ctrl-C
(SIGINT to its process group, as a terminal sends it) and nothing of it is left."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenvgen_schemas.doctor_report import DoctorReport
from openenvgen_testsupport.generating import gen
from openenvgen_testsupport.paths import OPENENV_GEN
from openenvgen_testsupport.servers import replay_server

pytestmark = pytest.mark.rollout


@pytest.fixture
def replay_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """`openenv-gen replay NAME --port 0` running; its URL."""
    with replay_server([OPENENV_GEN, "replay", request.param, "--port", "0"], tmp_path / "replay.log") as url:
        yield url


@pytest.mark.parametrize("replay_url", ["wordle"], indirect=True)
def test_play_and_connect_on_the_replayed_wordle(replay_url: str, tmp_path: Path) -> None:
    script = tmp_path / "replies.txt"
    script.write_text("[crane]\n")
    played = gen("play", "wordle", "--base-url", replay_url, "--script", str(script))
    assert played.returncode == 0, played.stderr
    # The recorded feedback to the recorded guess reaches the player.
    assert "You submitted [crane]" in played.stdout and "X Y X X Y" in played.stdout

    user_script = tmp_path / "user_test.py"
    user_script.write_text(
        textwrap.dedent(f"""
        import asyncio

        from wordle_openenv import connect
        from wordle_openenv.models import TextArenaAction

        async def main():
            async with connect(base_url={replay_url!r}) as env:
                observation = await env.reset(seed=0)
                action = TextArenaAction.model_validate({{"message": "[crane]"}})
                result = await env.step(action)
                print(result.reward, result.done, "[crane]" in result.observation.prompt + str(result.observation))

        asyncio.run(main())
        """)
    )
    connected = subprocess.run([sys.executable, str(user_script)], capture_output=True, text=True, timeout=120)
    assert connected.returncode == 0, connected.stderr
    assert connected.stdout.split() == ["0.0", "False", "True"]


@pytest.mark.parametrize("replay_url", ["connect4"], indirect=True)
def test_doctor_on_the_replayed_connect4(replay_url: str, tmp_path: Path) -> None:
    html = tmp_path / "doctor.html"
    result = gen("doctor", "connect4", "--base-url", replay_url, "--json", "--html", str(html))
    assert result.returncode == 0, result.stderr
    report = DoctorReport.model_validate_json(result.stdout)
    checks = {check.name: check.verdict for check in report.checks}
    assert report.launch == "base_url"
    assert checks["schema_fidelity"] == "pass" and checks["episodes"] == "pass", json.loads(result.stdout)
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_a_bad_name_is_one_line() -> None:
    typo = gen("replay", "wordel")
    assert (typo.returncode, typo.stdout) == (64, "")
    assert typo.stderr.startswith("openenv-gen: error: unknown env 'wordel'; did you mean wordle? replayable: ")
    assert len(typo.stderr.splitlines()) == 1
    # What replay takes instead: the envs it can serve, not generation's --base-url/--schema-file.
    offered = typo.stderr.split("replayable: ", 1)[1].strip().split(", ")
    assert {"wordle", "connect4"} <= set(offered) and "julia" not in offered, typo.stderr
    assert "--base-url" not in typo.stderr and "--schema-file" not in typo.stderr, typo.stderr
    no_recording = gen("replay", "julia")
    assert no_recording.returncode == 64
    assert no_recording.stderr.startswith(
        "openenv-gen: error: julia has no recorded episode to replay; it needs its server: running code needs"
    )
    assert len(no_recording.stderr.splitlines()) == 1


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = gen("replay", "wordle", "--port", str(port))
    assert (result.returncode, result.stdout) == (69, "")
    assert result.stderr == f"replay: port {port} on 127.0.0.1 is in use; pick another: --port PORT (0: a free one)\n"

"""A token-gated OpenEnv server end to end: the wordle fixture env behind a bearer token
(`openenvgen_testsupport.gated`: only `/health` open; every other route and `/ws` need the
token). With the token given by variable name (`--header Authorization=GATE_AUTH`, the value
in $GATE_AUTH), `openenv-gen NAME --base-url`, `check --upstream`, `regen --from-upstream`,
`doctor --base-url` and `play --base-url` (in a real terminal, as a person plays) work, and the
token is in no file written, no output and no command line; without it each fails with one
line that names the option that gives it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenvgen_testsupport.gated import make_gated_app
from openenvgen_testsupport.generating import assert_one_line_error, gen
from openenvgen_testsupport.paths import OPENENV_GEN
from openenvgen_testsupport.servers import serve_app
from openenvgen_testsupport.terminal import Terminal, needs_tmux

pytestmark = pytest.mark.timeout(900)
TOKEN = secrets.token_urlsafe(24)
VARIABLE = "GATE_AUTH"
HEADER = ["--header", f"Authorization={VARIABLE}"]
WITH_TOKEN = {VARIABLE: f"Bearer {TOKEN}"}
MISSING = "a header with a credential is missing or refused"


@pytest.fixture(scope="module")
def gated_url() -> Iterator[str]:
    with serve_app(make_gated_app(TOKEN), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def package_dir(gated_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pkgs") / "gated"
    made = gen("gated", "--base-url", gated_url, "--out", str(out), *HEADER, env=WITH_TOKEN)
    assert made.returncode == 0, made.stderr
    assert TOKEN not in made.stdout + made.stderr
    return out


def assert_no_token(root: Path) -> None:
    """The token is in no file under `root` (the lock and the snapshot included)."""
    assert [p for p in root.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()] == []


def test_generation_reaches_a_gated_server_by_variable_name(
    gated_url: str, package_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (package_dir / "openenv-gen.lock").is_file()
    assert_no_token(package_dir)
    without = gen("gated", "--base-url", gated_url, "--out", str(tmp_path / "without"))
    assert_one_line_error(without, 69, f"{gated_url}/schema: HTTP 401, {MISSING}: pass it with --header NAME=VARIABLE")
    assert not (tmp_path / "without").exists()
    monkeypatch.delenv(VARIABLE, raising=False)
    not_set = gen("gated", "--base-url", gated_url, "--out", str(tmp_path / "not-set"), *HEADER)
    assert_one_line_error(not_set, 64, f"--header: the Authorization header takes its value from ${VARIABLE}")
    no_url = gen("gated", "--out", str(tmp_path / "no-url"), *HEADER)
    assert_one_line_error(no_url, 64, "--header and --ca-bundle are for a server: pass --base-url too")


def test_check_and_regen_from_a_gated_upstream(gated_url: str, package_dir: Path) -> None:
    checked = gen("check", str(package_dir), "--upstream", "--base-url", gated_url, *HEADER, env=WITH_TOKEN)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    refused = gen("check", str(package_dir), "--upstream", "--base-url", gated_url)
    assert_one_line_error(refused, 69, f"HTTP 401, {MISSING}: pass it with --header NAME=VARIABLE")

    regen = gen("regen", str(package_dir), "--from-upstream", "--base-url", gated_url, *HEADER, env=WITH_TOKEN)
    assert regen.returncode == 0, regen.stdout + regen.stderr
    assert_no_token(package_dir)
    wrong = gen("regen", str(package_dir), "--from-upstream", "--base-url", gated_url, *HEADER, env={VARIABLE: "no"})
    assert_one_line_error(wrong, 69, f"HTTP 401, {MISSING}: check the value of ${VARIABLE}")


def test_doctor_measures_a_gated_server(gated_url: str, package_dir: Path) -> None:
    args = ["doctor", str(package_dir), "--base-url", gated_url, "--episodes", "2", "--group-size", "1"]
    args += ["--capacity-bound", "2"]
    measured = gen(*args, "--max-steps", "2", "--json", *HEADER, env=WITH_TOKEN)
    assert measured.returncode in (0, 1), measured.stderr  # 1: a check failed, still measured
    report = json.loads(measured.stdout)
    assert report["checks"], report
    assert TOKEN not in measured.stdout + measured.stderr
    refused = gen(*args, "--max-steps", "2")
    assert refused.returncode == 69
    # stderr: the progress line, then the one error line
    (line,) = [line for line in refused.stderr.strip().splitlines() if "error" in line]
    assert f"HTTP 401, {MISSING}; set base_url_headers (play, doctor: --header NAME=VARIABLE)" in line


def test_play_without_the_header_is_one_line(gated_url: str, package_dir: Path) -> None:
    played = subprocess.run(
        [OPENENV_GEN, "play", str(package_dir), "--base-url", gated_url],
        input="",
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert played.returncode != 0
    (line,) = played.stderr.strip().splitlines()
    assert "--header NAME=VARIABLE" in line and TOKEN not in line


@needs_tmux
def test_a_person_plays_a_gated_server_in_a_terminal(gated_url: str, package_dir: Path) -> None:
    # The token reaches the player through the terminal's environment, never its command line.
    command = (
        f"{OPENENV_GEN} play {package_dir} --base-url {gated_url} --header Authorization={VARIABLE}"
        f' --set \'resets=[{{"secret": "crane"}}]\''
    )
    with Terminal(command, env={**os.environ, VARIABLE: WITH_TOKEN[VARIABLE]}) as terminal:
        assert "Guess the secret" in terminal.wait_for("Guess the secret")
        terminal.type("[crane]")
        assert TOKEN not in terminal.wait_for("total reward 1")
        assert terminal.exit_status() == 0

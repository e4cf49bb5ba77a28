"""`openenv-gen play`: a person in the model's seat. Driven in a real terminal (tmux), piped a
script, and shown to print exactly what a `vf-eval` rollout's model reads."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.paths import OPENENV_GEN
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import ScriptedChatModel, ToolCalls
from openenvgen_testsupport.servers import serve_app
from openenvgen_testsupport.terminal import Terminal, needs_tmux

CUSTOM = """
SYSTEM_PROMPT = "Play the word game. Reply with your guess in square brackets only."

def render_observation(observation: dict) -> str:
    return f"Board says: {observation['prompt']} | marks: {observation.get('feedback') or '-'}"
"""


@pytest.fixture(scope="module")
def wordle_url() -> Any:
    with serve_app(make_wordle_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def package_dir(wordle_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pkgs")
    package_id = generate_from_server("playword", wordle_url, root)
    folder = root / package_id.removesuffix("-openenv").replace("-", "_")
    module = package_id.replace("-", "_")
    (folder / module / "custom.py").write_text(CUSTOM)
    return folder


def _play(package_dir: Path, *args: str, stdin: str = "", timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OPENENV_GEN, "play", str(package_dir), *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def _turns(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_a_piped_script_plays_to_done_and_prints_each_turn(package_dir: Path, wordle_url: str) -> None:
    reset = json.dumps([{"secret": "crane"}])
    run = _play(
        package_dir, "--base-url", wordle_url, "--set", f"resets={reset}", "--json", stdin="[slate]\n\n[crane]\n"
    )
    assert run.returncode == 0, run.stderr
    turns = _turns(run.stdout)
    assert turns[0]["role"] == "system" and turns[0]["text"].startswith("Play the word game")
    assert [t["role"] for t in turns[1:]] == ["user", "user", "end"]
    assert turns[1]["text"].startswith("Observation:\nBoard says: Guess the secret")
    assert turns[2]["reward"] == 0.0 and "marks: X X G X G" in turns[2]["text"]
    assert turns[-1]["done"] is True and turns[-1]["reward"] == 1.0 and turns[-1]["stop"] == "env_done"


def test_a_script_may_be_any_readable_file_a_pipe_too(package_dir: Path, wordle_url: str, tmp_path: Path) -> None:
    """`--script <(...)`, as a shell writes it: the replies come through a pipe (/dev/fd/N)."""
    reset = shlex.quote(json.dumps([{"secret": "crane"}]))
    replies = "--script <(echo '[crane]')"
    command = f"{OPENENV_GEN} play {package_dir} --base-url {wordle_url} --set resets={reset} --json {replies}"
    piped = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=240)
    assert piped.returncode == 0, piped.stderr
    assert _turns(piped.stdout)[-1]["reward"] == 1.0
    for unreadable, reason in (
        (tmp_path / "no-such-replies.txt", "no such file or directory"),
        (tmp_path, "is a directory"),
    ):
        refused = _play(package_dir, "--script", str(unreadable))
        assert (refused.returncode, refused.stderr) == (64, f"openenv-gen: error: --script {unreadable}: {reason}\n")


def test_an_invalid_action_gets_the_models_refusal_and_bad_input_is_one_line(
    package_dir: Path, wordle_url: str
) -> None:
    run = _play(package_dir, "--base-url", wordle_url, "--json", stdin='{"guess": "crane"}\n')
    assert run.returncode == 0, run.stderr
    refusal = _turns(run.stdout)[2]
    assert refusal["text"].startswith("That reply is not a valid action: message: Field required")
    unknown = _play(Path("no-such-package-or-env"))
    assert unknown.returncode == 64 and len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr
    unreachable = _play(package_dir, "--base-url", "http://127.0.0.1:9")
    assert unreachable.returncode == 69 and len(unreachable.stderr.strip().splitlines()) == 1, unreachable.stderr
    # The same failed launch exits as `doctor` does for it: one table of exit codes.
    doctor = subprocess.run(
        [OPENENV_GEN, "doctor", str(package_dir), "--base-url", "http://127.0.0.1:9", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert doctor.returncode == unreachable.returncode == 69, doctor.stderr


def test_an_env_name_is_matched_whatever_its_case_and_a_typo_gets_a_suggestion() -> None:
    typo = _play(Path("wordel"))
    assert typo.returncode == 64, typo.stderr
    (line,) = typo.stderr.strip().splitlines()
    assert "did you mean wordle?" in line
    refused = _play(Path("calendar_env"))
    assert refused.returncode == 64, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "calendar_env cannot run here" in line and "serves no /schema" in line


@needs_tmux
def test_a_person_plays_in_a_terminal(package_dir: Path, wordle_url: str) -> None:
    command = f'{OPENENV_GEN} play {package_dir} --base-url {wordle_url} --set \'resets=[{{"secret": "crane"}}]\''
    with Terminal(command) as terminal:
        assert "Board says: Guess the secret" in terminal.wait_for_prompt()
        terminal.type("[crane]")
        assert "── done · reward 1" in terminal.wait_for("total reward 1")
        assert terminal.exit_status() == 0


@needs_tmux
def test_ctrl_c_in_a_terminal_ends_play_with_130_and_leaves_no_process(package_dir: Path, wordle_url: str) -> None:
    def ours() -> list[str]:
        """The processes of this play (the CLI and the runtime's player), by their command lines."""
        found = []
        for proc in Path("/proc").iterdir():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(package_dir) in cmdline and "play" in cmdline and "echo $?" not in cmdline:  # not the shell
                found.append(f"{proc.name}: {cmdline}")
        return found

    with Terminal(f"{OPENENV_GEN} play {package_dir} --base-url {wordle_url}") as terminal:
        terminal.wait_for_prompt()
        assert len(ours()) == 2, ours()  # the CLI and its player, waiting for a reply
        terminal.press("C-c")
        assert terminal.exit_status() == 130
        assert ours() == []


def _model_read(model: ScriptedChatModel) -> list[tuple[str, str]]:
    """(role, text) of every non-assistant message of the last request: what the model read."""
    messages = model.requests[-1]["messages"]
    read = []
    for message in messages:
        if message["role"] == "assistant":
            continue
        content = message["content"]
        text = content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)
        read.append(("tool" if message["role"] == "tool" else message["role"], text))
    return read


@pytest.mark.rollout
@pytest.mark.parametrize("action_format", ["text", "tools"])
def test_play_prints_what_the_model_reads_in_a_vf_eval_rollout(
    package_dir: Path, wordle_url: str, tmp_path: Path, action_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = ["[slate]", "not an action {", "[crane]"]
    if action_format == "tools":
        script: list[Any] = [ToolCalls([("act", json.dumps({"message": r}))]) for r in replies]
        lines = [f"act {json.dumps({'message': r})}" for r in replies]
    else:
        script, lines = list(replies), list(replies)
    taskset = {"base_url": wordle_url, "resets": [{"secret": "crane"}], "action_format": action_format}
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(package_dir), *sys.path]))
    from openenvgen_testsupport.scripted_model import Script

    model = ScriptedChatModel(Script(script))
    with serve_app(model) as model_url:
        run = run_eval(package_dir.name + "-openenv", model_url=str(model_url), out_dir=tmp_path, taskset=taskset)
    assert run.returncode == 0, run.stderr[-4000:]
    settings = [arg for key, value in taskset.items() for arg in ("--set", f"{key}={json.dumps(value)}")]
    played = _play(package_dir, *settings, "--json", stdin="\n".join(lines) + "\n")
    assert played.returncode == 0, played.stderr
    turns = [t for t in _turns(played.stdout) if t["role"] != "end"]
    shown = [("tool" if t["role"].startswith("tool") else t["role"], t["text"]) for t in turns]
    assert shown == _model_read(model)

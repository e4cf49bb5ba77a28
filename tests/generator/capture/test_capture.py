"""`openenv-gen capture`: envs of an OpenEnv-style checkout, started as the UV provider
starts them, recorded into replayable captures and catalog snapshots.

The checkout is made here with the layout of huggingface/OpenEnv (`envs/NAME/` with a
pyproject mapping the folder to the `NAME` package, the app in `server/app.py`): two envs
that run on openenv 0.10.0 in their own uv environments (the guess-the-number env of
tests/fixtures/uv_env, which has no randomness, and a dice env whose reset rolls a die
without its seed) and one whose app fails on import. The guess env's catalog entry has run
settings (`capture = { python, with, overrides }`), as grid_world, openspiel and dm_control
have. One capture run records all three; the tests read what it wrote (the session, the
seed verdicts, the server's validation rulings), serve it back with the replay server and
build a catalog from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenvgen.capture.checkout import env_folders, run_capture
from openenvgen.capture.snapshots import with_source, write_catalog
from openenvgen.sources.uv_server import RunSettings, override_project, uv_command, uv_run_prefix
from openenvgen_testsupport.paths import UV_FIXTURE_PROJECT
from openenvgen_testsupport.replay_env import catalog_action, load_recording, make_replay_app
from openenvgen_testsupport.servers import serve_app

COMMIT = "0123456789abcdef0123456789abcdef01234567"

_PYPROJECT = """\
[project]
name = "openenv-{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["openenv==0.10.0", "uvicorn>=0.30"]

[build-system]
requires = ["setuptools>=45", "wheel"]
build-backend = "setuptools.build_meta"

[tool.setuptools]
packages = ["{name}", "{name}.server"]
package-dir = {{ "{name}" = ".", "{name}.server" = "server" }}
"""

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CATALOG = f"""\
[envs.guess]
env_folder = "guess_env"
env_id = "openenv/guess_env"
app = "guess_env.server.app:app"
action_hint = "Guess a number from 0 to 9."
example_action = {{ guess = 3 }}
episode = [{{ guess = 3 }}, {{ guess = 7 }}]
# Requirements the env has already: the run settings change what uv is asked, not what runs.
capture = {{ python = "{PYTHON}", with = ["uvicorn>=0.30"], overrides = ["uvicorn>=0.30"] }}

[envs.dice]
env_folder = "dice_env"
env_id = "openenv/dice_env"
app = "dice_env.server.app:app"
action_hint = "Say stop."
example_action = {{ stop = true }}
"""

DICE_APP = """\
import random

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import field_validator


class DiceAction(Action):
    stop: bool

    @field_validator("stop", mode="before")
    @classmethod
    def _no_strings(cls, value):
        # A TypeError is not a validation error to pydantic: the server answers 500.
        if isinstance(value, str):
            raise TypeError("stop must be a JSON boolean, not a string")
        return value


class DiceObservation(Observation):
    roll: int = 0


class DiceEnvironment(Environment):
    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> DiceObservation:
        # Takes `seed` and drops it, as textarena_env does: every reset rolls anew.
        self._state = State(episode_id=episode_id, step_count=0)
        return DiceObservation(roll=random.SystemRandom().randrange(10**9), reward=0.0, done=False)

    def step(self, action: DiceAction, timeout_s=None, **kwargs) -> DiceObservation:
        if not action.stop:
            raise ValueError("the only move is to stop")  # a step that raises: also a 500
        self._state.step_count += 1
        return DiceObservation(roll=0, reward=1.0, done=True)

    @property
    def state(self) -> State:
        return self._state


app = create_app(DiceEnvironment, DiceAction, DiceObservation, env_name="dice_env")
"""


def _env(checkout: Path, name: str, app_source: str) -> None:
    folder = checkout / "envs" / name
    (folder / "server").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(_PYPROJECT.format(name=name))
    (folder / "__init__.py").write_text("")
    (folder / "server" / "__init__.py").write_text("")
    (folder / "server" / "app.py").write_text(app_source)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("capture")
    checkout = root / "OpenEnv"
    _env(checkout, "guess_env", (UV_FIXTURE_PROJECT / "guess_env" / "server.py").read_text())
    _env(checkout, "broken_env", 'raise RuntimeError("broken_env needs a GPU")\n')
    _env(checkout, "dice_env", DICE_APP)
    (checkout / "envs" / "README.md").write_text("not an env\n")
    data = root / "data"
    data.mkdir()
    (data / "catalog.toml").write_text(CATALOG)
    out = root / "captures"
    lines: list[str] = []
    # The guess env's `python = "<this version>"` is found through the --python mapping.
    interpreters = {PYTHON: sys.executable}
    index = run_capture(
        checkout,
        out=out,
        commit=COMMIT,
        timeout=300,
        catalog_dir=data,
        jobs=2,
        interpreters=interpreters,
        echo=lines.append,
    )
    return {"index": index, "out": out, "data": data, "checkout": checkout, "lines": lines}


def test_env_folders_follow_the_upstream_layout(captured: dict[str, Any]) -> None:
    envs = env_folders(captured["checkout"])
    assert [(e.name, e.app) for e in envs] == [
        ("broken_env", "broken_env.server.app:app"),
        ("dice_env", "dice_env.server.app:app"),
        ("guess_env", "guess_env.server.app:app"),
    ]
    # The UV provider's command, as openenv 0.4.1's uv_provider builds it.
    command = uv_command(envs[2], 8123)
    assert command[1:] == [
        "run", "--isolated", "--project", str(envs[2].path), "--",
        "uvicorn", "guess_env.server.app:app", "--host", "127.0.0.1", "--port", "8123", "--workers", "1",
    ]  # fmt: skip


def test_capture_index_lists_what_ran_and_why_the_rest_did_not(captured: dict[str, Any]) -> None:
    index = captured["index"]
    assert index["commit"] == COMMIT
    assert index["captured"] == ["dice_env", "guess_env"]
    assert list(index["failed"]) == ["broken_env"]
    assert "broken_env needs a GPU" in index["failed"]["broken_env"]
    assert json.loads((captured["out"] / "capture.json").read_text()) == index
    assert not (captured["out"] / "broken_env").exists()


def test_recording_holds_the_servers_replies_and_the_catalog_episode(captured: dict[str, Any]) -> None:
    folder = captured["out"] / "guess_env"
    assert json.loads((folder / "health.json").read_text())["status"] == "healthy"
    schema = json.loads((folder / "schema.json").read_text())
    assert schema["action"]["required"] == ["guess"]
    assert json.loads((folder / "mcp_probe.json").read_text())["error"]["message"] == "Environment does not support MCP"
    recording = load_recording("guess_env", root=captured["out"])
    assert recording.reset_kwargs == {}
    assert recording.reset["observation"]["hint"] == "guess a number from 0 to 9"
    assert [catalog_action(recording, s.action) for s in recording.steps] == [{"guess": 3}, {"guess": 7}]
    assert [(s.reply["observation"]["hint"], s.reply["reward"], s.reply["done"]) for s in recording.steps] == [
        ("higher", 0.0, False),
        ("right", 1.0, True),
    ]
    source = json.loads((folder / "source.json").read_text())
    assert (source["commit"], source["env_dir"], source["app"]) == (
        COMMIT,
        "envs/guess_env",
        "guess_env.server.app:app",
    )
    assert source["versions"]["openenv"] == "0.10.0"  # as the env's pyproject pins it


def test_catalog_is_rebuilt_from_the_capture(captured: dict[str, Any]) -> None:
    data = captured["data"]
    snapshot = json.loads((data / "snapshots" / "guess.json").read_text())
    schema = json.loads((captured["out"] / "guess_env" / "schema.json").read_text())
    # /schema's generic `state` is never kept; openenv 0.10 serves `reset_observation` too.
    assert snapshot["schema"] == {k: schema[k] for k in ("action", "observation", "reset_observation")}
    assert snapshot["tools"] is None
    catalog = (data / "catalog.toml").read_text()
    assert f'[source]\nrepo = "huggingface/OpenEnv"\ncommit = "{COMMIT}"\n' in catalog
    # Rebuilding again changes nothing (the [source] table is replaced, not added twice).
    write_catalog(captured["out"], data, echo=lambda _: None)
    assert (data / "catalog.toml").read_text() == catalog


def test_run_settings_reach_uv_and_the_record(captured: dict[str, Any], tmp_path: Path) -> None:
    source = json.loads((captured["out"] / "guess_env" / "source.json").read_text())
    assert source["run_settings"] == {"python": PYTHON, "with": ["uvicorn>=0.30"], "overrides": ["uvicorn>=0.30"]}
    assert source["command"][:9] == [
        "uv", "run", "--isolated", "--python", PYTHON, "--with", "uvicorn>=0.30", "--project",
        "<a wrapper project: envs/guess_env with override-dependencies ['uvicorn>=0.30']>",
    ]  # fmt: skip
    # What ran is what the settings asked for: the interpreter's version, openenv as pinned.
    assert source["versions"]["python"].startswith(f"{PYTHON}.")
    assert source["versions"]["openenv"] == "0.10.0"
    # An env without settings runs exactly as the UV provider runs it.
    dice = json.loads((captured["out"] / "dice_env" / "source.json").read_text())
    assert "run_settings" in dice and dice["run_settings"] == {}
    assert dice["command"][:6] == ["uv", "run", "--isolated", "--project", "envs/dice_env", "--"]
    # The wrapper depends on the env by path and applies the overrides; uv gets its flags.
    env = env_folders(captured["checkout"], ["guess_env"])[0]
    wrapper = (override_project(env, ("openenv>=0.4",), tmp_path / "w") / "pyproject.toml").read_text()
    parsed = tomllib.loads(wrapper)
    assert parsed["project"]["dependencies"] == ["openenv-guess_env"]
    assert parsed["tool"]["uv"]["override-dependencies"] == ["openenv>=0.4"]
    assert parsed["tool"]["uv"]["sources"]["openenv-guess_env"] == {"path": str(env.path)}
    settings = RunSettings(python="3.12", with_=("open-spiel==2.0.2",))
    assert uv_run_prefix(env, settings, python="/opt/py312/bin/python")[1:] == [
        "run", "--isolated", "--python", "/opt/py312/bin/python", "--with", "open-spiel==2.0.2",
        "--project", str(env.path), "--",
    ]  # fmt: skip


def test_cli_refuses_an_unknown_run_setting_and_a_bad_interpreter(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"unknown key\(s\) pythn"):
        RunSettings.from_entry({"capture": {"pythn": "3.12"}})
    checkout = tmp_path / "OpenEnv"
    (checkout / "envs" / "x_env").mkdir(parents=True)
    (checkout / "envs" / "x_env" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    done = _cli("capture", str(checkout), "--commit", COMMIT, "--python", "3.12", "--out", str(tmp_path / "out"))
    assert done.returncode == 64
    assert (
        done.stderr.strip()
        == "openenv-gen: error: --python '3.12': expected VERSION=PATH, e.g. 3.12=/usr/bin/python3.12"
    )
    assert not (tmp_path / "out").exists()


def test_seed_verdicts_tell_an_env_without_randomness_from_one_that_drops_the_seed(captured: dict[str, Any]) -> None:
    guess = json.loads((captured["out"] / "guess_env" / "seed.json").read_text())
    assert guess["verdict"] == "deterministic"
    assert guess["evidence"]["points"] == 3  # the reset and the two catalog steps
    assert guess["evidence"]["same_seed_differs_at"] == guess["evidence"]["other_seed_differs_at"] == []
    dice = json.loads((captured["out"] / "dice_env" / "seed.json").read_text())
    assert dice["verdict"] == "not_reproducible"
    # Where the two same-seed sessions differed, never what the values were.
    assert dice["evidence"]["same_seed_differs_at"] == ["reset.observation.roll"]
    assert "roll" not in json.dumps(dice["evidence"]).replace("reset.observation.roll", "")
    # The catalog keeps the verdicts, with a line for people.
    seeding = json.loads((captured["data"] / "seeding.json").read_text())
    assert seeding["dice"]["verdict"] == "not_reproducible"
    assert (
        seeding["dice"]["summary"]
        == "3 sessions reset with seed 0 differed over the reset and 1 step, at reset.observation.roll"
    )
    assert (
        seeding["guess"]["summary"]
        == "3 sessions reset with seed 0 and 2 with seeds 1 and 2 played the same episode over the reset and 2 steps"
    )
    assert guess["evidence"]["sessions"] == [3, 2]


def test_validation_rulings_are_what_the_server_did(captured: dict[str, Any]) -> None:
    record = json.loads((captured["out"] / "guess_env" / "validation.json").read_text())
    cases = record["cases"]
    assert record["endpoint"] == "POST /step"
    assert (record["accepted"], record["rejected"]) == (
        sum(c["accepted"] is True for c in cases),
        sum(c["accepted"] is False for c in cases),
    )
    assert record["accepted"] >= 10 and record["rejected"] >= 5
    # Each ruling agrees with the env's own model (GuessAction: `guess: int`, extra fields
    # forbidden, as openenv's Action is): the server's answers were recorded, not guessed.
    from pydantic import ValidationError

    sys.path.insert(0, str(UV_FIXTURE_PROJECT))
    try:
        from guess_env.server import GuessAction
    finally:
        sys.path.remove(str(UV_FIXTURE_PROJECT))
    for case in cases:
        try:
            GuessAction.model_validate(case["action"])
        except ValidationError:
            assert case["accepted"] is False and case["errors"], case
        else:
            assert case["accepted"] is True and case["status"] == 200, case
    # A 500 is told apart by the server's log: a validator that raised is a rejection, a
    # step that raised got past validation.
    dice = json.loads((captured["out"] / "dice_env" / "validation.json").read_text())["cases"]
    raised = [c for c in dice if isinstance(c["action"], dict) and isinstance(c["action"].get("stop"), str)]
    stepped = [
        c
        for c in dice
        if isinstance(c["action"], dict)
        and c["action"].get("stop") is False
        and set(c["action"]) <= {"stop", "metadata"}
        and isinstance(c["action"].get("metadata", {}), dict)
    ]
    assert raised and stepped
    for case in raised:
        assert case["accepted"] is False, case
        assert case["errors"] == [
            {"type": "raised", "loc": None, "msg": "TypeError: stop must be a JSON boolean, not a string"}
        ]
    assert all(c["accepted"] is True and c["status"] == 500 for c in stepped), stepped
    # Sampling is derandomised: the same schema gives the same actions.
    from openenvgen.capture.validation import sample_actions

    schema = json.loads((captured["out"] / "guess_env" / "schema.json").read_text())["action"]
    assert sample_actions(schema)[0] == [c["action"] for c in cases]


def test_replay_of_the_capture_speaks_like_the_env(captured: dict[str, Any]) -> None:
    replay = make_replay_app("guess_env", root=captured["out"])
    with serve_app(replay.app, ready_path="/health") as url:
        assert httpx.get(f"{url}/schema").json()["action"] == replay.recording.schema["action"]
        assert httpx.get(f"{url}/metadata").json() == replay.recording.metadata


def test_with_source_replaces_only_the_source_table() -> None:
    text = (
        '# head\n\n[source]  # where from\nrepo = "a/b"\ncommit = "old"\n\n# the envs\n[envs.x]\nenv_folder = "x_env"\n'
    )
    assert with_source(text, "a/b", "new") == text.replace('"old"', '"new"')
    # A catalog without one gets the table; its entries stay as they were.
    added = with_source('# head\n[envs.x]\nenv_folder = "x"\n', "a/b", "c")
    assert added.startswith('# head\n[envs.x]\nenv_folder = "x"\n')
    assert tomllib.loads(added) == {"envs": {"x": {"env_folder": "x"}}, "source": {"repo": "a/b", "commit": "c"}}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "openenvgen.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_cli_refuses_what_is_not_a_checkout(tmp_path: Path) -> None:
    done = _cli("capture", str(tmp_path), "--commit", COMMIT, "--out", str(tmp_path / "out"))
    assert done.returncode == 64
    assert done.stderr.strip() == f"openenv-gen: error: {tmp_path}: not an OpenEnv checkout (no envs/ folder)"


def test_cli_needs_the_commit_of_an_exported_checkout(tmp_path: Path) -> None:
    (tmp_path / "envs" / "x_env").mkdir(parents=True)
    (tmp_path / "envs" / "x_env" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    done = _cli("capture", str(tmp_path), "--out", str(tmp_path / "out"))
    assert done.returncode == 64
    assert "pass the commit it was exported from with --commit" in done.stderr


def test_cli_exits_1_when_a_named_env_fails(captured: dict[str, Any], tmp_path: Path) -> None:
    checkout = tmp_path / "OpenEnv"
    shutil.copytree(captured["checkout"] / "envs" / "broken_env", checkout / "envs" / "broken_env")
    done = _cli("capture", str(checkout), "--only", "broken_env", "--commit", COMMIT, "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr
    # The line says what failed and ends with the end of the server's log: the error.
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("broken_env: FAILED")]
    assert "server exited with 1 while starting" in line and "broken_env needs a GPU" in line
    assert textwrap.dedent(done.stdout).strip().endswith(f"see {tmp_path / 'out' / 'capture.json'}")


def _processes_naming(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (zombies have none)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(cmdline)
    return found


def test_generate_from_an_env_project_starts_it_generates_and_stops_it(tmp_path: Path) -> None:
    """An env author's own env: `openenv-gen NAME --project DIR` serves the manifest's app
    with the UV provider's command, generates from the live server, and stops it."""
    project = tmp_path / "guess_project"
    shutil.copytree(UV_FIXTURE_PROJECT, project)
    out = tmp_path / "pkg"
    done = _cli("guess", "--project", str(project), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"starting {project} (uv run --project {project} -- uvicorn guess_env.server:app)" in done.stdout
    assert f"stopped {project}" in done.stdout
    assert _processes_naming(str(project)) == []
    # The package names the project's app and env (its manifest), and was generated from
    # the live server's schema: the fixture's own action model.
    taskset = (out / "guess_openenv" / "taskset.py").read_text()
    assert 'PROVIDER_DEFAULTS: ClassVar[dict[str, Any]] = {\n        "app": "guess_env.server:app",\n    }' in taskset
    assert 'env: str | None = "guess_env"' in taskset
    snapshot = json.loads((out / "guess_openenv" / "snapshot.json").read_text())
    assert snapshot["action_schema"]["required"] == ["guess"]
    assert snapshot["defaults"]["app"] == "guess_env.server:app"
    readme = (out / "README.md").read_text()
    assert "provider_kwargs.project_path" in readme and "`git+`" in readme
    assert "--env.taskset.provider-kwargs.project_path path/to/env" in readme


def test_generate_from_a_folder_that_is_not_an_env_project(tmp_path: Path) -> None:
    project = tmp_path / "half_project"
    shutil.copytree(UV_FIXTURE_PROJECT, project)
    (project / "openenv.yaml").unlink()
    done = _cli("guess", "--project", str(project), "--out", str(tmp_path / "pkg"))
    assert done.returncode == 64
    assert done.stderr.strip() == (
        f"openenv-gen: error: --project {project}: no openenv.yaml "
        "(an OpenEnv env project has a pyproject.toml and an openenv.yaml)"
    )
    assert not (tmp_path / "pkg").exists()
    (project / "openenv.yaml").write_text("name: guess_env\n")
    done = _cli("guess", "--project", str(project), "--out", str(tmp_path / "pkg"))
    assert done.returncode == 64
    assert "openenv.yaml names no app as MODULE:ATTR" in done.stderr
    assert not (tmp_path / "pkg").exists()


def test_project_app_is_named_as_an_installed_module(tmp_path: Path) -> None:
    """As the UV provider runs it (no cd into the project), the manifest's folder-relative
    app is named through the package the pyproject maps the folder to."""
    from openenvgen.sources.project import project_env

    _env(tmp_path, "my_env", "app = None\n")
    folder = tmp_path / "envs" / "my_env"
    for manifest_app, expected in [
        ("server.app:app", "my_env.server.app:app"),
        ("my_env.server.app:app", "my_env.server.app:app"),
        ("envs.my_env.server.app:app", "my_env.server.app:app"),
    ]:
        (folder / "openenv.yaml").write_text(f"spec_version: 1\nname: my_env\napp: {manifest_app}\n")
        assert project_env(folder).app == expected, manifest_app


def test_seed_verdicts_from_traces() -> None:
    """The verdict rests on where the sessions differed; session ids are not a difference."""
    from openenvgen.capture.seed_check import verdict

    def trace(board: str, secret: str, episode: str) -> list[tuple[str, Any]]:
        return [
            ("reset", {"observation": {"board": board}, "reward": None, "done": False}),
            ("reset.state", {"episode_id": episode, "secret": secret}),
            ("step 1", {"observation": {"board": board + "x"}, "reward": 1.0, "done": True}),
            ("step 1.state", {"episode_id": episode, "secret": secret}),
        ]

    a, a_again, b = trace("..", "apple", "e1"), trace("..", "apple", "e2"), trace(".#", "pear", "e3")
    assert verdict(a, a_again, b, seed=0, other_seed=1)["verdict"] == "reproducible"
    assert verdict(a, a_again, a_again, seed=0, other_seed=1)["verdict"] == "deterministic"
    result = verdict(a, b, a, seed=0, other_seed=1)
    assert result["verdict"] == "not_reproducible"
    assert result["evidence"]["same_seed_differs_at"] == [
        "reset.observation.board",
        "reset.state.secret",
        "step 1.observation.board",
        "step 1.state.secret",
    ]
    # A reset that did not start an episode: no verdict on seeding.
    failed = [("reset", {"error": "EXECUTION_ERROR"}), ("reset.state", {})]
    assert (
        verdict(failed, failed, failed, seed=0, other_seed=1)["evidence"]["reason"]
        == "the reset answered EXECUTION_ERROR"
    )
    sandbox = [("reset", {"observation": {"metadata": {"error": "E2B_API_KEY is not set."}}, "done": True})]
    result = verdict(sandbox, sandbox, sandbox, seed=0, other_seed=1)
    assert (result["verdict"], result["evidence"]["reason"]) == (
        "unmeasured",
        "the reset's observation reports an error: E2B_API_KEY is not set.",
    )


def test_an_override_wrapper_keeps_the_envs_locked_versions(tmp_path: Path) -> None:
    """Overrides replace only what they name: the env's uv.lock still pins the rest (a fresh
    resolution paired dm_control 1.0.50 with MuJoCo 4, which it cannot load)."""
    _env(tmp_path, "locked_env", "app = None\n")
    env = env_folders(tmp_path, ["locked_env"])[0]
    (env.path / "uv.lock").write_text(
        "version = 1\n"
        '[[package]]\nname = "mujoco"\nversion = "3.8.0"\nsource = { registry = "https://pypi.org/simple" }\n'
        '[[package]]\nname = "dm-control"\nversion = "1.0.40"\nsource = { registry = "https://pypi.org/simple" }\n'
        '[[package]]\nname = "openenv"\nversion = "0.3.2.dev0"\nsource = { registry = "https://pypi.org/simple" }\n'
        '[[package]]\nname = "numpy"\nversion = "2.2.6"\nsource = { registry = "https://pypi.org/simple" }\n'
        '[[package]]\nname = "numpy"\nversion = "2.4.4"\nsource = { registry = "https://pypi.org/simple" }\n'
        '[[package]]\nname = "openenv-locked-env"\nversion = "0.1.0"\nsource = { editable = "." }\n'
    )
    wrapper = tomllib.loads(
        (override_project(env, ("openenv[core]>=0.2.2",), tmp_path / "w") / "pyproject.toml").read_text()
    )
    # openenv is overridden, numpy is locked per Python version, the env is the dependency itself.
    assert wrapper["tool"]["uv"]["constraint-dependencies"] == ["dm-control==1.0.40", "mujoco==3.8.0"]
    assert wrapper["tool"]["uv"]["override-dependencies"] == ["openenv[core]>=0.2.2"]


def test_times_an_env_measures_are_not_a_seed_difference() -> None:
    from openenvgen.capture.seed_check import verdict

    def trace(took: float, board: str) -> list[tuple[str, Any]]:
        return [
            ("reset", {"observation": {"board": board, "result": {"execution_time": took}}}),
            ("reset.state", {"total_execution_time": took}),
        ]

    assert verdict(trace(0.1, "a"), trace(0.3, "a"), trace(0.2, "b"), seed=0, other_seed=1)["verdict"] == "reproducible"

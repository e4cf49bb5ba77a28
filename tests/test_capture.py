"""`openenv-gen capture`: envs of an OpenEnv-style checkout, started as the UV provider
starts them, recorded into replayable captures and catalog snapshots.

The checkout is made here with the layout of huggingface/OpenEnv (`envs/NAME/` with a
pyproject mapping the folder to the `NAME` package, the app in `server/app.py`): one env
that runs (the guess-the-number env of tests/fixtures/uv_env, on openenv 0.10.0 in its own
uv environment) and one whose app fails on import. One capture run records both; the
tests read what it wrote, serve it back with the replay server and build a catalog from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenvgen.capture import env_folders, run_capture, uv_command
from openenvgen.corpus import with_source, write_catalog
from tests.support.replay_env import catalog_action, load_recording, make_replay_app
from tests.support.servers import serve_app

FIXTURE = Path(__file__).parent / "fixtures" / "uv_env"
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

CATALOG = """\
[envs.guess]
corpus = "guess_env"
env_id = "openenv/guess_env"
app = "guess_env.server.app:app"
action_hint = "Guess a number from 0 to 9."
example_action = { guess = 3 }
episode = [{ guess = 3 }, { guess = 7 }]
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
    _env(checkout, "guess_env", (FIXTURE / "guess_env" / "server.py").read_text())
    _env(checkout, "broken_env", 'raise RuntimeError("broken_env needs a GPU")\n')
    (checkout / "envs" / "README.md").write_text("not an env\n")
    data = root / "data"
    data.mkdir()
    (data / "catalog.toml").write_text(CATALOG)
    out = root / "recordings"
    lines: list[str] = []
    index = run_capture(checkout, out=out, commit=COMMIT, timeout=300, catalog_dir=data, echo=lines.append)
    return {"index": index, "out": out, "data": data, "checkout": checkout, "lines": lines}


def test_env_folders_follow_the_upstream_layout(captured: dict[str, Any]) -> None:
    envs = env_folders(captured["checkout"])
    assert [(e.name, e.app) for e in envs] == [
        ("broken_env", "broken_env.server.app:app"),
        ("guess_env", "guess_env.server.app:app"),
    ]
    # The UV provider's command, as openenv 0.4.1's uv_provider builds it.
    command = uv_command(envs[1], 8123)
    assert command[1:] == [
        "run", "--isolated", "--project", str(envs[1].path), "--",
        "uvicorn", "guess_env.server.app:app", "--host", "127.0.0.1", "--port", "8123", "--workers", "1",
    ]  # fmt: skip


def test_capture_index_lists_what_ran_and_why_the_rest_did_not(captured: dict[str, Any]) -> None:
    index = captured["index"]
    assert index["commit"] == COMMIT
    assert index["captured"] == ["guess_env"]
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
    assert (source["commit"], source["env_dir"], source["app"]) == (COMMIT, "envs/guess_env", "guess_env.server.app:app")
    assert source["versions"]["openenv"] == "0.10.0"  # as the env's pyproject pins it


def test_catalog_is_rebuilt_from_the_capture(captured: dict[str, Any]) -> None:
    data = captured["data"]
    snapshot = json.loads((data / "snapshots" / "guess.json").read_text())
    schema = json.loads((captured["out"] / "guess_env" / "schema.json").read_text())
    assert snapshot["schema"] == {"action": schema["action"], "observation": schema["observation"]}
    assert snapshot["tools"] is None
    catalog = (data / "catalog.toml").read_text()
    assert f'[source]\nrepo = "huggingface/OpenEnv"\ncommit = "{COMMIT}"\n' in catalog
    # Rebuilding again changes nothing (the [source] table is replaced, not added twice).
    write_catalog(captured["out"], data, echo=lambda _: None)
    assert (data / "catalog.toml").read_text() == catalog


def test_replay_of_the_capture_speaks_like_the_env(captured: dict[str, Any]) -> None:
    replay = make_replay_app("guess_env", root=captured["out"])
    with serve_app(replay.app, ready_path="/health") as url:
        assert httpx.get(f"{url}/schema").json()["action"] == replay.recording.schema["action"]
        assert httpx.get(f"{url}/metadata").json() == replay.recording.metadata


def test_with_source_replaces_only_the_source_table() -> None:
    text = '# head\n\n[source]\nrepo = "a/b"\ncommit = "old"\n\n[envs.x]\ncorpus = "x_env"\n'
    assert with_source(text, "a/b", "new") == '# head\n\n[source]\nrepo = "a/b"\ncommit = "new"\n\n[envs.x]\ncorpus = "x_env"\n'
    assert with_source('[envs.x]\ncorpus = "x"\n', "a/b", "c") == '[source]\nrepo = "a/b"\ncommit = "c"\n\n[envs.x]\ncorpus = "x"\n'


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

"""`openenv-gen check`: every exit code, with real packages whose files or snapshots were changed.

0 up to date · 1 stale, missing, extra or hand-edited · 2 upstream drift (--upstream) ·
64 usage · 69 upstream unreachable.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openenvgen import sources
from openenvgen.generation.marked import BEGIN_MARKER, END_MARKER, merge_marked, split_marked
from openenvgen.generation.render import LOCK_FILE
from openenvgen.lifecycle.check import diff_package
from openenvgen_testsupport.generating import file_tree, gen
from openenvgen_testsupport.paths import GENERATED, OPENENV_GEN


@pytest.fixture(scope="module")
def wordle_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tpl") / "wordle-openenv"
    result = gen("wordle", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def pkg(wordle_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "wordle-openenv"
    shutil.copytree(wordle_template, target)
    return target


def check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return gen("check", *args, cwd=cwd)


def edit_snapshot(pkg: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = pkg / "wordle_openenv" / "snapshot.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def test_up_to_date_exits_0(pkg: Path) -> None:
    result = check(str(pkg))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"{pkg}: up to date"


def test_a_modified_snapshot_makes_everything_it_feeds_stale(pkg: Path) -> None:
    edit_snapshot(pkg, lambda d: d["action_schema"]["properties"]["message"].update(description="Your guess"))
    result = check(str(pkg))
    assert result.returncode == 1
    out = result.stdout
    # The snapshot itself re-renders to what it is, but the lock recorded other bytes.
    assert f"{pkg}: edited: wordle_openenv/snapshot.json (its sha256 differs from the one in {LOCK_FILE})" in out
    assert f"{pkg}: stale: wordle_openenv/models.py" in out
    assert f"{pkg}: stale: {LOCK_FILE}" in out
    assert '+    message: str = Field(..., description="Your guess", title="Message")' in out.splitlines()
    assert "--- a/wordle_openenv/models.py\n+++ b/wordle_openenv/models.py" in out


def test_a_version_edited_in_the_snapshot_is_stale_metadata(pkg: Path) -> None:
    edit_snapshot(pkg, lambda d: d.update(package_version="3.0.0"))
    result = check(str(pkg))
    assert result.returncode == 1
    assert '-version = "0.1.0"\n+version = "3.0.0"' in result.stdout


def test_an_unreadable_snapshot_exits_1(pkg: Path) -> None:
    (pkg / "wordle_openenv" / "snapshot.json").write_text("{not json")
    result = check(str(pkg))
    assert result.returncode == 1
    assert "edited: wordle_openenv/snapshot.json (not a valid snapshot" in result.stdout


def test_a_deleted_snapshot_exits_1(pkg: Path) -> None:
    (pkg / "wordle_openenv" / "snapshot.json").unlink()
    result = check(str(pkg))
    assert result.returncode == 1
    assert "missing: wordle_openenv/snapshot.json" in result.stdout


def test_a_hand_edited_generated_file_exits_1_with_a_diff(pkg: Path) -> None:
    models = pkg / "wordle_openenv" / "models.py"
    models.write_text(models.read_text() + "HACK = 1\n")
    result = check(str(pkg))
    assert result.returncode == 1
    assert f"{pkg}: edited: wordle_openenv/models.py" in result.stdout
    assert "-HACK = 1" in result.stdout


def test_a_missing_generated_file_exits_1(pkg: Path) -> None:
    (pkg / "wordle_openenv" / "taskset.py").unlink()
    result = check(str(pkg))
    assert result.returncode == 1
    assert f"{pkg}: missing: wordle_openenv/taskset.py" in result.stdout
    assert "+++ b/wordle_openenv/taskset.py" in result.stdout


def test_a_hand_edited_lock_exits_1(pkg: Path) -> None:
    lock = pkg / LOCK_FILE
    lock.write_text(lock.read_text().replace('"schema_sha256": "', '"schema_sha256": "0'))
    result = check(str(pkg))
    assert result.returncode == 1
    assert f"stale: {LOCK_FILE}" in result.stdout


def test_extra_files_that_look_generated_are_flagged_user_files_are_not(pkg: Path) -> None:
    module = pkg / "wordle_openenv"
    shutil.copy(module / "models.py", module / "models_v2.py")  # a hand-copied generated file
    (module / "rewards.py").write_text("def bonus() -> float:\n    return 1.0\n")  # the user's own module
    (pkg / "NOTES.md").write_text("mine\n")
    (pkg / "tests" / "test_more.py").write_text("def test_x():\n    pass\n")
    result = check(str(pkg))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith(f"{pkg}: ")]
    assert lines == [
        f"{pkg}: extra: wordle_openenv/models_v2.py (carries the generated header but is not in {LOCK_FILE})"
    ]
    (module / "models_v2.py").unlink()
    assert check(str(pkg)).returncode == 0


def test_scaffolded_files_are_user_owned(pkg: Path) -> None:
    for rel in ("CHANGELOG.md", ".copier-answers.yml", "tests/test_wordle_openenv.py"):
        path = pkg / rel
        assert path.is_file(), rel
        path.write_text(path.read_text() + "\n# my change\n")
    assert check(str(pkg)).returncode == 0


def test_readme_text_outside_the_markers_is_the_users(pkg: Path) -> None:
    readme = pkg / "README.md"
    text = readme.read_text()
    assert BEGIN_MARKER in text and END_MARKER in text
    readme.write_text("# Intro of mine\n\n" + text + "\nMore of mine.\n")
    assert check(str(pkg)).returncode == 0
    # Inside the markers it is generated.
    readme.write_text(readme.read_text().replace("## Action space", "## Actions"))
    result = check(str(pkg))
    assert result.returncode == 1
    assert f"{pkg}: edited: README.md" in result.stdout
    assert "-## Actions\n+## Action space" in result.stdout
    # Removing the markers is an edit too.
    readme.write_text("just mine\n")
    assert check(str(pkg)).returncode == 1


def test_check_maps_files_to_their_package_and_skips_foreign_files_when_told(pkg: Path, tmp_path: Path) -> None:
    """What the pre-commit hook passes: changed files, anywhere in the repository (it runs
    `check --skip-outside`); without the flag, a file outside every package is an error."""
    foreign = tmp_path / "setup.cfg"
    foreign.write_text("[x]\n")
    files = (str(pkg / "wordle_openenv" / "models.py"), str(foreign), str(pkg / "README.md"))
    ok = check("--skip-outside", *files)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("up to date") == 1
    assert check("--skip-outside", str(foreign)).returncode == 0
    refused = check(*files)
    assert refused.returncode == 64 and "setup.cfg: not in a generated package" in refused.stderr
    (pkg / "pyproject.toml").write_text("[project]\n")
    assert check(str(pkg / "README.md")).returncode == 1


def test_no_paths_checks_every_package_under_the_current_directory(pkg: Path, tmp_path: Path) -> None:
    second = tmp_path / "more" / "second"
    shutil.copytree(pkg, second)
    (tmp_path / ".hidden").mkdir()
    shutil.copytree(pkg, tmp_path / ".hidden" / "ignored")
    result = check(cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(result.stdout.splitlines()) == ["more/second: up to date", "wordle-openenv: up to date"]
    (second / "wordle_openenv" / "py.typed").unlink()
    assert check(cwd=tmp_path).returncode == 1
    # A directory holding packages means all of them.
    assert check("more", cwd=tmp_path).returncode == 1


def test_no_packages_and_not_a_package_are_usage_errors(tmp_path: Path) -> None:
    result = check(cwd=tmp_path)
    assert result.returncode == 64
    assert "no generated packages" in result.stderr
    (tmp_path / "d").mkdir()
    result = check(str(tmp_path / "d"))
    assert result.returncode == 64
    assert "not a generated package" in result.stderr
    assert check(str(tmp_path / "nope")).returncode == 64


def test_check_is_offline_read_only_and_light(pkg: Path) -> None:
    """Light enough for pre-commit: no copier, verifiers or openenv import; nothing written.
    (How fast it is, is a benchmark's to measure, not a test's.)"""
    before = file_tree(pkg)
    probe = f"""
import sys
from pathlib import Path
from openenvgen.lifecycle.check import diff_package
assert diff_package(Path({str(pkg)!r})) == []
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {{'copier', 'verifiers', 'openenv', 'openenvgen_runtime'}})
print(heavy)
"""
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
    assert file_tree(pkg) == before


# --- --upstream -----------------------------------------------------------------------------


@pytest.fixture
def grid_pkg(grid_server: str, tmp_path: Path) -> Path:
    out = tmp_path / "grid-openenv"
    result = gen("grid", "--base-url", grid_server, "--out", str(out), "--no-scaffold")
    assert result.returncode == 0, result.stderr
    return out


def _older(pkg: Path, change) -> None:  # type: ignore[no-untyped-def]
    """Turn `pkg` into a consistent package made from an older schema (as if upstream moved on)."""
    path = next(pkg.glob("*/snapshot.json"))
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert gen("regen", str(pkg)).returncode == 0  # re-render from the edited snapshot
    assert check(str(pkg)).returncode == 0


def test_upstream_unchanged_exits_0(grid_pkg: Path, grid_server: str) -> None:
    result = check(str(grid_pkg), "--upstream", "--base-url", grid_server)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{grid_pkg}: no upstream drift ({grid_server})" in result.stdout


def test_upstream_drift_exits_2_with_a_model_diff(grid_pkg: Path, grid_server: str) -> None:
    def older(data: dict) -> None:
        props = data["action_schema"]["properties"]
        del props["mode"]  # upstream has since added an optional field
        data["action_schema"]["required"] = [r for r in data["action_schema"]["required"] if r != "direction"]

    _older(grid_pkg, older)
    before = file_tree(grid_pkg)
    result = check(str(grid_pkg), "--upstream", "--base-url", grid_server)
    assert result.returncode == 2, result.stdout + result.stderr
    out = result.stdout
    assert f"{grid_pkg}: up to date" in out  # the local check still runs
    assert f"{grid_pkg}: upstream drift (major; regen would make" in out
    assert "major  action.direction: field newly required" in out
    assert "minor  action.mode: optional field added" in out
    assert file_tree(grid_pkg) == before  # check never writes


def test_upstream_drift_wins_over_a_stale_file(grid_pkg: Path, grid_server: str) -> None:
    _older(grid_pkg, lambda d: d["metadata"].update(description="old text"))
    (next(grid_pkg.glob("*/models.py"))).write_text("# edited\n")
    result = check(str(grid_pkg), "--upstream", "--base-url", grid_server)
    assert result.returncode == 2
    assert "edited: grid_openenv/models.py" in result.stdout
    assert "patch  metadata.description" in result.stdout


def test_upstream_from_a_saved_capture(grid_pkg: Path, grid_server: str, tmp_path: Path) -> None:
    capture = sources.from_server(grid_server).model_dump(by_alias=True, mode="json")
    capture["schema"]["action"]["properties"]["direction"]["enum"] = ["up", "down"]
    (tmp_path / "capture.json").write_text(json.dumps(capture))
    result = check(str(grid_pkg), "--upstream", "--schema-file", str(tmp_path / "capture.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "allowed values removed" in result.stdout


def test_base_urls_per_package(grid_pkg: Path, grid_server: str, wordle_server: str, tmp_path: Path) -> None:
    wordle = tmp_path / "wordle-live"
    assert gen("wordle", "--base-url", wordle_server, "--out", str(wordle), "--no-scaffold").returncode == 0
    result = check(
        str(grid_pkg),
        str(wordle),
        "--upstream",
        "--base-url",
        f"grid={grid_server}",
        "--base-url",
        f"wordle-live={wordle_server}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("no upstream drift") == 2
    # One URL for two packages is ambiguous; a package without a URL is an error.
    result = check(str(grid_pkg), str(wordle), "--upstream", "--base-url", grid_server)
    assert result.returncode == 64 and "NAME=" in result.stderr
    result = check(str(grid_pkg), str(wordle), "--upstream", "--base-url", f"grid={grid_server}")
    assert result.returncode == 64 and "no --base-url" in result.stderr


def test_upstream_needs_a_source(grid_pkg: Path) -> None:
    result = check(str(grid_pkg), "--upstream")
    assert result.returncode == 64
    assert "--base-url" in result.stderr


def test_upstream_unreachable_exits_69(grid_pkg: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = check(str(grid_pkg), "--upstream", "--base-url", f"http://127.0.0.1:{port}")
    assert result.returncode == 69
    assert result.stderr.startswith("openenv-gen: error: ")


# --- drift reports: what changed, and what is only another FastMCP's rendering ------------------

# `echo_message` as echo_env's own uv.lock (FastMCP 3.1.1) lists it: the whole docstring as the
# description and no argument description. The catalog captured it with FastMCP 3.4.11, which
# sends the summary only and moves the `Args:` text into the argument's schema.
FASTMCP_3_1_ECHO = {
    "echo_message": (
        "Echo back the provided message.\n\nArgs:\n    message: The message to echo back\n\n"
        "Returns:\n    The same message that was provided"
    ),
    "echo_with_length": (
        "Echo back the message with its length.\n\nArgs:\n    message: The message to echo back\n\n"
        "Returns:\n    Dictionary with the message and its length"
    ),
}


def make_echo_app(descriptions: dict[str, str]):  # type: ignore[no-untyped-def]
    """echo_env's two tools on a real OpenEnv MCP server, listed with the given descriptions
    (registered explicitly, so the installed FastMCP renders them exactly as given)."""
    import uuid

    from fastmcp import FastMCP
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_environment import MCPEnvironment
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation, State

    # Named like upstream's class: /metadata reports the class name as the env's name.
    class EchoEnvironment(MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            mcp = FastMCP("echo_env")

            @mcp.tool(description=descriptions["echo_message"])
            def echo_message(message: str) -> str:
                return message

            @mcp.tool(description=descriptions["echo_with_length"])
            def echo_with_length(message: str) -> dict:
                return {"message": message, "length": len(message)}

            super().__init__(mcp)
            self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):  # type: ignore[no-untyped-def]
            return Observation(done=False, reward=0.0)

        def _step_impl(self, action, timeout_s=None, **kwargs):  # type: ignore[no-untyped-def]
            return Observation(done=False, reward=0.0)

        @property
        def state(self) -> State:
            return self._state

    return create_app(EchoEnvironment, CallToolAction, CallToolObservation, env_name="echo_env")


@pytest.fixture(scope="module")
def echo_pkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog's echo package (captured with FastMCP 3.4.11)."""
    out = tmp_path_factory.mktemp("echo") / "echo-openenv"
    result = gen("echo", "--out", str(out), "--no-scaffold")
    assert result.returncode == 0, result.stderr
    return out


def test_an_unchanged_echo_served_by_fastmcp_3_1_is_no_drift(echo_pkg: Path) -> None:
    from openenvgen_testsupport.servers import serve_app

    with serve_app(make_echo_app(FASTMCP_3_1_ECHO), ready_path="/health") as url:
        # The server really lists the 3.1 rendering (the docstring sections, no argument text).
        listed = {t["name"]: t for t in sources.from_server(str(url)).tools or ()}
        assert "Args:" in listed["echo_message"]["description"]
        arguments = listed["echo_message"].get("inputSchema") or listed["echo_message"]["input_schema"]
        assert "description" not in arguments["properties"]["message"]
        result = check(str(echo_pkg), "--upstream", "--base-url", str(url))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{echo_pkg}: no upstream drift ({url})" in result.stdout


def test_a_changed_description_is_reported_old_to_new(echo_pkg: Path) -> None:
    from openenvgen_testsupport.servers import serve_app

    changed = {
        **FASTMCP_3_1_ECHO,
        "echo_message": FASTMCP_3_1_ECHO["echo_message"].replace("the provided message", "the given text"),
    }
    with serve_app(make_echo_app(changed), ready_path="/health") as url:
        result = check(str(echo_pkg), "--upstream", "--base-url", str(url))
        as_json = check(str(echo_pkg), "--upstream", "--base-url", str(url), "--json")
    assert result.returncode == 2, result.stdout + result.stderr
    drift_lines = result.stdout.split("upstream drift", 1)[1].splitlines()[1:]
    assert drift_lines == [
        '  patch  tools.echo_message: description changed: "Echo back the provided message." '
        '→ "Echo back the given text."'
    ]
    assert as_json.returncode == 2
    (package,) = json.loads(as_json.stdout)["packages"]
    assert package["upstream"] == {
        "source": str(url),
        "drift": True,
        "impact": "patch",
        "version": "0.1.0",
        "next_version": "0.1.1",
        "warnings": [],
        "notes": [],
        "error": None,
        "changes": [
            {
                "impact": "patch",
                "path": "tools.echo_message",
                "what": 'description changed: "Echo back the provided message." → "Echo back the given text."',
                "old": "Echo back the provided message.",
                "new": "Echo back the given text.",
                "warning": False,
            }
        ],
    }


def test_another_environment_is_major_and_says_so(tmp_path: Path) -> None:
    from openenvgen import catalog

    connect4 = tmp_path / "connect4-openenv"
    assert gen("connect4", "--out", str(connect4), "--no-scaffold").returncode == 0
    chess = catalog.lookup("chess").interface().model_dump(by_alias=True, mode="json")
    (tmp_path / "chess.json").write_text(json.dumps(chess))
    result = check(str(connect4), "--upstream", "--schema-file", str(tmp_path / "chess.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{connect4}: upstream drift (major; regen would make 0.1.0 → 1.0.0)" in result.stdout
    warning = (
        f'{connect4}: warning: metadata.name: changed: "Connect4Environment" → "ChessEnvironment" '
        "(a different environment?)"
    )
    assert warning in result.stdout.splitlines()
    assert (
        '  major  metadata.name: changed: "Connect4Environment" → "ChessEnvironment" (a different environment?)'
        in result.stdout
    )
    # Descriptions show both texts, shortened.
    description = next(line for line in result.stdout.splitlines() if "patch  action: description changed" in line)
    assert '"Action for Connect4 environment.' in description and '→ "Action for Chess environment.' in description
    assert len(description) < 220


# --- --json -----------------------------------------------------------------------------------


def test_json_up_to_date_and_stale(pkg: Path) -> None:
    result = check(str(pkg), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "exit_code": 0,
        "packages": [{"path": str(pkg), "up_to_date": True, "files": [], "upstream": None}],
    }
    (pkg / "wordle_openenv" / "models.py").write_text("# edited\n")
    (pkg / "wordle_openenv" / "py.typed").unlink()
    result = check(str(pkg), "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["exit_code"] == 1
    (package,) = report["packages"]
    assert package["up_to_date"] is False and package["upstream"] is None
    files = {f["path"]: f for f in package["files"]}
    assert files["wordle_openenv/models.py"]["kind"] == "edited"
    assert files["wordle_openenv/models.py"]["diff"].startswith("--- a/wordle_openenv/models.py")
    assert files["wordle_openenv/py.typed"]["kind"] == "missing"
    assert all(set(f) == {"path", "kind", "note", "diff"} for f in package["files"])


def test_json_without_drift(grid_pkg: Path, grid_server: str) -> None:
    result = check(str(grid_pkg), "--upstream", "--base-url", grid_server, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    (package,) = json.loads(result.stdout)["packages"]
    assert package["upstream"] == {
        "source": grid_server,
        "drift": False,
        "impact": None,
        "version": "0.1.0",
        "next_version": "0.1.0",
        "warnings": [],
        "changes": [],
        "notes": [],
        "error": None,
    }


# --- README markers (pure) ------------------------------------------------------------------


def test_merge_marked_replaces_only_the_block() -> None:
    header = "<!-- Code generated by openenv-gen. DO NOT EDIT. -->\n"
    rendered = f"{header}{BEGIN_MARKER}\n# new\n{END_MARKER}\n\n## Notes\ndefault\n"
    existing = f"intro\n{header}{BEGIN_MARKER}\n# old\n{END_MARKER}\nmine\n"
    assert merge_marked(existing, rendered) == f"intro\n{header}{BEGIN_MARKER}\n# new\n{END_MARKER}\nmine\n"
    before, block, after = split_marked(existing)
    assert (before, after) == ("intro\n", "mine\n")
    assert block.startswith(header)
    with pytest.raises(ValueError):
        merge_marked("no markers\n", rendered)
    with pytest.raises(ValueError):
        merge_marked(f"{END_MARKER}\n{BEGIN_MARKER}\n", rendered)


def test_golden_packages_pass_check() -> None:
    for package in sorted(GENERATED.iterdir()):
        if (package / LOCK_FILE).is_file():
            assert diff_package(package) == [], package


def test_cli_entry_point_exists() -> None:
    assert Path(OPENENV_GEN).is_file()

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
from openenvgen.checking import BEGIN_MARKER, END_MARKER, diff_package, merge_marked, split_marked
from openenvgen.render import LOCK_FILE
from tests.test_generate import OPENENV_GEN, _tree, gen


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
    assert '+    message: str = Field(..., description="Your guess"' in out or "Your guess" in out
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
    assert lines == [f"{pkg}: extra: wordle_openenv/models_v2.py (carries the generated header but is not in {LOCK_FILE})"]
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


def test_check_maps_files_to_their_package_and_ignores_foreign_files(pkg: Path, tmp_path: Path) -> None:
    """What the pre-commit hook passes: changed files, anywhere in the repository."""
    foreign = tmp_path / "setup.cfg"
    foreign.write_text("[x]\n")
    ok = check(str(pkg / "wordle_openenv" / "models.py"), str(foreign), str(pkg / "README.md"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("up to date") == 1
    assert check(str(foreign)).returncode == 0
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
    """Fast enough for pre-commit: no copier, verifiers or openenv import; nothing written."""
    before = _tree(pkg)
    probe = f"""
import sys, time
from pathlib import Path
t = time.monotonic()
from openenvgen.checking import diff_package
assert diff_package(Path({str(pkg)!r})) == []
elapsed = time.monotonic() - t
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {{'copier', 'verifiers', 'openenv', 'openenvgen_runtime'}})
print(heavy, elapsed)
"""
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    heavy, elapsed = run.stdout.rsplit(" ", 1)
    assert heavy == "[]"
    assert float(elapsed) < 10
    assert _tree(pkg) == before


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
    before = _tree(grid_pkg)
    result = check(str(grid_pkg), "--upstream", "--base-url", grid_server)
    assert result.returncode == 2, result.stdout + result.stderr
    out = result.stdout
    assert f"{grid_pkg}: up to date" in out  # the local check still runs
    assert f"{grid_pkg}: upstream drift (major; regen would make" in out
    assert "major  action.direction: field newly required" in out
    assert "minor  action.mode: optional field added" in out
    assert _tree(grid_pkg) == before  # check never writes


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
    result = check(str(grid_pkg), str(wordle), "--upstream", "--base-url", f"grid={grid_server}", "--base-url", f"wordle-live={wordle_server}")
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
    from tests.conftest import ROOT

    for package in sorted((ROOT / "generated").iterdir()):
        if (package / LOCK_FILE).is_file():
            assert diff_package(package) == [], package


def test_cli_entry_point_exists() -> None:
    assert Path(OPENENV_GEN).is_file()

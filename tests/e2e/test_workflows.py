"""The regeneration workflows (check.yml, drift.yml) and the pre-commit hooks.

Both workflows are linted with actionlint, with shellcheck on PATH so every `run:` script
is checked too. The drift job's script is also run for real against a live fixture env:
only `git clone` (of a Hugging Face Space) and `uv run` (of its server) are replaced, by
shims that serve the fixture app on the port the script asked for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from openenvgen_testsupport.generating import file_tree, gen
from openenvgen_testsupport.paths import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
OURS = ("check.yml", "drift.yml")
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: pip install -c constraints.txt -e '.[test]'")
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(_tool('shellcheck')).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [_tool("actionlint"), "-no-color", str(path)], capture_output=True, text=True, timeout=120, env=env
    )


def load(name: str) -> dict:
    flow = yaml.safe_load((WORKFLOWS / name).read_text())
    flow["on"] = flow.pop(True, flow.get("on"))  # YAML 1.1 reads a bare `on` as true
    return flow


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_workflow_is_actionlint_clean(name: str) -> None:
    result = lint(WORKFLOWS / name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        ("drift.yml", 'cat "$space.log"', "cat $space.log", "SC2086"),
        ("drift.yml", "steps.drift.outputs.drifted", "steps.drfit.outputs.drifted", "drfit"),
        ("check.yml", "runs-on: ubuntu-latest", "runs-on: ubuntu-latst", "ubuntu-latst"),
    ],
)
def test_the_lint_can_fail(tmp_path: Path, name: str, old: str, new: str, expected: str) -> None:
    """Each check above is live: a shell bug (shellcheck), a dangling step id and a bad label fail it."""
    text = (WORKFLOWS / name).read_text()
    assert old in text
    broken = tmp_path / ".github" / "workflows" / name
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(old, new, 1))
    result = lint(broken)
    assert result.returncode != 0
    assert expected in result.stdout


def test_check_workflow_runs_check_on_pull_requests() -> None:
    flow = load("check.yml")
    assert "pull_request" in flow["on"]
    assert flow["permissions"] == {"contents": "read"}
    runs = [s.get("run", "") for s in flow["jobs"]["check"]["steps"]]
    assert "openenv-gen check" in runs
    # This repository installs its own pinned checkout, any other one the published wheel; both
    # with the typecheck extra, so check also type-checks the hooks.
    assert any(
        "pip install -c constraints.txt '.[typecheck]'" in r and "pip install 'openenvgen[typecheck]'" in r
        for r in runs
    )


def test_drift_workflow_is_scheduled_and_opens_a_pull_request() -> None:
    flow = load("drift.yml")
    assert "schedule" in flow["on"] and "workflow_dispatch" in flow["on"]
    assert flow["permissions"] == {"contents": "read"}
    job = flow["jobs"]["drift"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = {s.get("id") or s.get("name") or s.get("uses"): s for s in job["steps"]}
    script = steps["drift"]["run"]
    assert 'openenv-gen check "$pkg" --upstream --base-url "$url"' in script
    assert 'openenv-gen regen "$pkg" --from-upstream --base-url "$url"' in script
    pr = [s for s in job["steps"] if str(s.get("uses", "")).startswith("peter-evans/create-pull-request@")]
    assert len(pr) == 1 and pr[0]["if"] == "steps.drift.outputs.drifted == 'true'"


# --- the drift script, run for real -----------------------------------------------------------

GIT_SHIM = """#!/bin/sh
# `git clone URL DIR` of a Space: an empty project directory. Everything else: the real git.
if [ "$1" = clone ]; then for last; do :; done; mkdir -p "$last"; exit 0; fi
exec {git} "$@"
"""
UV_SHIM = """#!/bin/sh
# `uv run --isolated --project DIR -- uvicorn APP --host H --port P`: serve the fixture app instead.
while [ "$1" != "--" ]; do shift; done
shift 3
cd {root} && exec {python} -m uvicorn openenvgen_testsupport.fixture_envs:grid_app "$@"
"""


def _run_drift_script(repo: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "git").write_text(GIT_SHIM.format(git=shutil.which("git")))
    (shims / "uv").write_text(UV_SHIM.format(root=ROOT, python=sys.executable))
    for shim in shims.iterdir():
        shim.chmod(0o755)
    step = next(s for s in load("drift.yml")["jobs"]["drift"]["steps"] if s.get("id") == "drift")
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(shims), str(BIN), os.environ.get("PATH", "")]),
        "REPORT": str(tmp_path / "report.md"),
        "ENVS": str(tmp_path / "envs"),
        "GITHUB_OUTPUT": str(output),
    }
    run = subprocess.run(["bash", "-c", step["run"]], capture_output=True, text=True, cwd=repo, env=env, timeout=300)
    return run, output.read_text()


@pytest.fixture
def repo(grid_server: str, tmp_path: Path) -> Path:
    """A user's repository with one package generated from the grid env's live server."""
    repo = tmp_path / "repo"
    repo.mkdir()
    assert gen("grid", "--base-url", grid_server, "--out", str(repo / "packages" / "grid-openenv")).returncode == 0
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def test_drift_script_without_drift_changes_nothing(repo: Path, tmp_path: Path) -> None:
    before = file_tree(repo / "packages")
    run, output = _run_drift_script(repo, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert output == "drifted=false\n"
    assert "no upstream drift" in run.stdout
    assert file_tree(repo / "packages") == before


def test_drift_script_regenerates_what_drifted(repo: Path, tmp_path: Path) -> None:
    pkg = repo / "packages" / "grid-openenv"
    snapshot = pkg / "grid_openenv" / "snapshot.json"
    data = json.loads(snapshot.read_text())
    del data["action_schema"]["properties"]["note"]  # the package predates `note`
    snapshot.write_text(json.dumps(data, indent=2) + "\n")
    assert gen("regen", str(pkg)).returncode == 0
    run, output = _run_drift_script(repo, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert output == "drifted=true\n"
    assert json.loads(snapshot.read_text())["package_version"] == "0.2.0"
    report = (tmp_path / "report.md").read_text()
    assert "### `packages/grid-openenv` (openenv/grid)" in report
    assert "minor  action.note: optional field added" in report
    assert gen("check", str(pkg)).returncode == 0


# --- pre-commit ---------------------------------------------------------------------------------


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"openenv-gen-check", "openenv-gen-check-all"}
    for hook in hooks.values():
        # Files outside any package (a README, a CI file) are passed too: skipped, not an error.
        assert hook["entry"] == "openenv-gen check --skip-outside"
        assert hook["language"] == "python"
        assert {"name", "description"} <= hook.keys()
    assert hooks["openenv-gen-check"]["pass_filenames"] is True
    assert hooks["openenv-gen-check-all"]["pass_filenames"] is False
    assert hooks["openenv-gen-check-all"]["always_run"] is True
    # pre-commit installs this repository with pip to run the hook: it must be the generator.
    assert 'name = "openenvgen"' in (ROOT / "pyproject.toml").read_text()


def test_the_hook_command_as_pre_commit_calls_it(repo: Path) -> None:
    """pre-commit runs the hook's entry, `openenv-gen check --skip-outside FILE...`, from the
    repository root with the changed files."""
    changed = ["README.md", "packages/grid-openenv/grid_openenv/models.py", "packages/grid-openenv/CHANGELOG.md"]
    (repo / "README.md").write_text("top-level readme\n")
    result = gen("check", "--skip-outside", *changed, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "packages/grid-openenv: up to date\n"
    models = repo / changed[1]
    models.write_text(models.read_text().replace("str", "int", 1))
    result = gen("check", "--skip-outside", *changed, cwd=repo)
    assert result.returncode == 1
    assert "packages/grid-openenv: edited: grid_openenv/models.py" in result.stdout
    # Only the top-level file changed: no package to check.
    assert gen("check", "--skip-outside", "README.md", cwd=repo).returncode == 0
    # Without the option a file outside every package is a mistake, said in one line.
    assert gen("check", "README.md", cwd=repo).returncode == 64

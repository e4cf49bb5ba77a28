"""Hooks type-checked against the package's models: `check` and `regen` run mypy on a
`custom.py` with hooks, and on nothing else.

The package is connect4's, generated from its captured schema (the embedded catalog); its
custom.py holds typed hooks reading `board` and `legal_actions`, both `T | MISSING` fields.
The drift is a capture of the same env with `board` renamed and `legal_actions` retyped.
Every mypy run of this module shares one cache (its own XDG_CACHE_HOME): the first, cold,
takes 30-60 s on a loaded 2-core machine, the others a few seconds each.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from openenvgen import catalog
from openenvgen.lifecycle.hook_types import defines_hooks
from openenvgen_testsupport.paths import OPENENV_GEN
from openenvgen_testsupport.skips import skip_loudly

CUSTOM = "connect4_openenv/custom.py"
HOOKS = '''\
"""Typed hooks, as a user writes them."""

import verifiers.v1 as vf
from pydantic import MISSING

from .models import Connect4Observation


@vf.reward(weight=0.5)
def center_control(observation: Connect4Observation) -> float:
    if observation.board is MISSING:
        return 0.0
    return float(sum(row[3] == 1 for row in observation.board))


@vf.metric
def choices(observations: list[Connect4Observation]) -> float:
    return float(sum(sum(o.legal_actions) for o in observations if o.legal_actions is not MISSING))
'''
BOARD_LINES = (11, 13)
LEGAL_LINE = 18
MYPY_SECONDS = 600  # a cold mypy run on a shared, loaded machine


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment every run of this module shares: one cache dir for mypy (and models)."""
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("xdg-cache"))}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, cache: dict[str, str]) -> Path:
    out = tmp_path_factory.mktemp("hooks") / "connect4-openenv"
    result = run("connect4", "--out", str(out), env=cache)
    assert result.returncode == 0, result.stderr
    return out


def run(*args: str, env: dict[str, str], python: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`openenv-gen ARGS`, or `PYTHON -m openenvgen.cli ARGS`, with a cold mypy's time limit."""
    command = [str(python), "-m", "openenvgen.cli"] if python is not None else [OPENENV_GEN]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=MYPY_SECONDS
    )


def with_hooks(template: Path, tmp_path: Path) -> Path:
    pkg = tmp_path / "connect4-openenv"
    shutil.copytree(template, pkg)
    (pkg / CUSTOM).write_text(HOOKS)
    return pkg


def drifted_capture(tmp_path: Path) -> Path:
    """connect4's capture with `board` renamed to `grid` and `legal_actions` retyped to a string."""
    capture = catalog.entries()["connect4"].interface().model_dump(by_alias=True, mode="json")
    properties = capture["schema"]["observation"]["properties"]
    properties["grid"] = properties.pop("board")
    properties["legal_actions"] = {"type": "string", "title": "Legal Actions"}
    path = tmp_path / "connect4-upstream.json"
    path.write_text(json.dumps(capture))
    return path


def needs_mypy(request: pytest.FixtureRequest) -> None:
    if importlib.util.find_spec("mypy") is None:
        skip_loudly(request.config, "typed hooks", "mypy is not installed (pip install -e '.[typecheck]')")


def test_a_renamed_and_a_retyped_field_fail_check_with_file_line_and_field(
    request: pytest.FixtureRequest, template: Path, tmp_path: Path, cache: dict[str, str]
) -> None:
    needs_mypy(request)
    pkg = with_hooks(template, tmp_path)
    # The hooks narrow `T | MISSING` before use: they type-check, and mypy did run.
    ok = run("check", str(pkg), env=cache)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, f"{pkg}: up to date\n", "")
    assert (Path(cache["XDG_CACHE_HOME"]) / "openenv-gen" / "mypy" / "mypy.ini").is_file()

    regen = run("regen", str(pkg), "--from-upstream", "--schema-file", str(drifted_capture(tmp_path)), env=cache)
    assert regen.returncode == 0, regen.stderr
    assert regen.stdout.splitlines()[0].endswith("; check custom.py, see CHANGELOG.md")
    entry = (pkg / "CHANGELOG.md").read_text().split("## 1.0.0", 1)[1].split("\n## ", 1)[0]
    assert f"**`{CUSTOM}` does not type-check against this version's models**" in entry
    for line in BOARD_LINES:
        assert f'- `{CUSTOM}:{line}`: "Connect4Observation" has no attribute "board"  [attr-defined]\n' in entry
    assert f"- `{CUSTOM}:{LEGAL_LINE}`: " in entry and "(reads field `legal_actions`)" in entry

    failed = run("check", str(pkg), env=cache)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    lines = failed.stdout.splitlines()
    for line in BOARD_LINES:
        assert f'{pkg}: types: {CUSTOM}:{line}: "Connect4Observation" has no attribute "board"  [attr-defined]' in lines
    retyped = [ln for ln in lines if ln.startswith(f"{pkg}: types: {CUSTOM}:{LEGAL_LINE}: ") and "note:" not in ln]
    assert retyped and all(ln.endswith("(reads field `legal_actions`)") for ln in retyped), lines
    assert f"{pkg}: up to date" not in lines  # the generated files are, the package is not

    report = json.loads(run("check", "--json", str(pkg), env=cache).stdout)
    assert report["exit_code"] == 1
    (package,) = report["packages"]
    assert package["up_to_date"] is True  # the generated files; the hooks are `types` entries
    note = f'{BOARD_LINES[0]}: "Connect4Observation" has no attribute "board"  [attr-defined]'
    assert {"path": CUSTOM, "kind": "types", "note": note, "diff": ""} in package["files"]


OWN_CODE = """

def doubled(n: int) -> int:
    return n * 2


RESETS = [{}, {}]
"""
"""What the hooks' own code may hold that mypy complains of but that involves no model: a
list that asks for an annotation (it runs fine) and a helper that reads no model."""
RESETS_LINE = 25


def test_code_that_involves_no_model_is_a_warning_and_drift_still_fails(
    request: pytest.FixtureRequest, template: Path, tmp_path: Path, cache: dict[str, str]
) -> None:
    """`RESETS = [{}, {}]` needs an annotation to mypy, whatever the env does: `check` passes and
    says so in one warning line; a field the env renames, on the same file, still fails."""
    needs_mypy(request)
    pkg = with_hooks(template, tmp_path)
    custom = pkg / CUSTOM
    custom.write_text(HOOKS + OWN_CODE)
    assert custom.read_text().splitlines()[RESETS_LINE - 1] == "RESETS = [{}, {}]"
    warning = (
        "openenv-gen: warning: mypy errors in hook code that involves no model or hook API, not counted: "
        f"{custom}:{RESETS_LINE} [var-annotated]\n"
    )
    ok = run("check", str(pkg), env=cache)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, f"{pkg}: up to date\n", warning)
    report = run("check", "--json", str(pkg), env=cache)
    assert json.loads(report.stdout)["exit_code"] == 0 and report.stderr == warning
    assert json.loads(report.stdout)["packages"][0]["files"] == []

    # The helper's argument is a model's field now: retyped, it is drift, though the helper is the user's.
    custom.write_text(
        HOOKS + OWN_CODE + "\n\n@vf.metric\ndef twice(observation: Connect4Observation) -> float:\n"
        "    return float(doubled(observation.board))\n"
    )
    failed = run("check", str(pkg), env=cache)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stdout.splitlines()[0] == (
        f'{pkg}: types: {CUSTOM}:30: Argument 1 to "doubled" has incompatible type '
        '"list[list[int]] | MISSING"; expected "int"  [arg-type] (reads field `board`)'
    ), failed.stdout
    assert not [ln for ln in failed.stdout.splitlines() if f"{CUSTOM}:{RESETS_LINE}:" in ln]
    assert failed.stderr == warning

    regen = run("regen", str(pkg), "--from-upstream", "--schema-file", str(drifted_capture(tmp_path)), env=cache)
    assert regen.returncode == 0 and regen.stderr == warning, regen.stderr
    entry = (pkg / "CHANGELOG.md").read_text().split("## 1.0.0", 1)[1].split("\n## ", 1)[0]
    assert f'- `{CUSTOM}:{BOARD_LINES[0]}`: "Connect4Observation" has no attribute "board"  [attr-defined]\n' in entry
    assert "RESETS" not in entry and "[var-annotated]" not in entry


def test_a_hooks_module_mypy_cannot_parse_fails(
    request: pytest.FixtureRequest, template: Path, tmp_path: Path, cache: dict[str, str]
) -> None:
    """Nothing in it can be judged, so it is never a pass (nor a warning)."""
    needs_mypy(request)
    pkg = with_hooks(template, tmp_path)
    (pkg / CUSTOM).write_text(HOOKS + "\n\ndef broken(:\n")
    failed = run("check", str(pkg), env=cache)
    assert failed.returncode == 1 and failed.stderr == "", failed.stdout + failed.stderr
    assert failed.stdout.startswith(f"{pkg}: types: {CUSTOM}:21: ") and "[syntax]" in failed.stdout


def test_without_mypy_check_says_so_in_one_line(template: Path, tmp_path: Path, cache: dict[str, str]) -> None:
    """A real environment without mypy: a venv holding this one's packages, mypy left out."""
    pkg = with_hooks(template, tmp_path)
    python = venv_without_mypy(tmp_path)
    assert subprocess.run([python, "-c", "import mypy"], capture_output=True).returncode == 1
    result = run("check", str(pkg), env=cache, python=python)
    assert (result.returncode, result.stdout) == (0, f"{pkg}: up to date\n"), result.stderr
    assert result.stderr == (
        "openenv-gen: warning: hooks not type-checked, mypy is not installed "
        f"(pip install 'openenvgen[typecheck]'): {pkg / CUSTOM}\n"
    )


def test_a_custom_py_without_hooks_runs_no_mypy(template: Path, tmp_path: Path) -> None:
    scaffolded = (template / CUSTOM).read_text()
    assert not defines_hooks(scaffolded)
    assert not defines_hooks(scaffolded + 'SYSTEM_PROMPT = "Play well."\nRESETS = [{"seed": 0}]\n')
    assert defines_hooks(scaffolded + "from .models import Connect4Observation\n")
    assert defines_hooks(scaffolded + "def render_observation(observation):\n    return ''\n")
    assert defines_hooks("def broken(:\n")  # mypy says where

    pkg = tmp_path / "connect4-openenv"
    shutil.copytree(template, pkg)
    (pkg / CUSTOM).write_text(scaffolded + 'SYSTEM_PROMPT = "Play well."\n')
    fresh = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = run("check", str(pkg), env=fresh)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{pkg}: up to date\n", "")
    assert not (tmp_path / "cache" / "openenv-gen" / "mypy").exists()


def venv_without_mypy(root: Path) -> Path:
    """A venv whose site-packages reach this venv's packages through a `.pth` file (a folder
    of symlinks, mypy's left out) and openenv-gen's editable installs; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    deps = root / "deps"
    deps.mkdir()
    for entry in ours.iterdir():
        if entry.suffix == ".pth":
            if entry.name.startswith("_editable_impl_openenvgen"):
                shutil.copy(entry, purelib / entry.name)
        elif entry.name != "mypy" and not entry.name.startswith("mypy-"):
            (deps / entry.name).symlink_to(entry)
    (purelib / "project_deps.pth").write_text(f"{deps}\n")
    return python


def test_the_scaffolded_typed_examples_type_check_once_uncommented(
    request: pytest.FixtureRequest, template: Path, tmp_path: Path, cache: dict[str, str]
) -> None:
    """The typed hooks custom.py shows as comments name the package's own model and are
    right as written: uncommented, they load (typed) and pass `check`."""
    needs_mypy(request)
    pkg = tmp_path / "connect4-openenv"
    shutil.copytree(template, pkg)
    scaffolded = (pkg / CUSTOM).read_text()
    assert "# from .models import Connect4Observation\n" in scaffolded
    examples = "".join(
        line.removeprefix("# ")
        for line in scaffolded.splitlines(keepends=True)
        if line.startswith(("# from .models", "# @vf.", "# def ", "# async def ", "#     "))
    )
    (pkg / CUSTOM).write_text(f"import verifiers.v1 as vf\n\n{examples}")
    result = run("check", str(pkg), env=cache)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{pkg}: up to date\n", ""), result.stdout
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from openenvgen_runtime.extensions import load_extension as load; e = load('connect4_openenv.custom');"
            " print(e.records, e.typed_renderer, sorted(h.fn.__name__ for h in e.scores))",
        ],
        capture_output=True,
        text=True,
        cwd=pkg,
        env={**os.environ, "PYTHONPATH": str(pkg)},
        timeout=120,
    )
    assert loaded.stdout.split() == ["all", "True", "['final_reward',", "'observed',", "'short_replies',", "'turns']"]


def test_constrained_numbers_are_typed_for_hooks(
    request: pytest.FixtureRequest, tmp_path: Path, cache: dict[str, str]
) -> None:
    """A constrained field (`iteration: int`, `ge=0` in its Field) is its number type to
    mypy, not `Any`: a hook that treats repl's `iteration` as a string fails `check`."""
    needs_mypy(request)
    pkg = tmp_path / "repl-openenv"
    generated = run("repl", "--out", str(pkg), env=cache)
    assert generated.returncode == 0, generated.stderr
    (pkg / "repl_openenv" / "custom.py").write_text(
        "import verifiers.v1 as vf\n\nfrom .models import REPLObservation\n\n\n"
        "@vf.metric\ndef shouted(observation: REPLObservation) -> float:\n"
        "    return float(len(observation.iteration.upper()))\n"
    )
    failed = run("check", str(pkg), env=cache)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stdout.splitlines() == [
        f'{pkg}: types: repl_openenv/custom.py:8: "int" has no attribute "upper"  [attr-defined]'
        " (reads field `iteration`)"
    ]


def settled_capture(tmp_path: Path) -> Path:
    """connect4's capture with `board` always present (required): the hooks' MISSING check of it is settled."""
    capture = catalog.entries()["connect4"].interface().model_dump(by_alias=True, mode="json")
    observation = capture["schema"]["observation"]
    observation["required"] = sorted({*observation.get("required", []), "board"})
    path = tmp_path / "connect4-board-always.json"
    path.write_text(json.dumps(capture))
    return path


def test_a_missing_check_of_a_field_now_always_present_is_a_warning_as_regen_says_minor(
    request: pytest.FixtureRequest, template: Path, tmp_path: Path, cache: dict[str, str]
) -> None:
    """`observation.board is MISSING` once `board` is always there: a dead branch that mypy's
    `strict_equality` flags, but the hook runs as before; regen calls the change minor and
    `check` agrees: one warning line, exit 0."""
    needs_mypy(request)
    pkg = with_hooks(template, tmp_path)
    regen = run("regen", str(pkg), "--from-upstream", "--schema-file", str(settled_capture(tmp_path)), env=cache)
    warning = (
        "openenv-gen: warning: `is MISSING` checks of fields the models now always hold, not counted: "
        f"{pkg / CUSTOM}:{BOARD_LINES[0]}\n"
    )
    assert regen.returncode == 0 and regen.stderr == warning, regen.stdout + regen.stderr
    assert "check custom.py" not in regen.stdout
    assert regen.stdout.splitlines()[0].endswith("0.1.0 → 0.2.0 (minor: 1 model change)"), regen.stdout
    ok = run("check", str(pkg), env=cache)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, f"{pkg}: up to date\n", warning)

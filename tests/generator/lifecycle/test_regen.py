"""`openenv-gen regen`: semver bumps by impact, CHANGELOG entries, user-owned files kept
byte for byte, generated files always rewritten, scaffolding once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openenvgen import catalog, sources
from openenvgen.generation.marked import END_MARKER
from openenvgen.generation.render import LOCK_FILE, sha256_text
from openenvgen.generation.scaffold import SCAFFOLD_REPOSITORY
from openenvgen.lifecycle.changelog import CHANGELOG_MARKER, add_changelog_entry
from openenvgen_testsupport.generating import file_tree, gen


def _capture(name: str) -> dict[str, Any]:
    return catalog.entries()[name].interface().model_dump(by_alias=True, mode="json")


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One scaffolded package per env, generated once and copied by each test."""
    root = tmp_path_factory.mktemp("regen-templates")
    out = {}
    for name in ("wordle", "echo"):
        target = root / f"{name}-openenv"
        result = gen(name, "--out", str(target))
        assert result.returncode == 0, result.stderr
        out[name] = target
    return out


def _copy(templates: dict[str, Path], name: str, tmp_path: Path) -> Path:
    target = tmp_path / f"{name}-openenv"
    shutil.copytree(templates[name], target)
    return target


def _version(pkg: Path) -> str:
    return json.loads(next(pkg.glob("*/snapshot.json")).read_text())["package_version"]


def _write_capture(tmp_path: Path, name: str, change: Callable[[dict], None]) -> Path:
    capture = _capture(name)
    change(capture)
    path = tmp_path / f"{name}-upstream.json"
    path.write_text(json.dumps(capture))
    return path


def _action(c: dict) -> dict:
    return c["schema"]["action"]


def _tool(c: dict, name: str) -> dict:
    return next(t for t in c["tools"] if t["name"] == name)


def _drop_tool(c: dict, name: str) -> None:
    c["tools"] = [t for t in c["tools"] if t["name"] != name]


def _observations(change: Callable[[dict], object]) -> Callable[[dict], None]:
    """`change` applied to the observation and to the reset observation, as a server serving
    the same model for both does (wordle's and echo's do)."""

    def apply(c: dict) -> None:
        change(c["schema"]["observation"])
        change(c["schema"]["reset_observation"])

    return apply


def _prompt_defaults_to(default: object, schema: dict[str, Any]) -> Callable[[dict], None]:
    """wordle's required `prompt` made optional, defaulting to `default`, typed `schema`."""
    return _observations(
        lambda o: (o["required"].remove("prompt"), o["properties"].update(prompt={**schema, "default": default}))
    )


# The semver table, one row per kind of upstream change: (env, change, bump, new version, changelog line).
SEMVER_TABLE = [
    (
        "wordle",
        lambda c: c["metadata"].update(description="Guess the word"),
        "patch",
        "0.1.1",
        "**patch** `metadata.description`",
    ),
    (
        "wordle",
        lambda c: _action(c).update(description="A guess."),
        "patch",
        "0.1.1",
        "**patch** `action`: description changed",
    ),
    (
        "wordle",
        lambda c: _action(c)["properties"]["message"].update(description="Your guess"),
        "patch",
        "0.1.1",
        "**patch** `action.message`",
    ),
    (
        "echo",
        lambda c: _tool(c, "echo_message").update(description="Echo it back"),
        "patch",
        "0.1.1",
        "**patch** `tools.echo_message`: description changed",
    ),
    (
        "wordle",
        lambda c: _action(c)["properties"].update(hint={"type": "string", "default": ""}),
        "minor",
        "0.2.0",
        "**minor** `action.hint`: optional field added (string)",
    ),
    (
        "echo",
        lambda c: c["tools"].append(
            {
                "name": "shout",
                "description": "Loud echo",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            }
        ),
        "minor",
        "0.2.0",
        "**minor** `tools.shout`: tool added",
    ),
    (
        "wordle",
        lambda c: (_action(c)["properties"].update(hint={"type": "string"}), _action(c)["required"].append("hint")),
        "major",
        "1.0.0",
        "**major** `action.hint`: required field added (string)",
    ),
    (
        "wordle",
        lambda c: (_action(c)["properties"].pop("message"), _action(c).update(required=[])),
        "major",
        "1.0.0",
        "**major** `action.message`: field removed",
    ),
    (
        "wordle",
        lambda c: _action(c)["properties"]["message"].update(type="integer"),
        "major",
        "1.0.0",
        "**major** `action.message`: retyped: string → integer",
    ),
    (
        "wordle",
        lambda c: _action(c)["properties"]["message"].update(maxLength=5),
        "major",
        "1.0.0",
        "**major** `action.message`: constraint added: maxLength 5",
    ),
    ("echo", lambda c: _drop_tool(c, "echo_message"), "major", "1.0.0", "**major** `tools.echo_message`: tool removed"),
    # Observations are read: what old readers read, they still read.
    (
        "wordle",
        _prompt_defaults_to("", {"type": "string"}),
        "minor",
        "0.2.0",
        '**minor** `observation.prompt`: field no longer required (defaults to "")',
    ),
    (
        "wordle",
        _prompt_defaults_to(None, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        "major",
        "1.0.0",
        "**major** `observation.prompt`: field may now be absent (then null, not a value it held before)",
    ),
    (
        "echo",
        _observations(lambda o: o["$defs"]["ToolError"].pop("additionalProperties")),
        "minor",
        "0.2.0",
        "**minor** `observation.error`: additional properties now allowed",
    ),
    (
        "wordle",
        _observations(lambda o: o["$defs"]["TextArenaMessage"].update(additionalProperties=False)),
        "minor",
        "0.2.0",
        "**minor** `observation.messages[]`: additional properties no longer allowed",
    ),
    # The reset observation (echo's server serves one) is an output, like the observation.
    (
        "echo",
        lambda c: c["schema"]["reset_observation"]["properties"].update(greeting={"type": "string"}),
        "minor",
        "0.2.0",
        "**minor** `reset_observation.greeting`: optional field added (string)",
    ),
    (
        "echo",
        lambda c: c["schema"]["reset_observation"]["properties"].pop("tool_name"),
        "major",
        "1.0.0",
        "**major** `reset_observation.tool_name`: field removed",
    ),
]


@pytest.mark.parametrize(
    ("env", "change", "impact", "version", "line"),
    SEMVER_TABLE,
    ids=[f"{row[2]}-{i}" for i, row in enumerate(SEMVER_TABLE)],
)
def test_semver_table(
    templates: dict[str, Path], tmp_path: Path, env: str, change, impact: str, version: str, line: str
) -> None:
    pkg = _copy(templates, env, tmp_path)
    upstream = _write_capture(tmp_path, env, change)
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.splitlines()[0]
        == f"{pkg}: 0.1.0 → {version} ({impact}: " + result.stdout.splitlines()[0].split(f"({impact}: ", 1)[1]
    )
    assert _version(pkg) == version
    assert f'version = "{version}"' in (pkg / "pyproject.toml").read_text()
    changelog = (pkg / "CHANGELOG.md").read_text()
    entry = changelog.split(CHANGELOG_MARKER, 1)[1]
    assert entry.startswith(f"\n\n## {version}\n\nRegenerated from a saved capture of `openenv/")
    assert f"a **{impact}** change (was 0.1.0)" in entry
    assert line in entry
    assert entry.index(f"## {version}") < entry.index("## 0.1.0")
    # The result is a consistent package, and re-running changes nothing.
    assert gen("check", str(pkg)).returncode == 0
    before = file_tree(pkg)
    again = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert again.returncode == 0 and again.stdout.strip() == f"{pkg}: up to date ({version})"
    assert file_tree(pkg) == before


def test_a_change_to_the_observation_served_for_reset_too_is_reported_once(
    templates: dict[str, Path], tmp_path: Path
) -> None:
    """wordle's server serves one model for both: its reset observation is the step's."""
    pkg = _copy(templates, "wordle", tmp_path)
    upstream = _write_capture(
        tmp_path, "wordle", _observations(lambda o: (o["properties"].pop("info"), o["properties"].pop("legal_players")))
    )
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{pkg}: 0.1.0 → 1.0.0 (major: 2 model changes)",
        "  major  observation.info: field removed",
        "  major  observation.legal_players: field removed",
    ]
    assert "reset_observation" not in (pkg / "CHANGELOG.md").read_text()


def test_no_change_writes_nothing(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    before = {p: p.stat().st_mtime_ns for p in pkg.rglob("*")}
    result = gen("regen", str(pkg))
    assert result.returncode == 0
    assert result.stdout.strip() == f"{pkg}: up to date (0.1.0)"
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*")} == before


def test_a_generator_change_is_a_patch(templates: dict[str, Path], tmp_path: Path) -> None:
    """Files the lock recorded differ from what this generator writes: an older openenv-gen."""
    pkg = _copy(templates, "wordle", tmp_path)
    models = pkg / "wordle_openenv" / "models.py"
    old_text = models.read_text().replace("class TextArenaAction", "# from an older generator\nclass TextArenaAction")
    models.write_text(old_text)
    lock = json.loads((pkg / LOCK_FILE).read_text())
    lock["files"]["wordle_openenv/models.py"] = sha256_text(old_text)
    (pkg / LOCK_FILE).write_text(json.dumps(lock, indent=2) + "\n")
    assert "stale: wordle_openenv/models.py" in gen("check", str(pkg)).stdout
    result = gen("regen", str(pkg))
    assert result.returncode == 0
    assert result.stdout.strip() == f"{pkg}: 0.1.0 → 0.1.1 (regenerated by openenv-gen 0.1.0; no model change)"
    assert "# from an older generator" not in models.read_text()
    assert "## 0.1.1\n\nRegenerated with openenv-gen" in (pkg / "CHANGELOG.md").read_text()
    assert gen("check", str(pkg)).returncode == 0


def test_a_package_that_does_not_require_verifiers_is_stale_and_regen_adds_it(
    templates: dict[str, Path], tmp_path: Path
) -> None:
    """A package from a generator that required only the runtime: hubs cannot tell its
    verifiers runtime, so `check` calls it stale and `regen` adds the requirement (a patch)."""
    pkg = _copy(templates, "wordle", tmp_path)
    pyproject = pkg / "pyproject.toml"
    new_text = pyproject.read_text()
    start = new_text.index("dependencies = [")
    end = new_text.index("]\n", start) + 2
    old_text = new_text[:start] + 'dependencies = ["openenvgen-runtime>=0.1.0,<0.2"]\n' + new_text[end:]
    pyproject.write_text(old_text)
    lock = json.loads((pkg / LOCK_FILE).read_text())
    lock["files"]["pyproject.toml"] = sha256_text(old_text)
    (pkg / LOCK_FILE).write_text(json.dumps(lock, indent=2) + "\n")
    checked = gen("check", str(pkg))
    assert checked.returncode == 1
    assert "stale: pyproject.toml" in checked.stdout
    assert '+    "verifiers>=0.4,<0.5",' in checked.stdout
    result = gen("regen", str(pkg))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{pkg}: 0.1.0 → 0.1.1 (regenerated by openenv-gen 0.1.0; no model change)"
    assert pyproject.read_text() == new_text.replace('version = "0.1.0"', 'version = "0.1.1"')
    assert gen("check", str(pkg)).returncode == 0


def test_a_hand_edit_is_restored_without_a_bump(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    taskset = pkg / "wordle_openenv" / "taskset.py"
    taskset.write_text(taskset.read_text() + "\nHACK = True\n")
    changelog = (pkg / "CHANGELOG.md").read_bytes()
    result = gen("regen", str(pkg))
    assert result.stdout.strip() == f"{pkg}: rewritten (generated files restored); version stays 0.1.0"
    assert "HACK" not in taskset.read_text()
    assert (pkg / "CHANGELOG.md").read_bytes() == changelog
    assert gen("check", str(pkg)).returncode == 0


def test_user_owned_files_survive_regeneration_byte_for_byte(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    # The user's own files, including edited scaffolds, odd bytes and line endings.
    (pkg / "NOTES.md").write_bytes(b"notes\r\nwith CRLF\r\n")
    (pkg / "wordle_openenv" / "rewards.py").write_text("BONUS = 2\n")
    (pkg / "data").mkdir()
    (pkg / "data" / "blob.bin").write_bytes(bytes(range(256)))
    test_file = pkg / "tests" / "test_wordle_openenv.py"
    test_file.write_text(test_file.read_text() + "\n\ndef test_mine() -> None:\n    assert True\n")
    answers = pkg / ".copier-answers.yml"
    answers.write_text(answers.read_text() + "# touched\n")
    readme = pkg / "README.md"
    readme.write_text(
        "Badges of mine\n\n"
        + readme.read_text().replace(
            "Your own notes on wordle-openenv go here.", "Tuned for 6-letter words.\n\nNo trailing newline"
        )
    )
    changelog = pkg / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\nKept by hand: a note about 0.1.0.\n")
    models = pkg / "wordle_openenv" / "models.py"
    models.write_text(models.read_text() + "HAND_EDIT = 1\n")  # generated: rewritten regardless
    user = {
        rel: data
        for rel, data in file_tree(pkg).items()
        if rel
        in {
            "NOTES.md",
            "wordle_openenv/rewards.py",
            "data/blob.bin",
            "tests/test_wordle_openenv.py",
            ".copier-answers.yml",
        }
    }
    assert len(user) == 5
    readme_before = readme.read_text()
    changelog_before = changelog.read_text()

    upstream = _write_capture(
        tmp_path, "wordle", lambda c: _action(c)["properties"].update(hint={"type": "string", "default": ""})
    )
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert result.returncode == 0, result.stderr

    after = file_tree(pkg)
    for rel, data in user.items():
        assert after[rel] == data, rel
    # README: the text outside the markers is kept exactly; inside, the new field shows.
    readme_after = readme.read_text()
    assert readme_after.startswith("Badges of mine\n\n<!-- Code generated by openenv-gen")
    assert readme_after.split(END_MARKER)[1] == readme_before.split(END_MARKER)[1]
    assert "| `hint` | no | string |" in readme_after
    # CHANGELOG: the old text is all there, the new entry inserted after the marker.
    changelog_after = changelog.read_text()
    head, tail = changelog_before.split(CHANGELOG_MARKER + "\n")
    assert changelog_after.startswith(head + CHANGELOG_MARKER + "\n\n## 0.2.0\n")
    assert changelog_after.endswith(tail)
    # Generated files are always rewritten.
    assert "HAND_EDIT" not in models.read_text()
    assert "hint" in models.read_text()
    assert gen("check", str(pkg)).returncode == 0


def test_a_readme_without_markers_is_replaced_only_if_unedited(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    readme = pkg / "README.md"
    upstream = _write_capture(tmp_path, "wordle", lambda c: c["metadata"].update(description="New"))
    # Edited, markers gone: regeneration would lose the user's text, so nothing changes.
    readme.write_text("All mine now.\n")
    before = file_tree(pkg)
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert result.returncode == 73
    assert "README.md: cannot keep your text" in result.stderr
    assert file_tree(pkg) == before
    # A README from before the markers existed, exactly as generated: replaced.
    old_generated = "<!-- Code generated by openenv-gen. DO NOT EDIT. -->\n# wordle-openenv\nold layout\n"
    readme.write_text(old_generated)
    lock = json.loads((pkg / LOCK_FILE).read_text())
    lock["files"]["README.md"] = sha256_text(old_generated)
    (pkg / LOCK_FILE).write_text(json.dumps(lock, indent=2) + "\n")
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream))
    assert result.returncode == 0, result.stderr
    assert END_MARKER in readme.read_text()


def test_regen_from_a_live_server(grid_server: str, tmp_path: Path) -> None:
    live = sources.from_server(grid_server).model_dump(by_alias=True, mode="json")
    older = json.loads(json.dumps(live))
    older["schema"]["action"]["properties"]["steps"]["maximum"] = 5  # upstream has since narrowed it to 3
    (tmp_path / "older.json").write_text(json.dumps(older))
    pkg = tmp_path / "grid-openenv"
    assert gen("grid", "--schema-file", str(tmp_path / "older.json"), "--out", str(pkg)).returncode == 0
    result = gen("regen", str(pkg), "--from-upstream", "--base-url", grid_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{pkg}: 0.1.0 → 1.0.0 (major: 1 model change)",
        "  major  action.steps: constraint narrowed: maximum 5 → 3",
    ]
    assert "Regenerated from the live schema of `openenv/grid`" in (pkg / "CHANGELOG.md").read_text()
    assert gen("check", str(pkg), "--upstream", "--base-url", grid_server).returncode == 0


def test_regen_all_and_usage_errors(templates: dict[str, Path], tmp_path: Path) -> None:
    a = _copy(templates, "wordle", tmp_path)
    b = _copy(templates, "echo", tmp_path)
    for pkg in (a, b):
        (pkg / "pyproject.toml").write_text("edited\n")
    result = gen("regen", "--all", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "echo-openenv: rewritten (generated files restored); version stays 0.1.0",
        "wordle-openenv: rewritten (generated files restored); version stays 0.1.0",
    ]
    assert gen("regen", cwd=tmp_path).returncode == 64
    assert gen("regen", "--all", str(a), cwd=tmp_path).returncode == 64
    result = gen("regen", str(a), "--from-upstream")
    assert result.returncode == 64 and "--base-url" in result.stderr
    result = gen("regen", str(a), str(b), "--from-upstream", "--schema-file", "x.json")
    assert result.returncode == 64 and "NAME=" in result.stderr


def test_generating_over_a_package_keeps_its_version(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    upstream = _write_capture(tmp_path, "wordle", lambda c: c["metadata"].update(description="Newer"))
    assert gen("regen", str(pkg), "--from-upstream", "--schema-file", str(upstream)).returncode == 0
    assert _version(pkg) == "0.1.1"
    assert gen("wordle", "--out", str(pkg)).returncode == 0
    assert _version(pkg) == "0.1.1"
    assert gen("check", str(pkg)).returncode == 0


def test_add_changelog_entry_keeps_every_byte() -> None:
    entry = "## 2.0.0\n\n- x\n"
    marked = f"# Changelog\n\nintro\n{CHANGELOG_MARKER}\n\n## 1.0.0\n"
    assert (
        add_changelog_entry(marked, entry, None) == f"# Changelog\n\nintro\n{CHANGELOG_MARKER}\n\n{entry}\n## 1.0.0\n"
    )
    unmarked = "# Changes\n\n## 1.0.0\n- y\n"
    assert add_changelog_entry(unmarked, entry, None) == f"# Changes\n\n{entry}\n## 1.0.0\n- y\n"
    assert add_changelog_entry("free text", entry, None) == f"free text\n\n{entry}"
    assert add_changelog_entry(None, entry, None) == f"# Changelog\n\n{CHANGELOG_MARKER}\n\n{entry}"


# --- scaffolding ----------------------------------------------------------------------------


def test_a_new_package_is_scaffolded_once(templates: dict[str, Path], tmp_path: Path) -> None:
    """(tests/generator/generation/test_scaffold.py: the scaffold is what copier renders; and
    tests/generator/lifecycle/test_scaffold_update.py: `regen --scaffold` updates it.)"""
    import yaml

    pkg = templates["wordle"]
    answers = yaml.safe_load((pkg / ".copier-answers.yml").read_text())
    assert answers == {
        "_commit": "v0.1.0",
        "_src_path": SCAFFOLD_REPOSITORY,
        "env_id": "openenv/wordle",
        "example_action": {"message": "[crane]"},
        "module": "wordle_openenv",
        "observation_model": "TextArenaObservation",
        "package": "wordle-openenv",
        "package_version": "0.1.0",
        "stem": "Wordle",
    }
    lock = json.loads((pkg / LOCK_FILE).read_text())
    for rel in (".copier-answers.yml", "CHANGELOG.md", "tests/test_wordle_openenv.py"):
        assert (pkg / rel).is_file() and rel not in lock["files"]
    # Deleted scaffolds stay deleted: generating over an existing package never scaffolds.
    copy = _copy(templates, "wordle", tmp_path)
    shutil.rmtree(copy / "tests")
    assert gen("wordle", "--out", str(copy)).returncode == 0
    assert not (copy / "tests").exists()
    # --no-scaffold: generated files only.
    bare = tmp_path / "bare"
    assert gen("wordle", "--out", str(bare), "--no-scaffold").returncode == 0
    assert set(file_tree(bare)) == set(lock["files"]) | {LOCK_FILE}


def test_regen_does_not_import_copier(templates: dict[str, Path], tmp_path: Path) -> None:
    pkg = _copy(templates, "wordle", tmp_path)
    (pkg / "pyproject.toml").write_text("edited\n")
    probe = f"""
import sys
from pathlib import Path
from openenvgen.lifecycle.regen import regen_package
print(regen_package(Path({str(pkg)!r})).reason, "copier" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["generated", "files", "restored", "False"]


@pytest.mark.parametrize("env", ["wordle", "echo"])
def test_the_scaffolded_tests_pass(templates: dict[str, Path], env: str, tmp_path: Path) -> None:
    """The user's starting tests run green against the generated package as it is."""
    pkg = _copy(templates, env, tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=pkg,
        env={**os.environ, "PYTHONPATH": str(pkg), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout

"""`openenv-gen NAME --executes-code`: the mark of an env that runs model-written code, in
the package's snapshot, config and README, kept when the package is generated again."""

from __future__ import annotations

import json
from pathlib import Path

from openenvgen_testsupport.generating import gen
from openenvgen_testsupport.paths import FIXTURES

SCHEMA = FIXTURES / "captures" / "coding_env" / "schema.json"


def test_the_mark_is_recorded_shown_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    result = gen("my_code", "--schema-file", str(SCHEMA), "--out", str(out), "--executes-code", "--no-scaffold")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads((out / "my_code_openenv" / "snapshot.json").read_text())
    assert snapshot["defaults"]["executes_code"] is True
    assert "    EXECUTES_CODE: ClassVar[bool] = True\n" in (out / "my_code_openenv" / "taskset.py").read_text()
    readme = (out / "README.md").read_text()
    assert "**This env runs code the model writes**" in readme
    assert "--env.taskset.allow-host-execution true" in readme
    # Generated again without the flag (a schema refresh): the mark stays.
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    again = gen("my_code", "--schema-file", str(SCHEMA), "--out", str(out), "--no-scaffold")
    assert again.returncode == 0, again.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_an_unmarked_package_says_nothing_of_it(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert gen("plain", "--schema-file", str(SCHEMA), "--out", str(out), "--no-scaffold").returncode == 0
    assert "executes_code" not in json.loads((out / "plain_openenv" / "snapshot.json").read_text())["defaults"]
    assert "EXECUTES_CODE" not in (out / "plain_openenv" / "taskset.py").read_text()
    assert "runs code the model writes" not in (out / "README.md").read_text()

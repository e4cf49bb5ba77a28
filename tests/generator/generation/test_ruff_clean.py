"""Generated Python is written as ruff leaves it, under the repo's config and ruff's defaults."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openenvgen import catalog
from openenvgen.generation.package import resolve_spec
from openenvgen.generation.render import _py, render_files
from openenvgen_testsupport.paths import ROOT

RUFF = str(Path(sys.executable).with_name("ruff"))
# taskset.py and __init__.py come from templates; models.py from datamodel-code-generator.
TEMPLATED = ("taskset.py", "__init__.py")


def _write_templated(tmp_path: Path) -> list[Path]:
    written = []
    for name in sorted(catalog.entries()):
        spec = resolve_spec(name)
        for rel, text in render_files(spec).items():
            if rel.endswith(TEMPLATED):
                # Inside the repo, so its ruff config applies unless --isolated.
                path = tmp_path / spec.package / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, "utf-8")
                written.append(path)
    return written


@pytest.mark.parametrize("isolated", [False, True], ids=["repo-config", "ruff-defaults"])
def test_templated_python_is_ruff_clean(isolated: bool) -> None:
    out = ROOT / "build" / f"ruff-clean-test-{isolated}"
    flags = ["--isolated"] if isolated else []
    try:
        paths = [str(p) for p in _write_templated(out)]
        for command in (["check", *flags, "--no-cache", *paths], ["format", *flags, "--check", "--no-cache", *paths]):
            result = subprocess.run([RUFF, *command], capture_output=True, text=True, cwd=ROOT)
            assert result.returncode == 0, result.stdout + result.stderr
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_python_literals_are_double_quoted_and_exploded() -> None:
    assert _py('it\'s "x"\n') == '"it\'s \\"x\\"\\n"'
    assert _py([]) == "[]" and _py({}) == "{}"
    assert (
        _py({"a": [1, True, None]}, 1)
        == '{\n        "a": [\n            1,\n            True,\n            None,\n        ],\n    }'
    )
    assert eval(_py({"k": [{"x": 1.5}, "é"]})) == {"k": [{"x": 1.5}, "é"]}

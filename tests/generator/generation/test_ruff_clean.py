"""Generated Python is written as ruff leaves it, under the repo's config and ruff's defaults; a new
package, scaffolded files included, passes ruff with its defaults as a whole."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen import catalog
from openenvgen.generation.package import resolve_spec
from openenvgen.generation.render import _py, render_files
from openenvgen.generation.scaffold import render_scaffold, scaffold_answers
from openenvgen_testsupport.generating import gen
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


def test_python_literals_are_quoted_and_exploded_as_ruff_writes_them() -> None:
    assert _py('it\'s "x"\n') == "'it\\'s \"x\"\\n'"  # more double quotes than single: single
    assert _py("x'y\"z") == '"x\'y\\"z"'  # as many of each: double
    assert _py([]) == "[]" and _py({}) == "{}"
    assert (
        _py({"a": [1, True, None]}, 1)
        == '{\n        "a": [\n            1,\n            True,\n            None,\n        ],\n    }'
    )
    assert eval(_py({"k": [{"x": 1.5}, "é"]})) == {"k": [{"x": 1.5}, "é"]}


# JSON data whose Python literal takes each of the writer's paths: quotes, escapes, unprintable
# text, exponents, nesting, empty containers, None and booleans.
LITERALS: list[Any] = [
    None,
    {"message": "[crane]"},
    {"action_str": "click('12')", "quote": 'say "hi"', "both": "x'y\"z", "more": 'it\'s "x"'},
    {"code": "x = 6 * 7\nprint(x)\r\t\\", "text": "é<>&漢 🙂", "nul": 'a\x00b\x7f"\\', "nbsp": "a\xa0b"},
    {"n": [0, -2, 1.5, 1e100, 1e-05, 2.5e-300, True, False, None], "empty": {}, "none": [], "deep": [[{"a": [{}]}]]},
]


@pytest.mark.parametrize("value", LITERALS, ids=lambda v: str(v)[:20])
def test_the_scaffold_writes_its_example_action_as_the_package_templates_write_literals(
    value: Any, tmp_path: Path
) -> None:
    """Copier renders the scaffold too, with Jinja alone, so its tests template writes the example
    action with a macro: the same literal as the `py` filter (JSON's escapes aside, kept for
    unprintable text), which evaluates to the data and which ruff's defaults leave as it is."""
    answers = {**scaffold_answers(resolve_spec("wordle")), "example_action": value}
    text = render_scaffold(answers, src_path="https://example.invalid/t.git", commit="v0")[
        "tests/test_wordle_openenv.py"
    ]
    line = next(i for i, line in enumerate(text.split("\n")) if line.startswith("EXAMPLE_ACTION = "))
    literal = text.split("\n", line)[line].removeprefix("EXAMPLE_ACTION = ").split("\n\n\n", 1)[0]
    assert eval(literal) == value
    if "nul" not in (value or {}):
        assert literal == _py(value)
    path = tmp_path / "literal.py"
    path.write_text(f"EXAMPLE_ACTION = {literal}\n", "utf-8")
    for command in (
        ["check", "--isolated", "--no-cache", str(path)],
        ["format", "--isolated", "--check", "--no-cache", str(path)],
    ):
        result = subprocess.run([RUFF, *command], capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr


# Typed actions, an action whose example holds quotes, a union, MCP tools, no example action.
NEW_PACKAGES = ("wordle", "echo", "chess", "coding", "browsergym", "coding_tools", "openspiel", "opencode")


def test_every_file_of_a_new_package_is_ruff_clean_with_ruffs_defaults(tmp_path: Path) -> None:
    """A new package as a whole, scaffolded files included: what `ruff check` and `ruff format
    --check` say in its folder with ruff's defaults (--isolated: no configuration file is read,
    neither this repository's nor generated/ruff.toml), outside the repository. (Ruff's isort
    tells the package's own import apart from the third-party ones by the folder it runs in.)"""
    assert not tmp_path.resolve().is_relative_to(ROOT.resolve())
    for name in NEW_PACKAGES:
        package = tmp_path / name
        result = gen(name, "--out", str(package))
        assert result.returncode == 0, result.stderr
        assert len([*package.glob("tests/test_*.py"), *package.glob("*/custom.py")]) == 2
        for command in (["check", "--isolated", "--no-cache"], ["format", "--isolated", "--check", "--no-cache"]):
            result = subprocess.run([RUFF, *command, "."], capture_output=True, text=True, cwd=package)
            assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"

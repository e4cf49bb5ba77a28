"""bench/'s files are named after the benchmark ids they implement: each id of the runner
(`bench/run.py`'s ALL) has one module, `<id>_<what>.py` (or `<id>.py`), whose results carry
that id and whose docstring starts with it; what several benchmarks share is in modules
named after what it is, never in another benchmark's."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from openenvgen_testsupport.paths import ROOT

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import run as bench_run  # noqa: E402  (bench/ is a folder of scripts, not a package)

RESULT_ID = re.compile(r'"id": "((?:[PRS]\d+|HOOKS)[\w-]*)"')
"""A benchmark result's id as its module writes it (`"id": "P5-adapter"`)."""


def _ids() -> set[str]:
    """The benchmark ids the runner knows, without a variant's suffix (`P5-single` is P5's)."""
    return {name.split("-")[0] for name in bench_run.ALL}


def _module_id(path: Path) -> str:
    return path.stem.split("_")[0].upper()


def _benchmark_modules() -> dict[str, list[Path]]:
    """id → the bench modules named after it."""
    found: dict[str, list[Path]] = {}
    for path in sorted(BENCH.glob("*.py")):
        if _module_id(path) in _ids():
            found.setdefault(_module_id(path), []).append(path)
    return found


def test_each_benchmark_id_has_one_module_named_after_it() -> None:
    modules = _benchmark_modules()
    assert {i: [p.name for p in paths] for i, paths in modules.items() if len(paths) != 1} == {}
    assert sorted(_ids() - modules.keys()) == []
    for benchmark, (path,) in modules.items():
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
        assert doc.startswith(benchmark), f"{path.name}: its docstring does not start with {benchmark}"


def test_no_module_is_named_after_an_id_the_runner_does_not_have() -> None:
    named = [p for p in BENCH.glob("*.py") if re.fullmatch(r"[pr]\d+(_\w+)?", p.stem)]
    stray = [p.name for p in named if _module_id(p) not in _ids()]
    assert stray == []


def test_each_result_id_comes_from_its_benchmarks_module() -> None:
    """`"id": "P5-adapter"` is written by p5_*.py, `HOOKS-P3` by hooks.py, and so on."""
    written: dict[str, list[str]] = {}
    for path in sorted(BENCH.glob("*.py")):
        for result_id in RESULT_ID.findall(path.read_text("utf-8")):
            written.setdefault(path.name, []).append(result_id)
    misplaced = {
        name: ids for name, ids in written.items() if any(i.split("-")[0] != _module_id(BENCH / name) for i in ids)
    }
    assert misplaced == {}
    assert {i for ids in written.values() for i in ids} >= set(bench_run.ALL) - {"HOOKS"}


def test_the_method_text_covers_every_benchmark_module() -> None:
    """RESULTS.md's method text is made of these modules' docstrings: each benchmark's is among them."""
    listed = set(bench_run.METHOD_MODULES)
    assert all((BENCH / f"{name}.py").is_file() for name in listed), sorted(listed)
    assert {p.stem for paths in _benchmark_modules().values() for p in paths} <= listed

"""bench/ keeps its shape: each benchmark id of the runner (`bench/run.py`'s BENCHMARKS) is one
module named after it, `<id>_<what>.py`, with `run(quick, workdir)` and `main()` and a
docstring that starts with its id (the page's method text); what several share is in
common.py alone; bench/ stays within its line budget and its page within 200 lines."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from openenvgen_testsupport.paths import ROOT

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import run as bench_run  # noqa: E402  (bench/ is a folder of scripts, not a package)

MAX_PYTHON_LINES = 3000
MAX_PAGE_LINES = 200


def _functions(path: Path) -> dict[str, list[str]]:
    tree = ast.parse(path.read_text("utf-8"))
    return {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_each_benchmark_is_one_module_named_after_its_id() -> None:
    for bid, module in bench_run.BENCHMARKS.items():
        path = BENCH / f"{module}.py"
        assert re.fullmatch(rf"{bid.lower()}_\w+", module), module
        functions = _functions(path)
        assert functions.get("run") == ["quick", "workdir"] and functions.get("main") == [], path.name
        doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
        assert doc.startswith(f"{bid}:"), f"{path.name}: its docstring does not start with '{bid}:'"


def test_every_other_module_is_the_runner_or_the_shared_one() -> None:
    modules = {p.stem for p in BENCH.glob("*.py")}
    assert modules - set(bench_run.BENCHMARKS.values()) == {"run", "common"}


def test_bench_stays_within_its_budget() -> None:
    lines = sum(len(p.read_text("utf-8").splitlines()) for p in BENCH.rglob("*.py"))
    assert lines <= MAX_PYTHON_LINES
    assert len((BENCH / "RESULTS.md").read_text("utf-8").splitlines()) <= MAX_PAGE_LINES

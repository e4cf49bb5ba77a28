"""bench/RESULTS.md from saved runs: `bench/run.py --render A.json B.json` merges runs that
together hold every benchmark, each from one run, into one headline table that says which run
each row comes from; the checked-in page is what the checked-in runs render to."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.paths import ROOT

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import run as bench_run  # noqa: E402  (bench/ is a folder of scripts, not a package)
from common import row  # noqa: E402


def _run(ids: list[str], commit: str) -> dict[str, Any]:
    machine = {
        "date": "2026-12-07 04:00 UTC",
        "machine": "2 CPUs (test CPU), 23.5 GiB RAM, Python 3.11.7, Linux 6",
        "commit": commit,
        "subject": "a commit",
        "changed": [],
        "load_average_start": [1.0, 1.0, 1.0],
        "load_average_end": [2.0, 2.0, 2.0],
        "minutes": 1.0,
        "command": "python bench/run.py --quick",
    }
    rows = [
        {**row(i, f"{i} title", "a target", f"{i} measured", 1.5, True, label="x / y"), "load": "1.0→1.5"} for i in ids
    ]
    return {"machine": machine, "rows": rows}


def test_runs_merge_in_benchmark_order_each_row_naming_its_run() -> None:
    rest = [b for b in bench_run.BENCHMARKS if b != "R6"]
    page = bench_run.to_markdown(
        [("runs/quick.json", _run(rest[::-1], "aaaaaaa")), ("runs/r6.json", _run(["R6"], "b"))]
    )
    headline = [line for line in page.splitlines() if line.startswith("| **")]
    assert [re.match(r"\| \*\*(\S+)\*\*", line).group(1) for line in headline] == list(bench_run.BENCHMARKS)  # type: ignore[union-attr]
    assert headline[0] == "| **P1** P1 title | a target | P1 measured | 1.5 (x / y) | yes | 1.0→1.5 | 1 |"
    assert next(line for line in headline if "**R6**" in line).endswith("| 2 |")
    assert "1. `runs/quick.json`: `python bench/run.py --quick`" in page and "commit `aaaaaaa`" in page
    assert all(f"- **{bid}** " in page for bid in bench_run.BENCHMARKS)  # how each figure is measured


def test_a_benchmark_in_two_runs_or_in_none_is_refused() -> None:
    everything = list(bench_run.BENCHMARKS)
    with pytest.raises(SystemExit, match="P3 is in both first.json and second.json"):
        bench_run.to_markdown([("first.json", _run(everything, "a")), ("second.json", _run(["P3"], "b"))])
    with pytest.raises(SystemExit, match=f"these runs leave out {everything[-2]}, {everything[-1]}"):
        bench_run.to_markdown([("first.json", _run(everything[:-2], "a"))])


def _render(*paths: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(BENCH / "run.py"), "--render", *map(str, paths)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_runs_that_leave_a_benchmark_out_are_refused_and_the_page_is_kept(tmp_path: Path) -> None:
    page_before = (BENCH / "RESULTS.md").read_bytes()
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(_run(["P1", "P2"], "a")))
    out = _render(partial)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("run.py: error: these runs leave out P3, P4")
    assert (BENCH / "RESULTS.md").read_bytes() == page_before


def test_an_unreadable_run_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    out = _render(broken)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith(f"run.py: error: cannot read {broken}:")


def test_the_page_is_what_the_committed_runs_render_to() -> None:
    page = (BENCH / "RESULTS.md").read_text("utf-8")
    names = re.search(r"`python bench/run\.py --render ([^`]+)`", page)
    assert names is not None
    runs = [(name, json.loads((ROOT / name).read_text())) for name in names.group(1).split()]
    assert {p.relative_to(ROOT).as_posix() for p in (BENCH / "runs").glob("*")} == {n for n, _ in runs}
    assert bench_run.to_markdown(runs) == page

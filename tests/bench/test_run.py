"""bench/RESULTS.md from saved runs: `bench/run.py --render A.json B.json` merges runs that
together hold every benchmark, each from one run, and says which run each row comes from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import run as bench_run  # noqa: E402  (bench/ is a folder of scripts, not a package)


def _machine(commit: str, date: str) -> dict[str, Any]:
    return {
        "date": date,
        "nproc": 2,
        "cpu": "test CPU",
        "ram_gib": 23.5,
        "python": "3.11.7",
        "platform": "Linux",
        "uv": "uv 0.13.9",
        "git": {"commit": commit, "subject": "a commit", "dirty_bench": [], "dirty_elsewhere": []},
        "load_average_start": [1.0, 1.0, 1.0],
        "load_average_end": [2.0, 2.0, 2.0],
        "bench_minutes": 1.0,
        "mode": "quick",
        "command": "python bench/run.py --quick",
    }


def _result(bid: str) -> dict[str, Any]:
    return {
        "id": bid,
        "title": f"{bid} title",
        "target": "a target",
        "measured": f"{bid} measured",
        "ratio": 1.0,
        "ratio_label": "",
        "meets_target": True,
        "details": {},
        "load_average": {"before": [1.0, 1.0, 1.0], "after": [1.5, 1.0, 1.0]},
    }


def _run(ids: list[str], commit: str, date: str) -> dict[str, Any]:
    return {"machine": _machine(commit, date), "results": [_result(i) for i in ids]}


def test_runs_merge_in_benchmark_order_each_row_naming_its_run() -> None:
    everything_else = [b for b in bench_run.ALL if b not in ("R6", "P5-single")]
    quick = _run(list(reversed(everything_else)), "a" * 40, "2026-12-02 17:42 UTC")
    soak = _run(["R6"], "b" * 40, "2026-12-02 12:22 UTC")

    report = bench_run.merge([("bench/runs/quick.json", quick), ("bench/runs/r6.json", soak)])
    page = bench_run.to_markdown(report)

    assert [r["id"] for r in report["results"]] == [b for b in bench_run.ALL if b != "P5-single"]
    assert bench_run._missing_benchmarks(report) == []
    assert "from 2 saved runs" in page
    assert "### Run 1: bench/runs/quick.json" in page and "### Run 2: bench/runs/r6.json" in page
    assert f"commit `{'a' * 40}`" in page and f"commit `{'b' * 40}`" in page
    assert "| Meets target | load 1-min before→after | Run |" in page
    assert "| **R6** R6 title |" in page
    r6_row = next(line for line in page.splitlines() if line.startswith("| **R6**"))
    p1_row = next(line for line in page.splitlines() if line.startswith("| **P1**"))
    assert r6_row.endswith("| 2 |") and p1_row.endswith("| 1 |")
    assert "Full data in bench/runs/quick.json, bench/runs/r6.json." in page


def test_a_benchmark_that_broke_may_come_from_another_run() -> None:
    broken = {**_result("R5"), "title": bench_run.FAILED_TITLE, "meets_target": False}
    quick = {"machine": _machine("a" * 40, "d"), "results": [_result("P1"), broken]}
    again = _run(["R5"], "b" * 40, "d")
    report = bench_run.merge([("quick.json", quick), ("r5.json", again)])
    rows = [(r["id"], r["run"], r["title"]) for r in report["results"]]
    assert rows == [("P1", 1, "P1 title"), ("R5", 2, "R5 title")]
    # Broken in the only run that has it: the page shows it broken.
    alone = bench_run.merge([("quick.json", quick), ("other.json", _run(["P2"], "b" * 40, "d"))])
    assert ("R5", bench_run.FAILED_TITLE) in [(r["id"], r["title"]) for r in alone["results"]]


def test_one_run_renders_as_before() -> None:
    page = bench_run.to_markdown(_run(["P1", "P3"], "c" * 40, "2026-12-02 17:42 UTC"))
    assert "from one run" in page and "Run |" not in page and "### Run" not in page


def test_a_benchmark_in_two_runs_is_refused() -> None:
    with pytest.raises(SystemExit, match="P3 is in both first.json and second.json"):
        bench_run.merge(
            [("first.json", _run(["P1", "P3"], "a" * 40, "d")), ("second.json", _run(["P3"], "b" * 40, "d"))]
        )


def _render(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--render", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runs_that_leave_a_benchmark_out_are_refused_and_the_page_is_kept(tmp_path: Path) -> None:
    page_before = (ROOT / "bench" / "RESULTS.md").read_bytes()
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(_run(["P1", "P2"], "a" * 40, "d")))
    second.write_text(json.dumps(_run(["R6"], "b" * 40, "d")))

    out = _render(first, second)

    assert out.returncode == 2
    last_line = out.stderr.strip().splitlines()[-1]
    assert last_line.endswith(
        "these runs leave out HOOKS, P3, P4, P5, P6, P8, R4, R5, S1: bench/RESULTS.md needs every benchmark"
    )
    assert (ROOT / "bench" / "RESULTS.md").read_bytes() == page_before


def test_an_unreadable_run_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    out = _render(broken)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith(f"run.py: error: cannot read {broken}:")

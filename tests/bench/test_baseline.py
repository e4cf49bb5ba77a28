"""`bench/run.py --baseline REV`: REV's tree is a temporary git worktree (gone afterwards) whose
packages a side imports; the sides take turns in a rotated order; the ratios are of medians,
beside the A/A control's; the page shows them in the side-by-side table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from openenvgen_testsupport.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import baseline  # noqa: E402  (bench/ is a folder of scripts, not a package)
import run as bench_run  # noqa: E402

PACKAGE_ROOTS = ("generator", "schemas", "runtime", "tests/support")


def _worktrees() -> str:
    return subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_the_baseline_tree_is_a_worktree_of_that_commit_removed_afterwards(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with baseline.baseline_tree("HEAD~1", tmp_path) as (tree, commit):
        assert commit == head and str(tree.root) in _worktrees()
        checked_out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree.root, capture_output=True, text=True)
        assert checked_out.stdout.strip() == head
        paths = tree.pythonpath().split(":")
        assert paths[:5] == [str(tree.root), *(str(tree.root / d) for d in PACKAGE_ROOTS)]
        assert all(p.startswith(str(tree.root)) for p in paths)
    assert not tree.root.exists() and str(tree.root) not in _worktrees()


def test_a_tree_without_a_folder_leaves_it_out(tmp_path: Path) -> None:
    """A tree from before servers/ (or generated/) existed: only what it has is on its path."""
    for d in PACKAGE_ROOTS:
        (tmp_path / d).mkdir(parents=True)
    assert baseline.Tree(tmp_path).pythonpath().split(":") == [
        str(tmp_path),
        *(str(tmp_path / d) for d in PACKAGE_ROOTS),
    ]
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "pyproject.toml").write_text("")
    (tmp_path / "generated" / "x-openenv").mkdir(parents=True)
    assert baseline.Tree(tmp_path).pythonpath().split(":")[-2:] == [
        str(tmp_path / "servers"),
        str(tmp_path / "generated" / "x-openenv"),
    ]


def test_sides_take_turns_in_a_rotated_order() -> None:
    orders = [baseline.side_order(r) for r in range(3)]
    assert all(sorted(o) == sorted(baseline.SIDES) for o in orders)
    assert len({o[0] for o in orders}) == 3 and len({o[-1] for o in orders}) == 3


def test_ratios_are_of_medians_beside_the_aa_control() -> None:
    values = {baseline.CURRENT: [10.0, 12.0, 11.0], baseline.AA: [11.0, 11.0, 13.0], baseline.BASELINE: [10, 10, 40]}
    compared = baseline.compare(values)
    assert compared["ratio"] == round(11 / 10, 3) and compared["aa_ratio"] == 1.0
    assert compared["per_round_ratios"] == [1.0, 1.2, 0.275]
    result = baseline._result("P6", {"metric": values}, "HEAD~1", "f" * 40, "a commit", 3)
    assert result["id"] == "P6-vs-fffffff" and result["meets_target"] is False  # 1.1 > 1.02
    assert baseline.rejudged(result) == result  # a saved row, made again from its values
    steady = {baseline.CURRENT: [10.0] * 3, baseline.AA: [11.0] * 3, baseline.BASELINE: [10.0] * 3}
    assert baseline.verdict("P6", {"metric": baseline.compare(steady)}) is None  # A/A 1.1: noise hides 2%
    steady[baseline.AA] = [10.1] * 3
    assert baseline.verdict("P6", {"metric": baseline.compare(steady)}) is True
    page = bench_run.to_markdown({"machine": _machine(), "results": [result]})
    assert "## Side by side with earlier commits (`--baseline`)" in page
    assert "| P6-vs-fffffff | metric | 11 | 11 | 10 | 1.1 | 1.0 | 1.0, 1.2, 0.275 |" in page


def _machine() -> dict[str, object]:
    return {
        "date": "d",
        "nproc": 2,
        "cpu": "c",
        "ram_gib": 1,
        "python": "3",
        "platform": "p",
        "uv": "u",
        "git": "n/a",
        "load_average_start": [1, 1, 1],
        "load_average_end": [1, 1, 1],
        "bench_minutes": 1,
        "mode": "quick",
    }

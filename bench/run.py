"""Run the benchmarks, side by side in one run each, and write their page.

    python bench/run.py                   # every benchmark, full sizes (`make bench`)
    python bench/run.py --quick           # smaller sizes, the same comparisons (`make bench QUICK=1`)
    python bench/run.py --only P1,P3      # a subset
    python bench/run.py --only P2,P3 --against /tmp/before   # beside another tree (below)
    python bench/run.py --render bench/runs/*.json           # bench/RESULTS.md from saved runs

Each benchmark is one module named after its id (BENCHMARKS below) with `run(quick, workdir)`,
which measures and returns its headline rows (`common.row`: id, title, target, measured,
ratio, meets target; details for results.json), and `main()`, which runs it alone. Adding a
benchmark is its module and one line in BENCHMARKS. What several share is in common.py.

A run writes `--out` (bench/out): `results.json` (every figure) and `run.json` (the headline
rows and where and when they ran). bench/RESULTS.md is rendered only from `run.json` files
committed in bench/runs/ (`--render`), each benchmark from exactly one of them; nothing on the
page is edited by hand, and nothing else is committed.

`--against TREE`: TREE is a checkout of another commit with its own `make install`
(`git worktree add /tmp/before REV && make -C /tmp/before install`). The named benchmarks
run in rounds, each round this tree, TREE and this tree again (the A/A control), the order
rotating; every side is this runner and these benchmark modules on that tree's venv (so on
its generator and runtime). Each row `<id>-vs-<commit>` gives both trees' median figures
against the benchmark's own target, and the ratio between them beside the A/A ratio.

Quick mode: each benchmark's smaller sizes (what `quick` changes in its `run`), the same
comparisons.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from common import BENCH, load_average, log, machine, row

BENCHMARKS = {
    "P1": "p1_generate",
    "P2": "p2_check",
    "P3": "p3_step",
    "P4": "p4_uv_launch",
    "P5": "p5_shared_server",
    "P6": "p6_cpu",
    "P8": "p8_served",
    "P9": "p9_hooks",
    "P10": "p10_open_files",
    "R4": "r4_fleet",
    "R5": "r5_cluster",
    "R6": "r6_soak",
    "S1": "s1_sandbox",
    "T1": "t1_trl",
}
"""Benchmark id -> its module in bench/, in the page's order."""
FAILED = "(failed to run)"


def run(only: list[str], quick: bool, workdir: Path, save: Any) -> list[dict[str, Any]]:
    """Each of `only` in turn, `save`d after each: a run stopped half-way keeps what it measured."""
    rows: list[dict[str, Any]] = []
    for bid in only:
        before = load_average()
        try:
            out = importlib.import_module(BENCHMARKS[bid]).run(quick, workdir)
        except Exception as e:  # a benchmark that breaks is reported as such; the others still run
            log(f"{bid} failed: {e}")
            out = [row(bid, FAILED, "", f"{type(e).__name__}: {e}", None, False, traceback=traceback.format_exc())]
        for r in out:
            r["load"] = f"{before[0]}→{load_average()[0]}"
        rows += out
        save(rows)
    return rows


def against(only: list[str], tree: Path, rounds: int, quick: bool, out: Path) -> list[dict[str, Any]]:
    """Rows `<id>-vs-<commit>`: this tree and `tree` taking turns, with an A/A control; each
    side's figure is its row's ratio (rows with a number for one), judged by its own target."""
    sides = {"this": Path(sys.executable), "that": tree / ".venv" / "bin" / "python", "this again": None}
    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, cwd=tree, capture_output=True, text=True).stdout.strip()
    seen: dict[str, dict[str, list[dict[str, Any]]]] = {}
    before = load_average()
    for r in range(rounds):
        for side in list(sides)[r % 3 :] + list(sides)[: r % 3]:
            python = sides[side] or sides["this"]
            side_out = out / f"against-{r}-{side.replace(' ', '-')}"
            argv = [str(python), __file__, "--only", ",".join(only), "--out", str(side_out), *(["--quick"] * quick)]
            env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}
            subprocess.run(argv, env=env, check=True, timeout=6 * 3600)
            for x in json.loads((side_out / "run.json").read_text())["rows"]:
                if isinstance(x["ratio"], (int, float)):
                    seen.setdefault(x["id"], {}).setdefault(side, []).append(x)
    rows = []
    for bid, by_side in seen.items():
        med = {side: statistics.median(x["ratio"] for x in xs) for side, xs in by_side.items()}
        met = {side: sum(bool(x["meets_target"]) for x in xs) for side, xs in by_side.items()}
        if len(med) == 3:  # a benchmark with a figure on every side
            rows.append(
                row(
                    f"{bid}-vs-{commit}",
                    f"{bid} beside `{commit}` ({tree}), {rounds} rounds taking turns, A/A control",
                    f"{bid}'s target, met by this tree in every round",
                    f"{bid}'s ratio, median of {rounds}: this tree {med['this']:.3g} (target met "
                    f"{met['this']}/{rounds}), that tree {med['that']:.3g} ({met['that']}/{rounds}), "
                    f"this tree again {med['this again']:.3g}",
                    f"{med['this'] / med['that']:.3f} (A/A {med['this again'] / med['this']:.3f})",
                    met["this"] == rounds,
                    label="this tree / that tree",
                    rounds=by_side,
                )
                | {"load": f"{before[0]}→{load_average()[0]}"}
            )
    return rows


# --------------------------------------------------------------------------- the page


def table(rows: list[dict[str, Any]], run_column: bool) -> list[str]:
    """The headline table: one line per row, every benchmark alike."""
    head = ["Benchmark", "Target", "Measured", "Ratio", "Meets target", "load 1-min", *(["Run"] if run_column else [])]

    def cell(value: Any) -> str:
        if value is None:
            return "—"
        if isinstance(value, bool):
            return "yes" if value else "**no**"
        return (f"{value:.3g}" if isinstance(value, float) else str(value)).replace("|", "/").replace("\n", " ")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ratio = r.get("ratio_text") or cell(r["ratio"]) + (f" ({r['ratio_label']})" if r.get("ratio_label") else "")
        cells = [f"**{r['id']}** {r['title']}", r["target"], r["measured"], ratio, r["meets_target"], r.get("load")]
        lines.append("| " + " | ".join(cell(c) for c in [*cells, *([r["run"]] if run_column else [])]) + " |")
    return lines


def how(bid: str) -> str:
    """A benchmark's method: its module docstring's first paragraph, on one line."""
    path = BENCH / f"{BENCHMARKS[bid.split('-')[0]]}.py"
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def to_markdown(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """The page from saved runs (name, run.json): each benchmark from exactly one of them."""
    rows, owner = [], {}
    for number, (name, saved) in enumerate(runs, 1):
        for r in saved["rows"]:
            if r["id"] in owner:
                raise SystemExit(f"bench/run.py: {r['id']} is in both {owner[r['id']]} and {name}; give it once")
            owner[r["id"]] = name
            rows.append({**r, "run": number})
    present = {r["id"].split("-")[0] for r in rows if r["title"] != FAILED}
    missing = [bid for bid in BENCHMARKS if bid not in present]
    if missing:
        raise SystemExit(f"bench/run.py: these runs leave out {', '.join(missing)}: the page needs every benchmark")
    order = list(BENCHMARKS)
    rows.sort(key=lambda r: (order.index(r["id"].split("-")[0]), "-vs-" in r["id"], r["id"]))
    out = [
        "# Benchmark results",
        "",
        f"Written by `python bench/run.py --render {' '.join(name for name, _ in runs)}`; do not edit by hand. "
        "Every ratio is measured side by side within one run, interleaved; the machine is shared, so its load "
        "(1-minute average before→after each benchmark) is on every row. A `--quick` run has the smaller sizes "
        "bench/run.py lists, and the same comparisons.",
        "",
        "## Headline",
        "",
        *table(rows, run_column=True),
        "",
        "## Where each run ran",
        "",
    ]
    for number, (name, saved) in enumerate(runs, 1):
        m = saved["machine"]
        changed = f"; {len(m['changed'])} paths changed beyond it" if m.get("changed") else ""
        out.append(
            f"{number}. `{name}`: `{m['command']}`, {m['date']}, {m['minutes']} min, commit `{m['commit']}` "
            f"({m['subject']}){changed}; {m['machine']}; load {m['load_average_start']} → {m['load_average_end']}."
        )
    out += [
        "",
        "## How each figure is measured",
        "",
        "As bench/ measures at this commit; a row from a run at an earlier commit was measured by that commit's "
        "bench/, whose target it states.",
        "",
    ]
    out += [f"- **{bid}** ({BENCHMARKS[bid]}.py): {how(bid)}" for bid in BENCHMARKS]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, the same comparisons")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated ids")
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="where results.json and run.json go")
    parser.add_argument("--against", type=Path, metavar="TREE", help="another commit's installed checkout")
    parser.add_argument("--rounds", type=int, default=3, help="--against's rounds")
    parser.add_argument("--render", type=Path, nargs="+", metavar="RUN_JSON", help="write bench/RESULTS.md")
    ns = parser.parse_args()
    if ns.render:
        runs = []
        for path in ns.render:
            try:
                runs.append((os.path.relpath(path, BENCH.parent), json.loads(path.read_text())))
            except (OSError, ValueError) as e:
                parser.error(f"cannot read {path}: {e}")
        try:
            page = to_markdown(runs)
        except SystemExit as e:
            parser.error(str(e).removeprefix("bench/run.py: "))
        (BENCH / "RESULTS.md").write_text(page)
        log(f"wrote {BENCH / 'RESULTS.md'}")
        return
    only = [x.strip() for x in ns.only.split(",") if x.strip()]
    if unknown := sorted(set(only) - set(BENCHMARKS)):
        parser.error(f"unknown benchmarks: {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})")
    if ns.against and not (ns.against / ".venv" / "bin" / "python").exists():
        parser.error(f"{ns.against} has no .venv: run `make install` there first")
    info, started = machine(), time.monotonic()
    ns.out.mkdir(parents=True, exist_ok=True)

    def save(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        info.update(
            command=" ".join(["python bench/run.py", *sys.argv[1:]]),
            minutes=round((time.monotonic() - started) / 60, 1),
            load_average_end=load_average(),
        )
        (ns.out / "results.json").write_text(json.dumps({"machine": info, "rows": rows}, indent=2, ensure_ascii=False))
        headline = [{k: v for k, v in r.items() if k != "details"} for r in rows]
        (ns.out / "run.json").write_text(json.dumps({"machine": info, "rows": headline}, indent=1, ensure_ascii=False))
        return headline

    workdir = Path(tempfile.mkdtemp(prefix="openenvgen-bench-"))
    try:
        rows = (
            against(only, ns.against, ns.rounds, ns.quick, ns.out) if ns.against else run(only, ns.quick, workdir, save)
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(table(save(rows), run_column=False)))
    log(f"wrote {ns.out / 'results.json'} and {ns.out / 'run.json'}")


if __name__ == "__main__":
    main()

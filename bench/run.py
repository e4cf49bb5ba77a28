"""Run the benchmarks P1..P6, P8, R4, R5, R6 and S1; write bench/out/results.{json,md} and, for a run
of all of them, bench/RESULTS.md.

    python bench/run.py            # everything, full sizes (`make bench`)
    python bench/run.py --quick    # everything, smaller sizes, same comparisons (`make bench QUICK=1`)
    python bench/run.py --only P1,P3   # a subset: bench/out only, RESULTS.md untouched
    python bench/run.py --render bench/runs/quick.json bench/runs/r6-full.json
    python bench/run.py --baseline a19554e^ --only P3,P6,P8   # side by side with an earlier commit

`make bench` runs this with the project venv first on PATH. Everything is loopback-only
and every step has a time limit. bench/RESULTS.md is written only here: from a run of every
benchmark, or from saved runs (bench/runs/*.json, each a run's results.json) that together
hold every benchmark, each benchmark from exactly one of them (one that broke in a run may
come from another). Every figure of a benchmark comes from one run, side by side; the page
lists each run's command, commit (and what the tree held beyond it), date and load, and
which run each headline row comes from. Nothing in it is edited by hand. Its method text
is each benchmark module's docstring.

Each benchmark is in the module named after its id (p1_generate.py, ..., p5_shared_server.py
for P5 and its variants, hooks.py for HOOKS-P3/P6/P8); what several share is in common.py,
profiling.py, vf_eval_runs.py (a measured vf-eval run) and served_runs.py (a served env).
`--baseline REV` runs, instead, the named benchmarks' workloads (P2, P3, P5, P6, P8) under this
tree and REV's side by side, interleaved, with an A/A control (bench/baseline.py); its rows
(`P3-vs-<commit>`) join the page through `--render` beside the runs of every benchmark.

Quick mode: P1/P2 5 rounds instead of 9, P3 2000 steps instead of 5000, P4 at 16@4 only
(no 64@16 and pool-size runs), P5 32 episodes and one round instead of 64 and two, P6
N = 2 instead of 4 on `null`, no P5-single, R4 at 64@16 instead of 256@64, P8 8 tasks
instead of 64, R6 2,000 episodes (memory compared at 500 and 2,000) instead of 20,000
(1,000 and 20,000). R5 64 episodes × 2 rounds at 4 in flight instead of 256 × 3 at 8.
S1 8 episodes per run and two rounds instead of 24 and three.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, CONCURRENT_APP, fmt_ratio, git_state, load_average, log, machine

FAILED_TITLE = "(failed to run)"
"""The title of a benchmark's row when it broke; the page may take it from another run."""
ALL = ("P1", "P2", "P3", "P4", "P5", "P6", "P5-single", "R4", "R5", "P8", "R6", "HOOKS", "S1")


def _run_one(name: str, quick: bool, workdir: Path) -> list[dict[str, Any]]:
    if name == "P1":
        import p1_generate

        return [p1_generate.run(quick, workdir)]
    if name == "P2":
        import p2_check

        return [p2_check.run(quick, workdir)]
    if name == "P3":
        import p3_step

        return [p3_step.run(quick, workdir)]
    raise ValueError(name)


def run(
    only: tuple[str, ...], quick: bool, keep: bool, baseline: str | None = None, rounds: int | None = None
) -> dict[str, Any]:
    info = machine()
    workdir = Path(tempfile.mkdtemp(prefix="openenvgen-bench-"))
    log(f"work dir {workdir}; load average {info['load_average_start']}")
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    if baseline is not None:
        import baseline as side_by_side

        results += _guarded(f"baseline {baseline}", lambda: side_by_side.run(only, baseline, quick, workdir, rounds))
        only = ()
    for name in ("P1", "P2", "P3"):
        if name in only:
            results += _guarded(name, lambda n=name: _run_one(n, quick, workdir))
    episodic = tuple(n for n in ("P4", "P5", "P6", "P5-single") if n in only)
    if episodic:
        results += _guarded("P4/P5", lambda: _episodic(quick, workdir, episodic))
    if "R4" in only:
        import r4_fleet

        results += _guarded("R4", lambda: r4_fleet.run(quick, workdir))
    if "R5" in only:
        import r5_cluster

        results += _guarded("R5", lambda: r5_cluster.run(quick, workdir))
    if "P8" in only:
        import p8_served

        p8_dir = workdir / "p8"
        p8_dir.mkdir()
        results += _guarded("P8", lambda: p8_served.run(quick, p8_dir))
    if "R6" in only:
        import r6_soak

        results += _guarded("R6", lambda: r6_soak.run(quick, workdir))
    if "HOOKS" in only:
        import hooks

        results += _guarded("HOOKS", lambda: hooks.run(quick, workdir))
    if "S1" in only:
        import s1_sandbox

        results += _guarded("S1", lambda: [s1_sandbox.run(quick, workdir)])
    info["load_average_end"] = load_average()
    info["bench_minutes"] = round((time.monotonic() - started) / 60, 1)
    info["mode"] = "quick" if quick else "full"
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"machine": info, "results": results}


def _episodic(quick: bool, workdir: Path, which: tuple[str, ...]) -> list[dict[str, Any]]:
    """P4, P5, P6 and P5-single (full runs only) on one generated package and one scripted
    model, P5 and P6 on one shared server (see P5's note on the concurrent-session app)."""
    import p4_uv_launch
    import p5_shared_server
    import p6_cpu
    from vf_eval_runs import generate_package, scripted_model, uv_server

    package_dir = generate_package(workdir)
    results = []
    with scripted_model() as model_url:
        if "P4" in which:
            results.append(p4_uv_launch.run(quick, workdir, package_dir, model_url))
        if "P5" in which or "P6" in which:
            with uv_server(CONCURRENT_APP, env_vars={"PYTHONPATH": str(BENCH / "envs")}) as url:
                if "P5" in which:
                    results += p5_shared_server.run(quick, workdir, package_dir, model_url, url)
                if "P6" in which:
                    results.append(p6_cpu.run(quick, workdir, package_dir, model_url, url))
        if "P5-single" in which and not quick:
            results.append(p5_shared_server.run_single(workdir, package_dir, model_url))
    return results


def _guarded(name: str, fn: Any) -> list[dict[str, Any]]:
    """A benchmark that breaks is reported as such; the others still run."""
    before = load_average()
    try:
        out = fn()
    except Exception as e:
        log(f"{name} failed: {e}")
        return [
            {
                "id": name,
                "title": FAILED_TITLE,
                "target": "",
                "measured": f"{type(e).__name__}: {e}",
                "ratio": None,
                "ratio_label": "",
                "meets_target": False,
                "details": {"traceback": traceback.format_exc()},
            }
        ]
    for result in out:
        result.setdefault("load_average", {"before": before, "after": load_average()})
    return out


# --------------------------------------------------------------------------- markdown

METHOD_MODULES = (
    "p1_generate",
    "p2_check",
    "p3_step",
    "vf_eval_runs",
    "p4_uv_launch",
    "p5_shared_server",
    "p6_cpu",
    "r4_fleet",
    "r5_cluster",
    "served_runs",
    "p8_served",
    "r6_soak",
    "hooks",
    "s1_sandbox",
    "baseline",
)
"""Whose docstrings are the method text of RESULTS.md: each beside the code that measures."""


def _mark(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**no**")


def _header(m: dict[str, Any]) -> list[str]:
    git = m["git"]
    if isinstance(git, dict):
        tree = (
            "clean tree"
            if not git["dirty_bench"] and not git["dirty_elsewhere"]
            else (
                (f"bench/ changed: {', '.join(git['dirty_bench'])}" if git["dirty_bench"] else "bench/ clean")
                + (
                    f"; {len(git['dirty_elsewhere'])} other path(s) changed or untracked by other work in progress: "
                    f"{', '.join(git['dirty_elsewhere'][:12])}{' …' if len(git['dirty_elsewhere']) > 12 else ''}"
                    if git["dirty_elsewhere"]
                    else ""
                )
            )
        )
        commit = f"commit `{git['commit']}` ({git['subject']}); {tree}"
    else:
        commit = f"git {git}"
    return [
        f"- **Run**: `{m.get('command', 'python bench/run.py')}`, {m['mode']} mode, {m['date']}, "
        f"{m['bench_minutes']} min.",
        f"- **Code**: {commit}.",
        f"- **Machine**: {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, Python {m['python']}, {m['uv']}, "
        f"{m['platform']}.",
        f"- **Load** average (1/5/15 min): {m['load_average_start']} at the start, {m['load_average_end']} at the end; "
        "each benchmark's and each run's own load is in its row. The machine is shared with other work: single figures "
        "are noisy, and comparisons are made side by side in one run, interleaved.",
        *(
            [
                "- **Quick mode**: sizes smaller than the full run's, and than some targets name (e.g. P8's 256 "
                "episodes, R4's 256@64); the comparisons are the same. bench/run.py lists each size; full-size figures "
                "come from `make bench` without QUICK."
            ]
            if m["mode"] == "quick"
            else []
        ),
        *(
            [
                f"- **Rendered** again from this run's results.json by bench/run.py at commit `{m['rendered_at']}` "
                "(the figures are the run's; only the page's layout and wording can differ)."
            ]
            if m.get("rendered_at")
            else []
        ),
    ]


def _vf_eval_runs(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every vf-eval run in the report once (P5's three rows share their runs)."""
    seen: set[str] = set()
    found: list[tuple[str, dict[str, Any]]] = []

    def walk(owner: str, node: Any) -> None:
        if isinstance(node, dict):
            if "adapter" in node and "memory" in node and "transport" in node:
                key = node.get("out_dir") or str(id(node))
                if key not in seen:
                    seen.add(key)
                    found.append((owner, node))
                return
            for value in node.values():
                walk(owner, value)
        elif isinstance(node, list):
            for value in node:
                walk(owner, value)

    for r in report["results"]:
        walk(r["id"], r.get("details", {}))
    return found


def merge(sources: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One report from several saved runs (name, report): every benchmark from exactly one
    run, in the order of ALL; each result names its run (1-based) in `run`."""
    ran = {r["id"] for _, report in sources for r in report["results"] if not _failed_to_run(r)}
    owner: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    for number, (name, report) in enumerate(sources, 1):
        for r in report["results"]:
            if _failed_to_run(r) and r["id"] in ran:
                continue  # another run has it: a benchmark that broke is run again on its own
            if r["id"] in owner:
                raise SystemExit(f"bench/run.py: {r['id']} is in both {owner[r['id']]} and {name}; give it once")
            owner[r["id"]] = name
            results.append({**r, "run": number})
    order = {name: i for i, name in enumerate(ALL)}
    results.sort(key=lambda r: (order.get(r["id"].split("-")[0], len(order)), r["id"] != r["id"].split("-")[0]))
    return {
        "machine": sources[0][1]["machine"],
        "runs": [{**report["machine"], "source": name} for name, report in sources],
        "results": results,
    }


def _failed_to_run(result: dict[str, Any]) -> bool:
    return bool(result.get("title") == FAILED_TITLE)


def _missing_benchmarks(report: dict[str, Any]) -> list[str]:
    """The benchmarks (P5-single is optional) that no row of `report` holds, sorted."""
    return sorted(set(ALL) - {"P5-single"} - {r["id"].split("-")[0] for r in report["results"]})


def to_markdown(report: dict[str, Any]) -> str:
    runs = report.get("runs") or [report["machine"]]
    several = len(runs) > 1
    out = ["# Benchmark results", ""]
    if several:
        out += [
            f"Written by bench/run.py from {len(runs)} saved runs (`python bench/run.py --render "
            f"{' '.join(run['source'] for run in runs)}`); do not edit by hand. Each benchmark's figures come from "
            "one run, measured side by side in it; the Run column of the headline says which.",
            "",
        ]
        for number, run in enumerate(runs, 1):
            out += [f"### Run {number}: {run['source']}", "", *_header(run), ""]
    else:
        out += ["Written by bench/run.py (`make bench`) from one run; do not edit by hand.", "", *_header(runs[0]), ""]
    out += [
        "## Headline",
        "",
        "| Benchmark | Target | Measured | Ratio | Meets target | load 1-min before→after |"
        + (" Run |" if several else ""),
        "|---|---|---|---|---|---|" + ("---|" if several else ""),
    ]
    for r in report["results"]:
        ratio = r.get("ratio_text") or fmt_ratio(r.get("ratio"), 3 if r["id"] in ("P3", "P5-single") else 2)
        label = f" ({r['ratio_label']})" if r.get("ratio_label") else ""
        load = r.get("load_average", {})
        load_text = f"{load['before'][0]}→{load['after'][0]}" if load else ""
        run_cell = f" {r['run']} |" if several else ""
        out.append(
            f"| **{r['id']}** {r['title']} | {r['target']} | {r['measured']} | {ratio}{label} "
            f"| {_mark(r.get('meets_target'))} | {load_text} |{run_cell}"
        )
    rows = []
    for owner, x in _vf_eval_runs(report):
        mem = x["memory"]
        kinds = ", ".join(
            f"{k} {v['processes']}× {v['rss_mib']:.0f}" for k, v in mem.get("at_peak_rss_by_kind", {}).items()
        )
        rows.append(
            f"| {owner} | {x['adapter']} | {x.get('seat', 'null')} | {x['episodes']}@{x['concurrency']} "
            f"| {_transport(x)} | {x['ok']}/{x['episodes']} | {x['successful']} | {x['wall_s']} "
            f"| {x.get('episode_phase_s', '—')} | {x['successful_per_min']} | {x.get('cpu_s', '—')} "
            f"| {mem['peak_rss_mib']:.0f} | {mem['peak_pss_mib']:.0f} | {mem['peak_processes']} | {kinds} "
            f"| {_errors(x)} | {x['load_average_before'][0]}→{x['load_average_after'][0]} |"
        )
    if rows:
        out += [
            "",
            "## Episode runs through `vf-eval`",
            "",
            "Memory is the whole process tree (vf-eval, env servers it launches, harness programs).",
            "",
            "| | adapter | seat | episodes@concurrency | transport | ok | successful | wall s | episode phase s "
            "| successful/min (wall) | CPU s (tree) | peak RSS MiB | peak PSS MiB | peak processes "
            "| RSS MiB at peak, by kind | errors | load 1-min before→after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    for r in report["results"]:
        if r["id"] == "P8" and "served_runs" in r.get("details", {}):
            out += ["", "## Served runs (P8: `serve_env` + `EnvClient`)", "", *_served_table(r["details"])]
        if r["id"] == "P6" and "pairs" in r.get("details", {}):
            out += ["", "## P6 pairs (CPU-s of the whole vf-eval tree)", "", *_p6_table(r["details"])]
        if r["id"] == "R4" and "fleet_runs" in r.get("details", {}):
            out += ["", "## R4 runs", "", *_r4_table(r["details"])]
        if r["id"] == "R5" and "cluster_runs" in r.get("details", {}):
            out += ["", "## R5 runs", "", *_r5_table(r["details"])]
        if r["id"] == "R6" and "checkpoints" in r.get("details", {}):
            out += ["", "## R6 readings (the env-server process tree, nothing in flight)", "", *_r6_table(r["details"])]
    compared = [r for r in report["results"] if "baseline" in r.get("details", {})]
    if compared:
        out += ["", "## Side by side with earlier commits (`--baseline`)", "", *_baseline_table(compared)]
    data = ", ".join(run["source"] for run in runs) if several else "bench/out/results.json"
    out += ["", "## Details per benchmark", "", f"Full data in {data}.", ""]
    for r in report["results"]:
        out.append(f"- **{r['id']}**: {_detail(r)}")
    out += ["", "## Method", "", "Each benchmark's own description, from the module that measures it.", ""]
    for name in METHOD_MODULES:
        module = importlib.import_module(name)
        out += [f"### bench/{name}.py", "", (module.__doc__ or "").strip(), ""]
    return "\n".join(out).rstrip() + "\n"


def _served_table(d: dict[str, Any]) -> list[str]:
    lines = [
        "| side | seat | workers | episodes@in flight | ok | successful | episode phase s | successful/min "
        "| CPU-s per episode (server tree) | start-up s / CPU-s | peak RSS / PSS MiB (server tree) | errors "
        "| load 1-min before→after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in [*d["served_runs"], d["memory_run"]]:
        mem = x["memory"]
        errors = "; ".join(f"{v}× {k}" for k, v in x["errors"].items()).replace("|", "/") or "none"
        lines.append(
            f"| {'ours' if x['adapter'] == 'runtime' else 'built-in'} | {x['seat']} | {x['workers']} "
            f"| {x['episodes']}@{x['concurrency']} (peak {x['peak_in_flight']}) | {x['ok']}/{x['episodes']} "
            f"| {x['successful']} | {x['episode_phase_s']} | {x['successful_per_min']} | {x['cpu_s_per_episode']} "
            f"| {x['startup_wall_s']} / {x['startup_cpu_s']} | {mem['peak_rss_mib']:.0f} / {mem['peak_pss_mib']:.0f} | "
            f"{errors} | {x['load_average_before'][0]}→{x['load_average_after'][0]} |"
        )
    v = d["vf_eval_run"]
    mr = d["memory_run"]
    lines += [
        "",
        f"Ours through one `vf-eval` process, same tasks and concurrency: {v['ok']}/{v['episodes']} ok, "
        f"{v['successful_per_min_episode_phase']}/min over its episode phase ({v['episode_phase_s']} s), "
        f"{v['successful_per_min']}/min over its wall time ({v['wall_s']} s). "
        "Served / `vf-eval` successful per minute: "
        + ", ".join(f"{w} worker(s) {r}" for w, r in d["served_over_vf_eval_by_workers"].items())
        + ".",
        "",
        f"Memory at {mr['peak_in_flight']} episodes in flight on one worker (the last row; the model answers each turn "
        f"late so they overlap): server tree idle after warm-up {mr['memory_idle']['peak_pss_mib']:.0f} MiB PSS / "
        f"{mr['memory_idle']['peak_rss_mib']:.0f} MiB RSS, peak {mr['memory']['peak_pss_mib']:.0f} / "
        f"{mr['memory']['peak_rss_mib']:.0f}: **{mr['pss_mib_per_in_flight_episode']} MiB PSS "
        f"({mr['rss_mib_per_in_flight_episode']} MiB RSS) per in-flight episode**.",
    ]
    return lines


def _baseline_table(results: list[dict[str, Any]]) -> list[str]:
    """Per metric of each `--baseline` row: the sides' medians and the ratios with their spread."""
    lines = [
        "| row | metric | this tree | this tree again (A/A) | baseline | this tree / baseline | A/A "
        "| per round: this tree / baseline | per round: A/A |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for name, c in r["details"]["metrics"].items():
            med = c["median"]
            lines.append(
                f"| {r['id']} | {name} | {med['current']:.4g} | {med['current (A/A)']:.4g} | {med['baseline']:.4g} "
                f"| {c['ratio']} | {c['aa_ratio']} | {', '.join(map(str, c['per_round_ratios']))} "
                f"| {', '.join(map(str, c['per_round_aa_ratios']))} |"
            )
    return lines


def _p6_table(d: dict[str, Any]) -> list[str]:
    lines = [
        "| side | N | CPU-s at N | CPU-s at 4N | CPU-s per episode (slope) | start-up CPU-s (intercept) | ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for side, pairs in d["pairs"].items():
        for p in pairs:
            lines.append(
                f"| {side} | {p['n']} | {p['cpu_s_n']} | {p['cpu_s_4n']} | {p['slope']} | {p['startup_cpu_s']} "
                f"| {p['ok']}/{p['episodes']} |"
            )
    return lines


def _r4_table(d: dict[str, Any]) -> list[str]:
    lines = [
        "| retries | ok | failed (stop conditions) | in flight on the killed server (pool's count) | down s "
        "| back while running | episodes begun per server (server counters) "
        "| killed server's peak sessions after return | wall s | episode retries | pool log: down / back |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in d["fleet_runs"]:
        per_server = ", ".join(str(v) for v in x["episodes_begun_per_server"].values())
        lines.append(
            f"| {x['retries']} | {x['ok']}/{x['episodes']} | {x['failed']} ({x['failed_stop_conditions'] or 'none'}) "
            f"| {x['in_flight_on_killed_server']} | {x['killed_server_down_s']} | {_mark(x['back_while_running'])} "
            f"| {per_server} (the killed one first: after its return) "
            f"| {x['killed_server_peak_sessions_after_return']} | {x['wall_s']} | {x['episode_retries']} "
            f"| {x['down_warnings']} / {x['back_notices']} |"
        )
    return lines


def _r5_table(d: dict[str, Any]) -> list[str]:
    lines = [
        "| mode | round | episodes@in flight | successful | wall s | successful/min | load 1-min before→after |",
        "|---|---|---|---|---|---|---|",
    ]
    for x in d["cluster_runs"]:
        lines.append(
            f"| {x['mode']} | {x['round']} | {x['episodes']}@{x['concurrency']} | {x['successful']} | {x['wall_s']} "
            f"| {x['successful_per_min']} | {x['load_average_before'][0]}→{x['load_average_after'][0]} |"
        )
    modes = d["modes"]
    lines += [
        "",
        "Start-up (spawn to a warm-up batch back), where the servers ran, what was left: "
        + "; ".join(
            f"{mode} {m['startup_s']} s, {m.get('placement') or str(m.get('uv_servers')) + ' UV servers'}, "
            f"left {m.get('left_on_nodes', m.get('left_processes'))}"
            for mode, m in modes.items()
        )
        + ".",
    ]
    f = d["failure_run"]
    sessions = ", ".join(str(v) for v in f["sessions_on_rescheduled"].values()) or "none"
    lines += [
        "",
        f"Node failure ({f['episodes']} episodes at {f['concurrency']} in flight on {f['replicas']} replicas, "
        f"retries {f['retries']}): {f['killed']} killed after {f.get('killed_after_s')} s with "
        f"{f.get('in_flight')} episodes in flight on it ({f.get('in_flight_everywhere')} everywhere); "
        f"{f['lost']} lost, {f['retried']} retried, {f['failed']} failed in the end; rescheduled replicas in the "
        f"pool after {f.get('rescheduled_joined_s')} s, taking episodes after "
        f"{f.get('rescheduled_first_episode_s')} s (sessions on them: {sessions}); "
        f"left on nodes: {f['left_on_nodes'] or 'nothing'}.",
    ]
    return lines


def _r6_table(d: dict[str, Any]) -> list[str]:
    lines = [
        "| episodes | ok | episodes/min (segment) | RSS MiB trimmed | RSS MiB | PSS MiB | USS MiB | threads "
        "| open fds | sockets | TCP sockets by peer and state | settled after s | live objects | load 1-min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in d["checkpoints"]:
        states = ", ".join(f"{k} {v}" for k, v in c.get("tcp_by_peer", c["sockets_by_tcp_state"]).items())
        lines.append(
            f"| {c['episodes']} | {c['ok']} | {c['episodes_per_min']} | {c.get('trimmed_rss_mib', '—')} "
            f"| {c['rss_mib']} | {c['pss_mib']} "
            f"| {c['uss_mib']} | {c['threads']} | {c['fds']} | {c['sockets']} | {states} | {c.get('settle_s', '—')} "
            f"| {c['objects']} | {c['load_1min']} |"
        )
    grown = ", ".join(f"{k} {a}→{b}" for k, (a, b) in d.get("object_types_grown", {}).items()) or "none"
    lines += ["", f"Object types whose live count grew most, first reading → last: {grown}."]
    return lines


def _transport(x: dict[str, Any]) -> str:
    t = x["transport"]
    if "base_url" in t:
        return "one shared base_url server" + (f", {x['tasks']} tasks" if x.get("tasks", 1) > 1 else "")
    return "UV provider" + (
        f", max_servers {t['max_servers']}" if x["adapter"] == "runtime" else ", a server per episode"
    )


def _errors(x: dict[str, Any]) -> str:
    parts = [f"{v}× {k}" for k, v in x.get("errors", {}).items()]
    if x.get("timed_out"):
        parts.append("stopped at the time limit")
    missing = x["episodes"] - x["recorded"]
    if missing > 0:
        parts.append(f"{missing} not recorded")
    return "; ".join(parts).replace("|", "/") or "none"


def _detail(r: dict[str, Any]) -> str:
    d = r.get("details", {})
    if "traceback" in d:
        return "failed: " + d["traceback"].strip().splitlines()[-1]
    if "baseline" in d:
        b = d["baseline"]
        return (
            f"against `{b['commit']}` (`{b['rev']}`: {b['subject']}); see the side-by-side table above; "
            + "; ".join(f"{k}: {v}" for k, v in d.items() if k not in ("baseline", "metrics"))
        )
    if r["id"].startswith("HOOKS"):
        return str(d.get("summary", ""))
    if r["id"] in ("P1", "P2"):
        med = ", ".join(f"`{k}` {v:.3f} s" for k, v in d.get("median_s", {}).items())
        imp = d.get("importtime", {})
        top = ", ".join(f"{k} {v:.0f}" for k, v in list(imp.get("import_ms_by_package", {}).items())[:6])
        prof = d.get("cprofile", {})
        prof_text = ", ".join(
            f"{k} {v['cumulative_s']:.3f} s ×{v['calls']}" for k, v in prof.items() if isinstance(v, dict)
        )
        if r["id"] == "P1":
            warm = d.get("importtime_warm", {})
            warm_prof = ", ".join(
                f"{k} {v['cumulative_s']:.3f} s" for k, v in d.get("cprofile_warm", {}).items() if isinstance(v, dict)
            )
            extra = (
                f" The same model: {d.get('same_model')} (`datamodel-codegen {d.get('datamodel_codegen_command')}`)."
                f" With the model cache warm: {warm.get('modules_imported')} modules, {warm.get('import_total_ms')} ms "
                f"of imports; cProfile {warm_prof}; the cache saves {d.get('model_cache_saves_s')} s."
                f" Importing verifiers.v1 alone costs {d.get('verifiers_import_vs_generation')}× the whole generation, "
                f"OpenEnv's client {d.get('openenv_client_import_vs_generation')}×."
            )
        else:
            cold = d.get("importtime_cold", {})
            cold_prof = ", ".join(
                f"{k} {v['cumulative_s']:.3f} s ×{v['calls']}"
                for k, v in d.get("cprofile_cold", {}).items()
                if isinstance(v, dict)
            )
            extra = (
                f" Packages: {', '.join(d.get('packages', []))}."
                f" With no model cache: {cold.get('modules_imported')} modules, {cold.get('import_total_ms')} ms of "
                f"imports; cProfile {cold_prof}."
                f" Per extra package {d.get('per_package_s')} s, fixed cost {d.get('fixed_s')} s; "
                f"exit codes {d.get('exit_codes')}"
                + (f"; not up to date: {d['not_up_to_date'][:3]}" if d.get("not_up_to_date") else "")
                + "."
            )
        return (
            f"medians: {med}. Imports: {imp.get('modules_imported')} modules, {imp.get('import_total_ms')} ms "
            f"(by package, ms: {top}); "
            f"verifiers/openenv imported: {imp.get('imports_verifiers_or_openenv') or 'none'}. "
            f"cProfile (cumulative, imports inside included): {prof_text}.{extra}"
        )
    if r["id"] == "P3":
        return (
            f"{d.get('steps_each')} steps each, alternating; "
            f"p10/p50/p90 µs raw {d.get('raw_us_per_step_p10_p50_p90')}, "
            f"runtime {d.get('runtime_us_per_step_p10_p50_p90')}; ratio of means {d.get('ratio_of_means')}. "
            f"In place, µs over raw (p50): {d.get('in_place_us_over_raw_p50')}. Hot loop without I/O (µs): "
            f"{d.get('runtime_cpu_us_per_step_no_io')}; ratio that hot-loop CPU alone would give "
            f"{d.get('expected_ratio_from_cpu')}."
        )
    if r["id"] == "P6":
        return (
            "see the P6 pairs above; min / median / max per side: "
            + "; ".join(f"{k} {v}" for k, v in d.get("slopes", {}).items())
            + "."
        )
    if r["id"] == "R4":
        return "see the R4 runs above."
    if r["id"] == "R5":
        return "see the R5 runs above."
    if r["id"] == "R6":
        return (
            f"memory goal met: {_mark(d.get('memory_goal_met'))}; fds and sockets goal met: "
            f"{_mark(d.get('fds_goal_met'))}; trimmed RSS trend {d.get('trimmed_rss_slope_mib_per_1000_episodes')} MiB "
            f"per 1,000 episodes; {d.get('server_cpu_s_per_episode')} CPU-s per episode (server tree); "
            "see the R6 readings above."
        )
    if r["id"] == "P8":
        return (
            f"speed goal met: {_mark(d.get('speed_goal_met'))}; CPU goal met: {_mark(d.get('cpu_goal_met'))}; "
            "see the served runs above."
        )
    return "see the episode runs above."


def _shown(path: Path) -> str:
    """`path` as the page names it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(BENCH.parent))
    except ValueError:
        return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, same comparisons (see above)")
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="where results.json and results.md go")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (vf-eval outputs, generated packages)")
    parser.add_argument(
        "--render",
        type=Path,
        nargs="+",
        metavar="RESULTS_JSON",
        help="only rewrite the page from saved runs' results.json: one run's to its results.md; runs that together "
        "hold every benchmark (each once) to bench/RESULTS.md",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="measure the --only benchmarks (P2, P3, P5, P6, P8) side by side with commit REV, interleaved, "
        "with an A/A control (bench/baseline.py)",
    )
    parser.add_argument("--rounds", type=int, help="--baseline's rounds (default 5, 3 with --quick)")
    ns = parser.parse_args()
    if ns.render:
        sources = []
        for path in ns.render:
            try:
                sources.append((_shown(path), json.loads(path.read_text())))
            except (OSError, ValueError) as e:
                parser.error(f"cannot read {path}: {e}")
        head = git_state()["commit"]
        for _, saved in sources:
            if any("baseline" in r.get("details", {}) for r in saved["results"]):
                import baseline as side_by_side

                saved["results"] = [
                    side_by_side.rejudged(r) if "baseline" in r.get("details", {}) else r for r in saved["results"]
                ]
            git = saved["machine"].get("git")
            if isinstance(git, dict) and git["commit"] != head:
                saved["machine"]["rendered_at"] = head
        report = merge(sources) if len(sources) > 1 else sources[0][1]
        markdown = to_markdown(report)
        if len(sources) == 1:
            (ns.render[0].parent / "results.md").write_text(markdown)
        missing = _missing_benchmarks(report)
        if not missing:
            (BENCH / "RESULTS.md").write_text(markdown)  # every benchmark: the checked-in page
            log(f"wrote {BENCH / 'RESULTS.md'}")
        elif len(sources) > 1:
            parser.error(f"these runs leave out {', '.join(missing)}: bench/RESULTS.md needs every benchmark")
        print(markdown)
        return
    only = tuple(x.strip() for x in ns.only.split(",") if x.strip())
    unknown = set(only) - set(ALL)
    if unknown:
        parser.error(f"unknown benchmarks: {sorted(unknown)}")
    if ns.baseline is not None:
        import baseline as side_by_side

        unsupported = sorted(set(only) - set(side_by_side.SUPPORTED))
        if ns.only == ",".join(ALL) or unsupported:
            parser.error(f"--baseline takes --only with some of {','.join(side_by_side.SUPPORTED)}")
    report = run(only, ns.quick, ns.keep, ns.baseline, ns.rounds)
    report["machine"]["command"] = " ".join(["python bench/run.py", *sys.argv[1:]])
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "results.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    markdown = to_markdown(report)
    (ns.out / "results.md").write_text(markdown)
    print(markdown)
    log(f"wrote {ns.out / 'results.json'} and {ns.out / 'results.md'}")
    if set(only) == set(ALL) and ns.baseline is None:
        (BENCH / "RESULTS.md").write_text(markdown)
        log(f"wrote {BENCH / 'RESULTS.md'}")


if __name__ == "__main__":
    main()

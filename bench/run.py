"""Run the benchmarks P1..P6 and R4 and write bench/out/results.json and bench/out/results.md.

    python bench/run.py            # everything (P4 also at 64@16, P5 twice each, P5-single)
    python bench/run.py --quick    # P4 at 16@4 only, P5 once each, no P5-single
    python bench/run.py --only P1,P3

`make bench` (or `make bench QUICK=1`) runs this with the project venv first on PATH.
Everything is loopback-only and every step has a time limit. bench/RESULTS.md holds the
figures of the last full run, copied from bench/out/results.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, fmt_ratio, load_average, log, machine  # noqa: E402

ALL = ("P1", "P2", "P3", "P4", "P5", "P6", "P5-single", "R4")


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


def run(only: tuple[str, ...], quick: bool, keep: bool) -> dict[str, Any]:
    info = machine()
    workdir = Path(tempfile.mkdtemp(prefix="openenvgen-bench-"))
    log(f"work dir {workdir}; load average {info['load_average_start']}")
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    for name in ("P1", "P2", "P3"):
        if name in only:
            results += _guarded(name, lambda n=name: _run_one(n, quick, workdir))
    episodic = tuple(n for n in ("P4", "P5", "P6", "P5-single") if n in only)
    if episodic:
        import p4_episodes

        results += _guarded("P4/P5", lambda: p4_episodes.run(quick, workdir, episodic))
    if "R4" in only:
        import r4_fleet

        results += _guarded("R4", lambda: r4_fleet.run(quick, workdir))
    info["load_average_end"] = load_average()
    info["bench_minutes"] = round((time.monotonic() - started) / 60, 1)
    info["mode"] = "quick" if quick else "full"
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"machine": info, "results": results}


def _guarded(name: str, fn: Any) -> list[dict[str, Any]]:
    """A benchmark that breaks is reported as such; the others still run."""
    before = load_average()
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        log(f"{name} failed: {e}")
        return [{"id": name, "title": "(failed to run)", "target": "", "measured": f"{type(e).__name__}: {e}", "ratio": None,
                 "ratio_label": "", "meets_target": False, "details": {"traceback": traceback.format_exc()}}]
    for result in out:
        result.setdefault("load_average", {"before": before, "after": load_average()})
    return out


# --------------------------------------------------------------------------- markdown


def _mark(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**no**")


def to_markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "| Benchmark | Target | Measured | Ratio | Meets target |",
        "|---|---|---|---|---|",
    ]
    for r in report["results"]:
        ratio = r.get("ratio_text") or fmt_ratio(r.get("ratio"), 3 if r["id"] in ("P3", "P5", "P5-single") else 2)
        label = f" ({r['ratio_label']})" if r.get("ratio_label") else ""
        lines.append(f"| **{r['id']}** {r['title']} | {r['target']} | {r['measured']} | {ratio}{label} | {_mark(r.get('meets_target'))} |")
    out = [
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, Python {m['python']}, {m['uv']}, "
        f"{m['platform']}; {m['date']}; git {m['git']}; {m['mode']} run, {m['bench_minutes']} min. "
        f"Load average (1/5/15 min) {m['load_average_start']} at the start, {m['load_average_end']} at the end "
        "(other work was running on the machine: treat single figures as noisy).",
        "",
        *lines,
    ]
    memory_rows = []
    for r in report["results"]:
        details = r.get("details", {})
        for run in [*details.get("runs", []), *details.get("startup_runs", {}).values()]:
            pairs = [run] if "adapter" in run else [run.get("runtime"), run.get("builtin")]
            for x in pairs:
                if not x:
                    continue
                mem = x["memory"]
                kinds = ", ".join(f"{k} {v['processes']}× {v['rss_mib']:.0f}" for k, v in mem.get("at_peak_rss_by_kind", {}).items())
                memory_rows.append(
                    f"| {r['id']} | {x['adapter']} | {x.get('seat', 'null')} | {x['episodes']}@{x['concurrency']} | {_transport(x)} | {x['ok']}/{x['episodes']} | "
                    f"{x['successful']} | {x['wall_s']} | {x.get('episode_phase_s', '—')} | {x['successful_per_min']} | {x.get('cpu_s', '—')} | "
                    f"{mem['peak_rss_mib']:.0f} | {mem['peak_pss_mib']:.0f} | "
                    f"{mem['peak_processes']} | {kinds} | {_errors(x)} | {x['load_average_before'][0]}→{x['load_average_after'][0]} |"
                )
    if memory_rows:
        out += [
            "",
            "Episode runs (`vf-eval`; memory is the whole process tree: vf-eval, env servers, harness programs; RSS summed "
            "over processes counts shared pages once per process, PSS splits them):",
            "",
            "| | adapter | seat | episodes@concurrency | transport | ok | successful | wall s | episode phase s | successful/min (wall) | CPU s (tree) | peak RSS MiB | peak PSS MiB | peak processes | RSS MiB at peak, by kind | errors | load 1-min before→after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *memory_rows,
        ]
    out += ["", "Details per benchmark (full data in results.json):", ""]
    for r in report["results"]:
        out.append(f"- **{r['id']}**: {_detail(r)}")
    return "\n".join(out) + "\n"


def _transport(x: dict[str, Any]) -> str:
    t = x["transport"]
    if "base_url" in t:
        return "one shared base_url server"
    return f"UV provider" + (f", max_servers {t['max_servers']}" if x["adapter"] == "runtime" else ", a server per episode")


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
    if r["id"] in ("P1", "P2"):
        med = ", ".join(f"`{k}` {v:.3f} s" for k, v in d.get("median_s", {}).items())
        imp = d.get("importtime", {})
        top = ", ".join(f"{k} {v:.0f}" for k, v in list(imp.get("import_ms_by_package", {}).items())[:6])
        prof = d.get("cprofile", {})
        prof_text = ", ".join(f"{k} {v['cumulative_s']:.3f} s ×{v['calls']}" for k, v in prof.items() if isinstance(v, dict))
        extra = ""
        if r["id"] == "P1":
            again = d.get("importtime_regenerate_in_place", {})
            cold = d.get("importtime_cold", {})
            cold_top = ", ".join(f"{k} {v:.0f}" for k, v in list(cold.get("import_ms_by_package", {}).items())[:4])
            cold_prof = ", ".join(f"{k} {v['cumulative_s']:.3f} s" for k, v in d.get("cprofile_cold", {}).items() if isinstance(v, dict))
            extra = (f" With no model cache: {cold.get('modules_imported')} modules, {cold.get('import_total_ms')} ms of imports "
                     f"({cold_top}); cProfile {cold_prof}."
                     f" Regenerating in place (no scaffold): {again.get('modules_imported')} modules, {again.get('import_total_ms')} ms of imports."
                     f" Importing verifiers.v1 alone costs {d.get('verifiers_import_vs_generation')}× the whole generation, "
                     f"OpenEnv's client {d.get('openenv_client_import_vs_generation')}×.")
        else:
            cold = d.get("importtime_cold", {})
            cold_prof = ", ".join(f"{k} {v['cumulative_s']:.3f} s ×{v['calls']}" for k, v in d.get("cprofile_cold", {}).items() if isinstance(v, dict))
            extra = (f" With no model cache: {cold.get('modules_imported')} modules, {cold.get('import_total_ms')} ms of imports; cProfile {cold_prof}."
                     f" Per extra package {d.get('per_package_s')} s, fixed cost {d.get('fixed_s')} s; exit codes {d.get('exit_codes')}"
                     + (f"; not up to date: {d['not_up_to_date'][:3]}" if d.get("not_up_to_date") else "") + ".")
        return (f"medians: {med}. Imports: {imp.get('modules_imported')} modules, {imp.get('import_total_ms')} ms "
                f"(by package, ms: {top}); verifiers/openenv imported: {imp.get('imports_verifiers_or_openenv') or 'none'}. "
                f"cProfile (cumulative, imports inside included): {prof_text}.{extra}")
    if r["id"] == "P3":
        return (f"{d.get('steps_each')} steps each, alternating; p10/p50/p90 µs raw {d.get('raw_us_per_step_p10_p50_p90')}, "
                f"runtime {d.get('runtime_us_per_step_p10_p50_p90')}; ratio of means {d.get('ratio_of_means')}. "
                f"In place, µs over raw (p50): {d.get('in_place_us_over_raw_p50')}. Hot loop without I/O (µs): "
                f"{d.get('runtime_cpu_us_per_step_no_io')}; ratio that hot-loop CPU alone would give {d.get('expected_ratio_from_cpu')}.")
    if r["id"] == "R4" and "fleet_runs" in d:
        return "; ".join(
            f"retries {x['retries']}: {x['ok']}/{x['episodes']} ok, failed {x['failed_stop_conditions'] or 'none'}, "
            f"{x['in_flight_on_killed_server']} sessions in flight on the killed server (killed after "
            f"{x['model_turns_at_kill']} model turns, back after {x['killed_server_down_s']} s), {x['wall_s']} s, "
            f"{x['down_warnings']} down / {x['back_notices']} back log lines, {x['episode_retries']} episode retries"
            for x in d["fleet_runs"]
        ) + "."
    if "traceback" in d:
        return "failed: " + d["traceback"].strip().splitlines()[-1]
    return "see the episode runs above."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short run: P4 16@4 only, P5 once each, no P5-single")
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="where results.json and results.md go")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (vf-eval outputs, generated packages)")
    parser.add_argument("--render", type=Path, metavar="RESULTS_JSON", help="only rewrite results.md from a results.json")
    ns = parser.parse_args()
    if ns.render:
        markdown = to_markdown(json.loads(ns.render.read_text()))
        (ns.render.parent / "results.md").write_text(markdown)
        print(markdown)
        return
    only = tuple(x.strip() for x in ns.only.split(",") if x.strip())
    unknown = set(only) - set(ALL)
    if unknown:
        parser.error(f"unknown benchmarks: {sorted(unknown)}")
    report = run(only, ns.quick, ns.keep)
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "results.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    markdown = to_markdown(report)
    (ns.out / "results.md").write_text(markdown)
    print(markdown)
    log(f"wrote {ns.out / 'results.json'} and {ns.out / 'results.md'}")


if __name__ == "__main__":
    main()

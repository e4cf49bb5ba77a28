"""P4: episodes on a UV-launched env (OpenEnv's UV provider, from the fixture project):
the runtime, which keeps one pool of servers for the run (`max_servers`), against
verifiers' built-in OpenEnv taskset, which launches a server per episode; real `vf-eval`
runs of 16 episodes at 4 in flight and 64 at 16 (quick: 16@4), the same scripted model.
Target: every episode ok and >= 10x the built-in's successful episodes per minute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import ENV_ID, cli, guess_setup, row, run_eval

from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT

TARGET_SPEEDUP = 10.0


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    with guess_setup(workdir) as (package_dir, model_url, _):
        sizes = [(16, 4)] if quick else [(16, 4), (64, 16)]
        runs: list[dict[str, Any]] = []
        for episodes, concurrency in sizes:
            # The built-in serialises its per-episode launches (see RESULTS.md): 64 of them
            # would take far longer than the rest of the suite, so its big run is cut off.
            timeouts = {"runtime": 600 if episodes <= 16 else 900, "builtin": 600}
            max_servers = min(concurrency, 8)
            provider_kwargs = {"project_path": str(UV_FIXTURE_PROJECT), "app": UV_FIXTURE_APP}
            transport = {"env": ENV_ID, "provider_kwargs": provider_kwargs, "max_servers": max_servers}
            pair = {}
            # The built-in first on the small size (its failures are fast), the runtime first on the big one.
            order = ("builtin", "runtime") if episodes <= 16 else ("runtime", "builtin")
            for adapter in order:
                out = workdir / f"p4-{episodes}x{concurrency}-{adapter}"
                pair[adapter] = run_eval(
                    adapter, transport, episodes, concurrency, model_url, package_dir, out, timeouts[adapter]
                )
            ours, builtin = pair["runtime"], pair["builtin"]
            runs.append({"episodes": episodes, "concurrency": concurrency, "max_servers": max_servers, **pair})
            b_rate, o_wall = builtin["successful_per_min"], ours["wall_s"]
            runs[-1]["successful_per_min_ratio"] = round(ours["successful_per_min"] / b_rate, 2) if b_rate else None
            runs[-1]["wall_ratio_builtin_over_runtime"] = round(builtin["wall_s"] / o_wall, 2) if o_wall else None
        head = runs[0]
        ours, builtin = head["runtime"], head["builtin"]
        all_ok = all(r["runtime"]["ok"] == r["episodes"] for r in runs)
        if builtin["successful_per_min"]:
            speedup: float | None = head["successful_per_min_ratio"]
            meets = all_ok and speedup is not None and speedup >= TARGET_SPEEDUP
        else:  # the built-in finished nothing: any successful episode is an unbounded speed-up
            speedup = None
            meets = all_ok and ours["successful"] > 0
        measured = "; ".join(
            f"{r['episodes']}@{r['concurrency']}: runtime {r['runtime']['ok']}/{r['episodes']} ok, "
            f"{r['runtime']['successful_per_min']}/min, {r['runtime']['wall_s']} s; "
            f"built-in {r['builtin']['ok']}/{r['episodes']} ok, {r['builtin']['successful_per_min']}/min, "
            f"{r['builtin']['wall_s']} s" + (" (stopped at the time limit)" if r["builtin"]["timed_out"] else "")
            for r in runs
        )
        title = "episodes on a UV-launched env: runtime (one pool) vs built-in (server per episode)"
        target = f"every episode ok and ≥ {TARGET_SPEEDUP:g}x the built-in's successful episodes/min"
        label = "runtime / built-in successful episodes per minute (16@4)"
        headline = row("P4", title, target, measured, speedup, meets, label, runs=runs)
        return [headline | {"ratio_text": None if speedup is not None else "∞ (built-in: 0 successful)"}]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

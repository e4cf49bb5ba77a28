"""P8: episodes served the way RL training runs them: an env server process running
verifiers' own `serve_env` (openenvgen_testsupport.served; with 2 workers a broker over a
static pool of spawned workers) and this process as prime-rl's orchestrator (the taskset
loaded here, each task shipped as wire data, `concurrency` episodes in flight through one
`EnvClient`). Ours (the generated package on its in-process seat) against the built-in
OpenEnv taskset on `null`, both on one shared `base_url` server, 64 tasks x 4 rollouts at 32
in flight (quick: 8 x 4), for 1 and 2 workers, interleaved. Rates are successful episodes
per minute from the first sent to the last back; CPU is the whole env-server process tree
(from /proc, each live process's own time plus its reaped children's) over the measured
episodes, start-up (spawn to a warm-up episode per worker) apart. Target: ours >= 10x the
built-in's rate at each worker count, and <= 0.05 CPU-s per episode.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from common import cli, env_server, guess_setup, load_average, log, play, row, served_config, tree_cpu_s

from openenvgen_testsupport.served import client_tasks

TARGET_SPEEDUP = 10.0
TARGET_CPU_PER_EPISODE = 0.05
ROLLOUTS_PER_TASK = 4
CONCURRENCY = 32


def served_run(
    adapter: str, config: Any, workers: int, episodes_data: list[dict], model_url: str, out_dir: Path
) -> dict:
    """One env server: spawn, warm up (one episode per worker), then the measured episodes."""
    load_before = load_average()
    spawned = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    with env_server(config, workers, out_dir / "server.log") as server:
        warm = asyncio.run(play(server.address, episodes_data[:workers], workers, model_url))
        startup_wall = time.perf_counter() - spawned
        startup_cpu = tree_cpu_s(server.pid)
        played = asyncio.run(play(server.address, episodes_data, CONCURRENCY, model_url))
        run_cpu = tree_cpu_s(server.pid) - startup_cpu
        alive = server.process.is_alive()
    n = len(episodes_data)
    result = {
        "adapter": adapter,
        "seat": "in-process" if adapter == "runtime" else "null",
        "workers": workers,
        "episodes": n,
        "concurrency": CONCURRENCY,
        "ok": played["ok"],
        "successful": played["successful"],
        "peak_in_flight": played["peak_in_flight"],
        "errors": played["errors"],
        "warm_up_ok": f"{warm['ok']}/{workers}",
        "episode_phase_s": round(played["wall_s"], 2),
        "successful_per_min": round(played["successful"] / played["wall_s"] * 60, 2) if played["wall_s"] else None,
        "startup_wall_s": round(startup_wall, 1),
        "startup_cpu_s": round(startup_cpu, 2),
        "cpu_s": round(run_cpu, 2),
        "cpu_s_per_episode": round(run_cpu / n, 4),
        "server_alive_at_end": alive,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "out_dir": str(out_dir),
    }
    if played["ok"] < n:
        result["server_log_tail"] = (out_dir / "server.log").read_text(errors="replace")[-1500:]
    log(
        f"P8 {adapter:8s} {workers} worker(s) {n}@{CONCURRENCY}: ok {played['ok']}/{n}, "
        f"successful {played['successful']}, {played['wall_s']:.1f}s ({result['successful_per_min']}/min), "
        f"CPU {run_cpu:.2f}s ({result['cpu_s_per_episode']}/episode), "
        f"start-up {startup_wall:.1f}s / {startup_cpu:.1f} CPU-s, peak in flight {played['peak_in_flight']}"
    )
    return result


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    tasks = 8 if quick else 64
    runs: list[dict[str, Any]] = []
    with guess_setup(workdir, shared=True, sessions=512) as (package_dir, model_url, url):
        sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
        configs = {a: served_config(a, url, tasks) for a in ("runtime", "builtin")}
        data = {a: [d for d in client_tasks(c) for _ in range(ROLLOUTS_PER_TASK)] for a, c in configs.items()}
        for workers in (1, 2):
            # Interleaved: ours, the built-in, then ours again on the other order next time.
            order = ("runtime", "builtin") if workers == 1 else ("builtin", "runtime")
            for a in order:
                runs.append(served_run(a, configs[a], workers, data[a], model_url, workdir / f"p8-{a}-{workers}w"))

    by = {(r["adapter"], r["workers"]): r for r in runs}
    ratios, cpu_ok = {}, True
    for workers in (1, 2):
        ours, builtin = by["runtime", workers], by["builtin", workers]
        rate = builtin["successful_per_min"]
        ratios[workers] = round(ours["successful_per_min"] / rate, 2) if rate else None
        cpu_ok = cpu_ok and ours["cpu_s_per_episode"] <= TARGET_CPU_PER_EPISODE
    episodes = tasks * ROLLOUTS_PER_TASK
    all_ok = all(r["ok"] == r["episodes"] for r in runs if r["adapter"] == "runtime")
    speed_ok = all(r is not None and r >= TARGET_SPEEDUP for r in ratios.values())
    said = {
        k: f"{r['ok']}/{episodes} ok, {r['successful_per_min']}/min, {r['cpu_s_per_episode']} CPU-s/episode "
        f"(start-up {r['startup_cpu_s']} CPU-s)"
        for k, r in by.items()
    }
    measured = "; ".join(f"{w} worker(s): ours {said['runtime', w]}; built-in {said['builtin', w]}" for w in (1, 2))
    return [
        row(
            "P8",
            f"served as training runs it (`serve_env` + `EnvClient`), {episodes} episodes "
            f"({tasks} tasks × {ROLLOUTS_PER_TASK}) at {CONCURRENCY} in flight: "
            "ours on its default seat vs the built-in on `null`",
            f"≥ {TARGET_SPEEDUP:g}x the built-in's successful episodes/min (1 and 2 workers); "
            f"≤ {TARGET_CPU_PER_EPISODE} CPU-s per episode, whole server process tree",
            measured,
            ratios[1],
            all_ok and speed_ok and cpu_ok,
            label="ours / built-in successful episodes per minute, served, 1 / 2 workers (episode phase)",
            served_runs=runs,
            speedup_by_workers=ratios,
            speed_goal_met=speed_ok,
            cpu_goal_met=cpu_ok,
        )
        | {"ratio_text": " / ".join("n/a" if ratios[w] is None else f"{ratios[w]:.2f}" for w in (1, 2))}
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

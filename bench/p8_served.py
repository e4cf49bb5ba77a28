"""P8: episodes served the way RL training runs them, through verifiers' env server.

prime-rl's orchestrator loads the taskset client-side (`vf.load_taskset(config.taskset)`,
`list(taskset)`) and ships each task as `task.data.model_dump(mode="json")` to an env
server started with `serve_env(config_data=env_config_data(config))`; the server's
workers rebuild the config (`resolve_env_config`), never call `load()`, and run the
seat, the interception and `Env.run`. P8 does exactly that with verifiers' own
`serve_env` (installed 0.4.0) and `EnvClient`:

- the env server runs in its own process (`python bench/p8_served.py --serve ...`): with 1
  worker `serve_env` is a lone `EnvServer` in that process; with 2, a broker over a static
  pool of 2 spawned worker processes (`elastic=False`, as `--serve.pool.type static`);
- this process is the orchestrator: it loads the taskset, keeps `concurrency` episodes in
  flight with one `EnvClient`, and counts ok and successful episodes (ok, and
  `openenv_reward` 1.0) from the returned episodes.

Side by side in one run, on one shared OpenEnv server (the guess-the-number fixture env,
concurrent-session variant `bench/envs/guess_concurrent.py`, launched once through
OpenEnv's UV provider) and the scripted model (`Script(['{"guess": 3}', "7"])`):

- ours: the generated package on its default seat (its bundled in-process harness),
  `base_url` set to the shared server;
- the built-in: verifiers' OpenEnv taskset (`verifiers/v1/tasksets/openenv/`) with the
  same `base_url`, on its `null` seat (its default `bash` seat needs a sandbox);
- ours through `vf-eval` in one process (what every other benchmark runs), same tasks,
  rollouts and concurrency.

Each served run: 64 tasks × 4 rollouts = 256 episodes at 32 in flight (`--quick`: 8 × 4 at
32), for 1 and 2 workers. Rates are successful episodes per minute over the episode phase
(first episode sent to last returned); the server's start-up is apart. CPU is the whole
env-server process tree (the `serve_env` process, its workers and everything they start:
harness programs, `uv`), read from /proc: utime+stime of each live process plus the
children it has reaped. Start-up = the tree's CPU from spawn until the server answers and
one warm-up episode per worker has run (each worker loads the env on its first episode);
per episode = the tree's CPU over the measured episodes / their number. The OpenEnv env
server is shared by both sides and outside both trees.

Memory: ours on one worker with 128 episodes in flight at once (the model answers each
turn 2 s late, as a real model takes time, so all 128 overlap): (peak PSS of the server
tree − its PSS when idle after warm-up) / 128, RSS likewise.

Goals: ours ≥ 10× the built-in's successful episodes per minute (each worker count), and
≤ 0.05 CPU-s per episode for the whole server process tree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    CONCURRENT_APP,
    DelayedModel,
    TreeSampler,
    eval_env,
    load_average,
    log,
    marked_pids,
    tree_cpu_s,
)

from openenvgen_servers.processes import stop_process_group

TARGET_SPEEDUP = 10.0
TARGET_CPU_PER_EPISODE = 0.05
ROLLOUTS_PER_TASK = 4
MEMORY_IN_FLIGHT = 128
MEMORY_MODEL_DELAY_S = 2.0
API_KEY_VAR = "SCRIPTED_API_KEY"


def env_config(adapter: str, url: str, tasks: int) -> dict[str, Any]:
    """The `[env]` table each side is served with."""
    from p4_episodes import PACKAGE_ID, PLAYERS

    resets = [{} for _ in range(tasks)]
    if adapter == "runtime":
        # As a user writes it: the package's own default `env` stays, `base_url` beside it.
        return {"taskset": {"id": PACKAGE_ID, "base_url": url, "resets": resets}, "player": PLAYERS["in-process"]}
    return {"taskset": {"id": "openenv", "base_url": url, "resets": resets}, "player": PLAYERS["null"]}


# --------------------------------------------------------------------------- the server side


def _log_setup() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(processName)s %(name)s %(levelname)s %(message)s")


def serve_main(config_file: str, workers: int, address: str) -> None:
    """The env-server process: `serve_env` exactly as a trainer's env server calls it."""
    from verifiers.v1.serve import serve_env

    serve_env(
        max_workers=workers,
        elastic=False,
        address=address,
        log_setup=_log_setup,
        config_data=json.loads(Path(config_file).read_text()),
    )


# --------------------------------------------------------------------------- the orchestrator side


@contextmanager
def env_server(
    config_data: dict[str, Any],
    workers: int,
    out_dir: Path,
    package_dir: Path,
    marker: str,
    *,
    script: Path | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The env-server process (`script --serve`, this module's by default, with `extra_args`),
    stopped with everything it started on exit."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config_file = out_dir / "env_config.json"
    config_file.write_text(json.dumps(config_data))
    address = f"ipc://{out_dir}/env.sock"
    env = eval_env(package_dir, **{marker: "1", API_KEY_VAR: "scripted"})
    with open(out_dir / "server.log", "wb") as logfile:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(script or Path(__file__).resolve()),
                "--serve",
                str(config_file),
                "--workers",
                str(workers),
                "--address",
                address,
                *extra_args,
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield proc, address
        finally:
            if proc.poll() is None:
                stop_process_group(proc, grace=60)
            for pid in marked_pids(marker):  # anything the server left behind
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _outcome(episode: Any) -> tuple[bool, bool, str | None]:
    ok = bool(episode.ok)
    reward = None
    for trace in episode.traces:
        r = (trace.rewards or {}).get("openenv_reward")
        if r is not None:
            reward = r.score
    error = None
    if not ok:
        last = episode.last_error
        error = (
            (getattr(last, "type", None) or "error") + ": " + str(getattr(last, "message", last))[:160]
            if last
            else "not ok"
        )
    return ok, ok and reward == 1.0, error


async def _play(address: str, task_data: list[dict[str, Any]], concurrency: int, model_url: str) -> dict[str, Any]:
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.serve import EnvClient
    from verifiers.v1.types import SamplingConfig

    client_config = EvalClientConfig(base_url=f"{model_url}/v1", api_key_var=API_KEY_VAR)
    client = EnvClient(address)
    gate = asyncio.Semaphore(concurrency)
    counts = {"ok": 0, "successful": 0, "in_flight": 0, "peak_in_flight": 0}
    errors: dict[str, int] = {}

    async def one(data: dict[str, Any]) -> None:
        async with gate:
            counts["in_flight"] += 1
            counts["peak_in_flight"] = max(counts["peak_in_flight"], counts["in_flight"])
            try:
                episode = await client.run(
                    client=client_config, model="scripted-model", sampling=SamplingConfig(), task_data=data
                )
                ok, success, error = _outcome(episode)
            except Exception as e:  # a failed request is a failed episode
                ok, success, error = False, False, f"{type(e).__name__}: {str(e)[:160]}"
            finally:
                counts["in_flight"] -= 1
            counts["ok"] += ok
            counts["successful"] += success
            if error:
                errors[error] = errors.get(error, 0) + 1

    try:
        await client.wait_for_server_startup(timeout=300, interval=0.5)
        started = time.perf_counter()
        await asyncio.gather(*(one(d) for d in task_data))
        wall = time.perf_counter() - started
    finally:
        await client.close()
    return {**counts, "wall_s": wall, "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5])}


def client_tasks(env: dict[str, Any], rollouts: int) -> list[dict[str, Any]]:
    """What prime-rl's orchestrator sends: the taskset loaded client-side, each task's data
    dumped as JSON, `rollouts` times."""
    import verifiers.v1 as vf
    from verifiers.v1.utils.loaders import resolve_env_config

    config = resolve_env_config(env)
    taskset = vf.load_taskset(config.taskset)
    return [task.data.model_dump(mode="json") for task in list(taskset) for _ in range(rollouts)]


def served_run(
    adapter: str,
    env: dict[str, Any],
    *,
    workers: int,
    episodes_data: list[dict[str, Any]],
    concurrency: int,
    model_url: str,
    package_dir: Path,
    out_dir: Path,
) -> dict[str, Any]:
    """One env server: spawn, warm up (one episode per worker), then the measured episodes."""
    from verifiers.v1.serve import env_config_data
    from verifiers.v1.utils.loaders import resolve_env_config

    config_data = env_config_data(resolve_env_config(env))
    marker = f"OPENENVGEN_BENCH_{uuid.uuid4().hex}"
    load_before = load_average()
    spawned = time.perf_counter()
    with env_server(config_data, workers, out_dir, package_dir, marker) as (proc, address):
        warm = asyncio.run(_play(address, episodes_data[:workers], workers, model_url))
        startup_wall = time.perf_counter() - spawned
        startup_cpu = tree_cpu_s(proc.pid, marker)
        sampler = TreeSampler(proc.pid, marker, interval=0.25)
        sampler.sample()
        idle = sampler.result()
        sampler = TreeSampler(proc.pid, marker, interval=0.25)
        with sampler:
            played = asyncio.run(_play(address, episodes_data, concurrency, model_url))
        run_cpu = tree_cpu_s(proc.pid, marker) - startup_cpu
        alive = proc.poll() is None
    n = len(episodes_data)
    result = {
        "adapter": adapter,
        "seat": "in-process" if adapter == "runtime" else "null",
        "workers": workers,
        "episodes": n,
        "concurrency": concurrency,
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
        "memory": sampler.result(),
        "memory_idle": idle,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "out_dir": str(out_dir),
    }
    if played["ok"] < n:
        result["server_log_tail"] = (out_dir / "server.log").read_text(errors="replace")[-1500:]
    log(
        f"P8 {adapter:8s} {workers} worker(s) {n}@{concurrency}: ok {played['ok']}/{n}, "
        f"successful {played['successful']}, {played['wall_s']:.1f}s ({result['successful_per_min']}/min), "
        f"CPU {run_cpu:.2f}s ({result['cpu_s_per_episode']}/episode), "
        f"start-up {startup_wall:.1f}s / {startup_cpu:.1f} CPU-s, peak in flight {played['peak_in_flight']}"
    )
    return result


def memory_run(
    env: dict[str, Any], *, episodes_data: list[dict[str, Any]], package_dir: Path, out_dir: Path
) -> dict[str, Any]:
    """Ours on one worker, MEMORY_IN_FLIGHT episodes in flight at once (slow model)."""
    from p4_episodes import SCRIPT

    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    with serve_app(DelayedModel(ScriptedChatModel(Script(SCRIPT)), MEMORY_MODEL_DELAY_S)) as slow_url:
        run = served_run(
            "runtime",
            env,
            workers=1,
            episodes_data=episodes_data,
            concurrency=MEMORY_IN_FLIGHT,
            model_url=str(slow_url),
            package_dir=package_dir,
            out_dir=out_dir,
        )
    peak, idle = run["memory"], run["memory_idle"]
    run["pss_mib_per_in_flight_episode"] = round((peak["peak_pss_mib"] - idle["peak_pss_mib"]) / MEMORY_IN_FLIGHT, 2)
    run["rss_mib_per_in_flight_episode"] = round((peak["peak_rss_mib"] - idle["peak_rss_mib"]) / MEMORY_IN_FLIGHT, 2)
    return run


def in_process_run(
    url: str, *, tasks: int, rollouts: int, concurrency: int, model_url: str, package_dir: Path, out_dir: Path
) -> dict[str, Any]:
    """Ours through `vf-eval` in one process: same tasks, rollouts and concurrency."""
    from p4_episodes import run_eval

    return run_eval(
        "runtime",
        {"base_url": url, "resets": [{} for _ in range(tasks)]},
        episodes=tasks * rollouts,
        rollouts_per_task=rollouts,
        concurrency=concurrency,
        model_url=model_url,
        package_dir=package_dir,
        out_dir=out_dir,
        timeout=1200,
    )


def run(quick: bool, workdir: Path, package_dir: Path | None = None) -> list[dict[str, Any]]:
    from p4_episodes import generate_package, scripted_model, uv_server

    tasks = 8 if quick else 64
    concurrency = 32
    package_dir = package_dir or generate_package(workdir)
    sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
    runs: list[dict[str, Any]] = []
    memory: dict[str, Any] = {}
    env_vars = {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": "512"}
    with uv_server(CONCURRENT_APP, env_vars=env_vars) as url, scripted_model() as model_url:
        data = {a: client_tasks(env_config(a, url, tasks), ROLLOUTS_PER_TASK) for a in ("runtime", "builtin")}
        for workers in (1, 2):
            # Interleaved: ours, the built-in, then ours again on the other order next time.
            order = ("runtime", "builtin") if workers == 1 else ("builtin", "runtime")
            for adapter in order:
                runs.append(
                    served_run(
                        adapter,
                        env_config(adapter, url, tasks),
                        workers=workers,
                        episodes_data=data[adapter],
                        concurrency=concurrency,
                        model_url=model_url,
                        package_dir=package_dir,
                        out_dir=workdir / f"p8-{adapter}-{workers}w",
                    )
                )
        vf_eval = in_process_run(
            url,
            tasks=tasks,
            rollouts=ROLLOUTS_PER_TASK,
            concurrency=concurrency,
            model_url=model_url,
            package_dir=package_dir,
            out_dir=workdir / "p8-vf-eval",
        )
        memory_env = env_config("runtime", url, MEMORY_IN_FLIGHT)
        memory = memory_run(
            memory_env,
            episodes_data=client_tasks(memory_env, 1),
            package_dir=package_dir,
            out_dir=workdir / "p8-memory",
        )

    def pick(adapter: str, workers: int) -> dict[str, Any]:
        return next(r for r in runs if r["adapter"] == adapter and r["workers"] == workers)

    ratios, cpu_ok = {}, True
    for workers in (1, 2):
        ours, builtin = pick("runtime", workers), pick("builtin", workers)
        ratios[workers] = (
            round(ours["successful_per_min"] / builtin["successful_per_min"], 2)
            if builtin["successful_per_min"]
            else None
        )
        cpu_ok = cpu_ok and ours["cpu_s_per_episode"] <= TARGET_CPU_PER_EPISODE
    vs_vf_eval = {
        w: round(pick("runtime", w)["successful_per_min"] / vf_eval["successful_per_min_episode_phase"], 2)
        if vf_eval.get("successful_per_min_episode_phase")
        else None
        for w in (1, 2)
    }
    episodes = tasks * ROLLOUTS_PER_TASK
    all_ok = all(r["ok"] == r["episodes"] for r in runs if r["adapter"] == "runtime")
    speed_ok = all(r is not None and r >= TARGET_SPEEDUP for r in ratios.values())
    measured = "; ".join(
        f"{w} worker(s): ours {pick('runtime', w)['ok']}/{episodes} ok, "
        f"{pick('runtime', w)['successful_per_min']}/min, {pick('runtime', w)['cpu_s_per_episode']} CPU-s/episode "
        f"(start-up {pick('runtime', w)['startup_cpu_s']} CPU-s); "
        f"built-in {pick('builtin', w)['ok']}/{episodes} ok, {pick('builtin', w)['successful_per_min']}/min, "
        f"{pick('builtin', w)['cpu_s_per_episode']} CPU-s/episode "
        f"(start-up {pick('builtin', w)['startup_cpu_s']} CPU-s)"
        for w in (1, 2)
    ) + (
        f"; ours in one `vf-eval` process: {vf_eval['ok']}/{episodes} ok, "
        f"{vf_eval['successful_per_min_episode_phase']}/min over its episode phase; "
        f"memory at {MEMORY_IN_FLIGHT} in flight on one worker: {memory['pss_mib_per_in_flight_episode']} MiB PSS "
        f"({memory['rss_mib_per_in_flight_episode']} MiB RSS) per in-flight episode "
        f"(peak in flight {memory['peak_in_flight']})"
    )
    return [
        {
            "id": "P8",
            "title": f"served as training runs it (`serve_env` + `EnvClient`), {episodes} episodes "
            f"({tasks} tasks × {ROLLOUTS_PER_TASK}) at {concurrency} in flight: "
            "ours on its default seat vs the built-in on `null`",
            "target": f"≥ {TARGET_SPEEDUP:g}x the built-in's successful episodes/min (1 and 2 workers); "
            f"≤ {TARGET_CPU_PER_EPISODE} CPU-s per episode, whole server process tree",
            "measured": measured,
            "ratio": ratios[1],
            "ratio_text": " / ".join("n/a" if ratios[w] is None else f"{ratios[w]:.2f}" for w in (1, 2)),
            "ratio_label": "ours / built-in successful episodes per minute, served, 1 / 2 workers (episode phase)",
            "meets_target": all_ok and speed_ok and cpu_ok,
            "details": {
                "served_runs": runs,
                "vf_eval_run": vf_eval,
                "memory_run": memory,
                "speedup_by_workers": ratios,
                "served_over_vf_eval_by_workers": vs_vf_eval,
                "speed_goal_met": speed_ok,
                "cpu_goal_met": cpu_ok,
            },
        }
    ]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--serve", metavar="CONFIG_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        serve_main(ns.serve, ns.workers, ns.address)
        return
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-p8-"))), indent=2, default=str))


if __name__ == "__main__":
    main()

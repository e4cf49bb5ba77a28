"""P10: 1,024 episodes in flight on one served worker under a stock open-file limit.

P8's set-up (bench/served_runs.py): verifiers' `serve_env` with one worker in its own
process, this process as the orchestrator with one `EnvClient`, the generated guess package
on its default seat against one shared OpenEnv server (the concurrent-session fixture env,
launched once through OpenEnv's UV provider), and the scripted model answering each turn
2 s late (`DelayedModel`), so the episodes in flight overlap as in training.

The worker process is started with its soft open-file limit lowered (`ulimit -Sn`, the hard
limit left as it is): 1,024, what most Linux installs give a user, and 256. The runtime
raises its soft limit to the hard one when the worker builds the env; without that, at
1,024 a third of the episodes failed (`Too many open files`, model `Connection error`s).
The OpenEnv server and the model are outside the worker and keep this process's limit.

Side by side in one run, on one worker each (a fresh worker per run):

- 32 episodes in flight, soft limit 1,024 (the reference);
- 1,024 in flight, soft limit 1,024;
- 1,024 in flight, soft limit 256.

Per run: episodes ok; the worker's peak memory (PSS of its process tree: the worker and
what it starts); its peak open files (/proc/PID/fd, sampled); and the latency each step adds
beyond the model's own delay: per episode, (its wall time from `EnvClient.run` sent to
returned − model turns × delay) / model turns (the turns counted at the model: the scripted
episodes all take as many), at p50 and p99 over the run's episodes.

Goals: all episodes ok in each run, worker memory ≤ 1 GiB at 1,024 in flight, and the added
latency per step at 1,024 in flight reported against 32 (p50 and p99 ratios).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, CONCURRENT_APP, DelayedModel, TreeSampler, load_average, log, tree_pids
from served_runs import API_KEY_VAR, _outcome, client_tasks, env_config, env_server

MODEL_DELAY_S = 2.0
WIDE = 1024
NARROW = 32
TARGET_MEMORY_MIB = 1024
RUNS = ((NARROW, 1024), (WIDE, 1024), (WIDE, 256))
"""(episodes in flight, the worker's soft open-file limit), in the order run."""


class CountedModel:
    """An ASGI wrapper counting the chat completions the model is asked for."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and str(scope.get("path", "")).endswith("/chat/completions"):
            self.requests += 1
        await self.app(scope, receive, send)


@contextmanager
def soft_limit(soft: int) -> Iterator[None]:
    """This process's soft open-file limit set to `soft` while a child is spawned (the child
    inherits it); restored after."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


class FdSampler:
    """Peak open files of a process tree (entries of /proc/PID/fd), sampled in a thread."""

    def __init__(self, root: int, marker: str, interval: float = 0.25) -> None:
        self.root, self.marker, self.interval = root, marker, interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fd-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in tree_pids(self.root, self.marker):
                try:
                    total += len(os.listdir(f"/proc/{pid}/fd"))
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> FdSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _soft_limit_of(pid: int) -> int | None:
    """The soft open-file limit a live process runs with (/proc/PID/limits)."""
    try:
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
    except (OSError, ValueError, IndexError):
        pass
    return None


async def play_timed(
    address: str, task_data: list[dict[str, Any]], model_url: str, model: CountedModel
) -> dict[str, Any]:
    """Every task in flight at once through one `EnvClient`; each episode's wall time."""
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.serve import EnvClient
    from verifiers.v1.types import SamplingConfig

    client_config = EvalClientConfig(base_url=f"{model_url}/v1", api_key_var=API_KEY_VAR)
    client = EnvClient(address)
    walls: list[float] = []
    errors: dict[str, int] = {}
    ok = 0

    async def one(data: dict[str, Any]) -> None:
        nonlocal ok
        sent = time.perf_counter()
        try:
            episode = await client.run(
                client=client_config, model="scripted-model", sampling=SamplingConfig(), task_data=data
            )
            good, _, error = _outcome(episode)
        except Exception as e:  # a failed request is a failed episode
            good, error = False, f"{type(e).__name__}: {str(e)[:160]}"
        walls.append(time.perf_counter() - sent)
        ok += good
        if error:
            errors[error] = errors.get(error, 0) + 1

    try:
        await client.wait_for_server_startup(timeout=300, interval=0.5)
        await one(task_data[0])  # the worker loads the env on its first episode
        walls.clear()
        ok = 0
        errors.clear()
        asked = model.requests
        started = time.perf_counter()
        await asyncio.gather(*(one(d) for d in task_data))
        wall = time.perf_counter() - started
        turns = model.requests - asked
    finally:
        await client.close()
    return {
        "ok": ok,
        "walls": walls,
        "wall_s": wall,
        "model_turns": turns,
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5]),
    }


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def measured_run(
    in_flight: int, soft: int, *, url: str, model: CountedModel, model_url: str, package_dir: Path, out_dir: Path
) -> dict[str, Any]:
    """One fresh worker started with soft limit `soft`, `in_flight` episodes at once."""
    from verifiers.v1.serve import env_config_data
    from verifiers.v1.utils.loaders import resolve_env_config

    env = env_config("runtime", url, in_flight)
    data = client_tasks(env, 1)
    config_data = env_config_data(resolve_env_config(env))
    marker = f"OPENENVGEN_BENCH_{uuid.uuid4().hex}"
    load_before = load_average()
    with soft_limit(soft):
        server = env_server(config_data, 1, out_dir, package_dir, marker)
        proc, address = server.__enter__()
    try:
        sampler = TreeSampler(proc.pid, marker, interval=0.25)
        with sampler, FdSampler(proc.pid, marker) as fds:
            played = asyncio.run(play_timed(address, data, model_url, model))
            worker_soft = _soft_limit_of(proc.pid)
    finally:
        server.__exit__(None, None, None)
    turns = played["model_turns"] / len(data)  # the scripted episodes all take as many turns
    added = [(w - turns * MODEL_DELAY_S) / turns for w in played["walls"]]
    result = {
        "in_flight": in_flight,
        "soft_limit_at_spawn": soft,
        "soft_limit_in_worker": worker_soft,
        "hard_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
        "episodes": len(data),
        "model_turns_per_episode": round(turns, 2),
        "ok": played["ok"],
        "errors": played["errors"],
        "episode_phase_s": round(played["wall_s"], 2),
        "added_step_latency_ms": {
            "p50": round(_percentile(added, 50) * 1000, 1),
            "p99": round(_percentile(added, 99) * 1000, 1),
        },
        "peak_pss_mib": sampler.result()["peak_pss_mib"],
        "peak_rss_mib": sampler.result()["peak_rss_mib"],
        "peak_open_files": fds.peak,
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    if played["ok"] < len(data):
        result["server_log_tail"] = (out_dir / "server.log").read_text(errors="replace")[-1500:]
    latency = result["added_step_latency_ms"]
    log(
        f"P10 {in_flight} in flight, soft limit {soft} (worker {worker_soft}): ok {played['ok']}/{len(data)}, "
        f"added per step p50 {latency['p50']} ms p99 {latency['p99']} ms, "
        f"PSS {result['peak_pss_mib']} MiB, open files {fds.peak}"
    )
    return result


def run(quick: bool, workdir: Path, package_dir: Path | None = None) -> list[dict[str, Any]]:
    """The P10 figures: one row, the three runs in its details."""
    from vf_eval_runs import SCRIPT, generate_package, uv_server

    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    del quick  # one size: the 1,024
    package_dir = package_dir or generate_package(workdir)
    sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
    env_vars = {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": str(2 * WIDE)}
    runs = []
    model = CountedModel(DelayedModel(ScriptedChatModel(Script(SCRIPT)), MODEL_DELAY_S))
    with uv_server(CONCURRENT_APP, env_vars=env_vars) as url, serve_app(model) as model_url:
        for in_flight, soft in RUNS:
            runs.append(
                measured_run(
                    in_flight,
                    soft,
                    url=url,
                    model=model,
                    model_url=str(model_url),
                    package_dir=package_dir,
                    out_dir=workdir / f"p10-{in_flight}-{soft}",
                )
            )
    narrow, wide, wide_256 = runs
    ratios = {
        q: round(wide["added_step_latency_ms"][q] / narrow["added_step_latency_ms"][q], 2)
        if narrow["added_step_latency_ms"][q] > 0
        else None
        for q in ("p50", "p99")
    }
    all_ok = all(r["ok"] == r["episodes"] for r in runs)
    memory_ok = max(wide["peak_pss_mib"], wide_256["peak_pss_mib"]) <= TARGET_MEMORY_MIB
    measured = "; ".join(
        f"{r['in_flight']} in flight at soft limit {r['soft_limit_at_spawn']} (worker raised it to "
        f"{r['soft_limit_in_worker']}): {r['ok']}/{r['episodes']} ok, added per step p50 "
        f"{r['added_step_latency_ms']['p50']} ms / p99 {r['added_step_latency_ms']['p99']} ms, worker "
        f"{r['peak_pss_mib']} MiB PSS, {r['peak_open_files']} open files at peak"
        for r in runs
    )
    return [
        {
            "id": "P10",
            "title": f"{WIDE} episodes in flight on one served worker under a soft open-file limit of 1,024 "
            f"(and 256), against {NARROW} in flight",
            "target": f"all ok; worker ≤ {TARGET_MEMORY_MIB} MiB PSS; added latency per step at {WIDE} in flight "
            f"against {NARROW}, p50 and p99",
            "measured": measured,
            "ratio": ratios["p50"],
            "ratio_text": " / ".join("n/a" if ratios[q] is None else f"{ratios[q]:.2f}" for q in ("p50", "p99")),
            "ratio_label": f"added latency per step, {WIDE} / {NARROW} in flight, p50 / p99",
            "meets_target": all_ok and memory_ok,
            "details": {"runs": runs, "ratios": ratios, "all_ok": all_ok, "memory_goal_met": memory_ok},
        }
    ]


def main() -> None:
    """Print P10's rows as JSON."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="accepted for bench/run.py; P10 has one size")
    ns = parser.parse_args()
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-p10-"))), indent=2, default=str))


if __name__ == "__main__":
    main()

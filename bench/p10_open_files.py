"""P10: 1,024 episodes in flight on one served worker under a stock open-file limit. P8's
served path (`serve_env` with one worker in its own process, this process the orchestrator
through one `EnvClient`, the generated package on its default seat, one shared `base_url`
server of the concurrent-session fixture env), the model answering each turn 2 s late so the
episodes overlap as in training. The worker is started with its soft open-file limit lowered
(the hard one as it is): 1,024, what most Linux installs give a user, and 256; the runtime
raises it to the hard limit when the worker builds the env (without that, a third of the
episodes failed at 1,024 with `Too many open files`). Side by side in one run, a fresh worker
each: 32 in flight at 1,024 (the reference), 1,024 at 1,024, 1,024 at 256, each after one
warm-up episode. Per run: episodes ok; the worker tree's peak PSS and open files (/proc,
sampled); the latency each step adds beyond the model's delay, per episode (wall time −
model turns × delay) / model turns (turns counted at the model), at p50 and p99. Target: all
ok in each run and the worker ≤ 1 GiB PSS at 1,024 in flight; the added latency at 1,024 in
flight against 32 is reported (p50 / p99 ratios).
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from common import (
    BENCH,
    CONCURRENT_APP,
    SCRIPT,
    DelayedModel,
    cli,
    env_server,
    generate_package,
    log,
    play,
    reading,
    row,
    served_config,
    uv_server,
)

from openenvgen_testsupport.served import client_tasks

MODEL_DELAY_S = 2.0
WIDE, NARROW = 1024, 32
TARGET_MIB = 1024
RUNS = ((NARROW, 1024), (WIDE, 1024), (WIDE, 256))
"""(episodes in flight, the worker's soft open-file limit at spawn), in the order run."""


def measured_run(in_flight: int, soft: int, url: str, model: DelayedModel, model_url: str, out: Path) -> dict:
    """A fresh worker spawned with soft limit `soft`, one warm-up episode, `in_flight` at once."""
    config = served_config("runtime", url, in_flight)
    data = client_tasks(config)
    out.mkdir(parents=True, exist_ok=True)
    peak = {"pss_mib": 0.0, "fds": 0}
    done = threading.Event()
    with ExitStack() as stack:
        before = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))  # the spawned worker inherits it
        try:
            server = stack.enter_context(env_server(config, 1, out / "server.log"))
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, before)

        def sample() -> None:
            while not done.wait(0.25):
                now = reading(server.pid)
                peak.update({k: max(peak[k], now[k]) for k in peak})

        asyncio.run(play(server.address, data[:1], 1, model_url))  # the worker loads the env
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        asked = model.requests
        played = asyncio.run(play(server.address, data, in_flight, model_url))
        turns = (model.requests - asked) / len(data)  # the scripted episodes all take as many
        done.set()
        sampler.join()
        limits = Path(f"/proc/{server.pid}/limits").read_text().splitlines()
        worker_soft = int(next(x for x in limits if x.startswith("Max open files")).split()[3])
    added = [(w - turns * MODEL_DELAY_S) / turns * 1e3 for w in played["walls"]]
    pct = statistics.quantiles(added, n=100, method="inclusive")
    result = {
        "in_flight": in_flight,
        "soft_limit_at_spawn": soft,
        "soft_limit_in_worker": worker_soft,
        "hard_limit": before[1],
        "episodes": len(data),
        "ok": played["ok"],
        "errors": played["errors"],
        "model_turns_per_episode": round(turns, 2),
        "episode_phase_s": played["wall_s"],
        "added_ms": {"p50": round(pct[49], 1), "p99": round(pct[98], 1)},
        "peak_pss_mib": peak["pss_mib"],
        "peak_open_files": peak["fds"],
    }
    if played["ok"] < len(data):
        result["server_log_tail"] = (out / "server.log").read_text(errors="replace")[-1500:]
    log(f"P10 {result}")
    return result


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    del quick  # one size: 1,024 in flight is the point
    package_dir = generate_package(workdir)
    sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    env_vars = {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": str(2 * WIDE)}
    model = DelayedModel(ScriptedChatModel(Script(SCRIPT)), MODEL_DELAY_S)
    with uv_server(CONCURRENT_APP, env_vars=env_vars) as url, serve_app(model) as model_url:
        runs = [measured_run(n, soft, url, model, str(model_url), workdir / f"p10-{n}-{soft}") for n, soft in RUNS]
    narrow, wide, wide_256 = runs
    ratios = {
        q: round(wide["added_ms"][q] / narrow["added_ms"][q], 2) if narrow["added_ms"][q] > 0 else None
        for q in ("p50", "p99")
    }
    all_ok = all(r["ok"] == r["episodes"] for r in runs)
    memory_ok = max(wide["peak_pss_mib"], wide_256["peak_pss_mib"]) <= TARGET_MIB
    measured = "; ".join(
        f"{r['in_flight']} in flight at soft limit {r['soft_limit_at_spawn']} (worker: {r['soft_limit_in_worker']}): "
        f"{r['ok']}/{r['episodes']} ok, added per step p50 {r['added_ms']['p50']} ms / p99 {r['added_ms']['p99']} ms, "
        f"worker {r['peak_pss_mib']} MiB PSS, {r['peak_open_files']} open files at peak"
        for r in runs
    )
    return [
        row(
            "P10",
            f"{WIDE} episodes in flight on one served worker, soft open-file limit 1,024 (and 256), "
            f"against {NARROW} in flight",
            f"all ok; worker ≤ {TARGET_MIB} MiB PSS; added latency per step at {WIDE} against {NARROW}, p50 and p99",
            measured,
            ratios["p50"],
            all_ok and memory_ok,
            label=f"added latency per step, {WIDE} / {NARROW} in flight, p50 (p99 {ratios['p99']})",
            runs=runs,
            ratios=ratios,
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

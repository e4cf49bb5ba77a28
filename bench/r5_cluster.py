"""R5: episodes on a real multi-node Docker Swarm (the `multinode` tests' cluster: each node
a Docker daemon in a network namespace of its own, pulling the env image from a registry
started here; needs root) against a 1-node swarm made the same way and UV launch, and a
worker node that dies mid-run. Throughput: each mode's package served as training runs it
(`serve_env`, 1 worker; `EnvClient` here), as many servers as episodes in flight (8; quick
4), every image pulled before anything is timed; rounds of 256 episodes (quick 64), 3 rounds
(quick 2), the modes interleaved, their order rotating; rate = successful episodes per minute
over a batch. On one machine the nodes share its cores: the figures compare what each path
costs per episode, not a cluster's capacity. Node failure: the package in this process on
the 3-node swarm with 2 retries, the model answering 0.25 s late; once the pool holds a
session on worker1 it is killed (daemon, containerd, containers) inside the event loop, so
"in flight" is the pool's count at the kill; episodes keep starting until the rescheduled
replicas have taken episodes for 10 s. Target: every throughput episode successful; 3-node
at >= 0.8x the 1-node swarm's rate; lost <= in flight, none failed in the end, and the
rescheduled replicas take episodes; nothing of the run left on any node."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import (
    ENV_ID,
    SCRIPT,
    DelayedModel,
    bench_env,
    cli,
    docker_host,
    env_server,
    load_average,
    log,
    median,
    play,
    row,
)

from openenvgen_testsupport import docker_images, multinode, served
from openenvgen_testsupport.adapters import (
    generate_uv_fixture_package,
    marked_processes,
    model_context,
    uv_taskset,
    wait_for,
)
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

MODES = ("3-node swarm", "1-node swarm", "uv")
BENCH_LABEL = "openenvgen.bench.r5"
"""Label on the run's services and containers (its value is the run's): what is checked left."""
FAILURE_MODEL_DELAY_S = 0.25
FAILURE_WARM_EPISODES = 2
"""Episodes per slot played before the kill (× concurrency)."""
FAILURE_TAIL_S = 10.0
"""Seconds episodes keep starting after a rescheduled replica first holds one."""
FAILURE_DEADLINE_S = 240.0
TARGET_CLUSTER_OVER_SINGLE = 0.8


def swarm_taskset(cluster: multinode.Cluster, replicas: int, run_id: str) -> dict[str, Any]:
    return {
        "env": ENV_ID,
        "use_swarm": True,
        "replicas": replicas,
        "startup_timeout": 300,
        "provider_kwargs": {"image": cluster.image, "labels": {BENCH_LABEL: run_id}},
    }


def throughput(
    clusters: dict[str, multinode.Cluster],
    package_id: str,
    workdir: Path,
    concurrency: int,
    episodes: int,
    rounds: int,
    run_id: str,
) -> dict[str, Any]:
    marker = f"openenvgen-r5-{run_id}"
    configs = {
        mode: served.env_config(package_id, swarm_taskset(clusters[mode], concurrency, run_id)) for mode in MODES[:2]
    }
    configs["uv"] = served.env_config(package_id, uv_taskset(marker, max_servers=concurrency, startup_timeout=300))
    tasks = served.client_tasks(configs["uv"])
    batch = list(itertools.islice(itertools.cycle(tasks), episodes))
    modes: dict[str, dict[str, Any]] = {}
    runs: list[dict[str, Any]] = []
    model = ScriptedChatModel(Script(SCRIPT))
    with serve_app(model) as model_url, contextlib.ExitStack() as stack:
        addresses = {}
        for mode in MODES:
            cluster = clusters.get(mode)
            started = time.perf_counter()
            with docker_host(cluster.manager.host if cluster else None):
                server = stack.enter_context(env_server(configs[mode], 1, workdir / f"r5-{mode.replace(' ', '-')}.log"))
            addresses[mode] = server.address
            warm = asyncio.run(play(server.address, batch[:concurrency], concurrency, str(model_url), startup=600))
            info: dict[str, Any] = {"startup_s": round(time.perf_counter() - started, 1), "warm_up": warm}
            if cluster:
                (service,) = cluster.services(f"{BENCH_LABEL}={run_id}")
                info["placement"] = cluster.placement(service)
            else:
                info["uv_servers"] = len(served.launched_servers(marked_processes(marker)))
            modes[mode] = info
            log(f"R5: {mode} serving after {info['startup_s']} s ({info.get('placement') or info.get('uv_servers')})")
        for round_ in range(rounds):
            order = MODES[round_ % len(MODES) :] + MODES[: round_ % len(MODES)]
            for mode in order:
                before = load_average()
                result = asyncio.run(play(addresses[mode], batch, concurrency, str(model_url)))
                rate = round(result["successful"] / result["wall_s"] * 60, 1) if result["wall_s"] else 0.0
                loads = {"load_average_before": before, "load_average_after": load_average()}
                runs.append({"mode": mode, "round": round_ + 1, "concurrency": concurrency, **result})
                runs[-1] |= {"successful_per_min": rate, **loads}
                log(
                    f"R5 round {round_ + 1} {mode}: {result['successful']}/{episodes}, {result['wall_s']} s, {rate}/min"
                )
        modes["uv"]["uv_servers_after"] = len(served.launched_servers(marked_processes(marker)))
    # The env servers are stopped (SIGTERM): nothing of theirs may be left.
    label = f"{BENCH_LABEL}={run_id}"
    for mode in MODES[:2]:
        wait_for(lambda c=clusters[mode]: c.leftovers(label) == {}, 60, interval=1)
        modes[mode]["left_on_nodes"] = clusters[mode].leftovers(label)
    wait_for(lambda: marked_processes(marker) == [], 60, interval=0.5)
    modes["uv"]["left_processes"] = len(marked_processes(marker))
    for mode, info in modes.items():
        rates = [r["successful_per_min"] for r in runs if r["mode"] == mode]
        info["successful_per_min"] = rates
        info["median_successful_per_min"] = median(rates)
    return {"modes": modes, "runs": runs}


def failure_run(cluster: multinode.Cluster, package_id: str, concurrency: int, run_id: str) -> dict[str, Any]:
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    doomed, survivor = cluster.workers
    label = f"{BENCH_LABEL}={run_id}-failure"
    taskset = swarm_taskset(cluster, concurrency, f"{run_id}-failure")
    model = ScriptedChatModel(Script(SCRIPT))
    with docker_host(cluster.manager.host), serve_app(DelayedModel(model, FAILURE_MODEL_DELAY_S)) as model_url:
        config = {"taskset": {"id": package_id, **taskset}, "retries": {"max_retries": 2}}
        env = load_environment(resolve_env_config(config))
        try:
            seen = asyncio.run(_failure(env, cluster, str(model_url), concurrency, label))
        finally:
            cluster.revive_node(doomed)
        wait_for(lambda: cluster.leftovers(label) == {}, 60, interval=1)
        seen["left_on_nodes"] = cluster.leftovers(label)
    episodes, attempts = seen.pop("episodes"), seen.pop("attempts")
    final_failed = [e for e in episodes if not e.ok]
    # An episode's errors hold those of its earlier, failed attempts (verifiers' retries).
    retried = [e for e in episodes if e.ok and e.errors]
    result = {
        "replicas": concurrency,
        "concurrency": concurrency,
        "retries": 2,
        "episodes": len(episodes),
        "ok": len(episodes) - len(final_failed),
        "failed": len(final_failed),
        "failed_stop_conditions": dict(
            collections.Counter(str(e.traces[0].stop_condition if e.traces else None) for e in final_failed)
        ),
        "lost": sum(trace.stop_condition == "env_lost" for trace in attempts),
        "attempts": len(attempts),
        "retried": len(retried),
        "survivor": survivor.name,
        "killed": doomed.name,
        **seen,
    }
    log(
        f"R5 node failure: {result['episodes']} episodes, in flight on {doomed.name} {result.get('in_flight')}, "
        f"lost {result['lost']}, retried {result['retried']}, failed {result['failed']}, "
        f"rescheduled replicas took episodes after {result.get('rescheduled_first_episode_s')} s"
    )
    return result


async def _failure(
    env: Any, cluster: multinode.Cluster, model_url: str, concurrency: int, label: str
) -> dict[str, Any]:
    doomed, survivor = cluster.workers
    ctx = model_context(model_url)
    tasks = list(env.taskset)
    seen: dict[str, Any] = {}
    done: list[Any] = []
    attempts: list[Any] = []
    """Every attempt's trace (a retried episode mints one per attempt)."""
    stop = asyncio.Event()
    started = time.monotonic()
    async with env.serving():
        seen["serving_after_s"] = round(time.monotonic() - started, 1)
        initial = {s.url for s in env.pool.servers}
        before = set(cluster.docker(survivor, "ps", "-q", "--filter", f"label={label}").split())

        async def player(i: int) -> None:
            for n in itertools.count():
                if stop.is_set():
                    return
                (slot,) = env.slots(tasks[(i + n) % len(tasks)], 1)
                done.append(await env.run_slot(slot, ctx, on_trace=attempts.append))

        async def monitor() -> None:
            while True:
                await asyncio.sleep(0.05)
                now = time.monotonic()
                servers = env.pool.servers
                if "killed_at" not in seen:
                    if now - started > seen["serving_after_s"] + FAILURE_DEADLINE_S:
                        stop.set()  # never an episode on worker1 to kill it under: reported as such
                        return
                    if len(done) < FAILURE_WARM_EPISODES * concurrency:
                        continue
                    on_doomed = sum(s.active for s in servers if s.url.split("//")[1].split(":")[0] == doomed.address)
                    if not on_doomed:
                        continue
                    seen["in_flight"] = on_doomed
                    # In the loop, not a thread: no session starts or ends between the count and the kill.
                    cluster.kill_node(doomed)
                    seen["killed_at"] = time.monotonic()
                    continue
                since = now - seen["killed_at"]
                fresh = [s for s in servers if s.url not in initial]
                if fresh and "rescheduled_joined_s" not in seen:
                    seen["rescheduled_joined_s"] = round(since, 1)
                if any(s.active for s in fresh) and "rescheduled_first_episode_s" not in seen:
                    seen["rescheduled_first_episode_s"] = round(since, 1)
                first = seen.get("rescheduled_first_episode_s")
                if (first is not None and since - first >= FAILURE_TAIL_S) or since > FAILURE_DEADLINE_S:
                    stop.set()
                    return

        players = [asyncio.create_task(player(i)) for i in range(concurrency)]
        await asyncio.wait_for(monitor(), FAILURE_DEADLINE_S + 600)
        await asyncio.wait_for(asyncio.gather(*players), 600)
        seen["run_s"] = round(time.monotonic() - started, 1)
        sessions = cluster.sessions(label, nodes=[survivor])
        seen["sessions_on_rescheduled"] = {k: v for k, v in sessions.items() if k.split("/", 1)[1] not in before}
    seen["killed_after_s"] = round(seen.pop("killed_at", started) - started, 1) if "in_flight" in seen else None
    seen["episodes"], seen["attempts"] = done, attempts
    return seen


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    episodes, rounds, concurrency = (64, 2, 4) if quick else (256, 3, 8)
    os.environ["PATH"] = bench_env()["PATH"]
    if reason := docker_images.daemon_problem() or multinode.problem():
        raise RuntimeError(f"R5 needs a Docker daemon and a multi-node swarm: {reason}")
    run_id = uuid.uuid4().hex[:12]
    image = docker_images.env_image()
    package_id = generate_uv_fixture_package(workdir)
    cache = docker_images.CACHE / "multinode-registry"
    with multinode.multinode_swarm(image, registry_cache=cache) as three:
        three.docker(three.manager, "node", "update", "--availability", "drain", three.manager.name)
        with multinode.multinode_swarm(image, workers=0, registry_cache=cache) as one:
            # Each node that will run replicas pulls the image from its registry, all at once.
            nodes = [(three, node) for node in three.workers] + [(one, one.manager)]
            with ThreadPoolExecutor(len(nodes)) as pool:
                list(pool.map(lambda cn: cn[0].docker(cn[1], "pull", cn[0].image, timeout=900), nodes))
            speed = throughput(
                {MODES[0]: three, MODES[1]: one}, package_id, workdir, concurrency, episodes, rounds, run_id
            )
        failure = failure_run(three, package_id, concurrency, run_id)
    modes = speed["modes"]
    rate = {mode: modes[mode]["median_successful_per_min"] for mode in MODES}
    cluster_over_single = round(rate[MODES[0]] / rate[MODES[1]], 2) if rate[MODES[1]] else None
    cluster_over_uv = round(rate[MODES[0]] / rate["uv"], 2) if rate["uv"] else None
    all_successful = all(r["successful"] == r["episodes"] for r in speed["runs"])
    rescheduled = failure.get("rescheduled_first_episode_s") is not None
    in_flight = failure.get("in_flight")
    failure_goal = in_flight is not None and failure["lost"] <= in_flight and failure["failed"] == 0 and rescheduled
    measured = (
        "successful episodes/min (median of rounds): "
        + ", ".join(f"{mode} {rate[mode]}" for mode in MODES)
        + "; start-up s: "
        + ", ".join(f"{mode} {modes[mode]['startup_s']}" for mode in MODES)
        + f"; node failure: {failure.get('in_flight')} in flight on the killed node, {failure['lost']} lost, "
        f"{failure['retried']} retried, {failure['failed']} failed of {failure['episodes']}; rescheduled replicas "
        f"in the pool after {failure.get('rescheduled_joined_s')} s, taking episodes after "
        f"{failure.get('rescheduled_first_episode_s')} s"
    )
    meets = all_successful and (cluster_over_single or 0) >= TARGET_CLUSTER_OVER_SINGLE and failure_goal
    return [
        row(
            "R5",
            f"episodes/min on a 3-node swarm vs a 1-node swarm vs UV ({episodes} episodes × {rounds} rounds "
            f"at {concurrency} in flight, {concurrency} servers each), and a worker node killed mid-run",
            f"all successful; 3-node ≥ {TARGET_CLUSTER_OVER_SINGLE}× the 1-node swarm's rate; "
            "node failure: lost ≤ in flight, none failed with retries, rescheduled replicas take episodes",
            measured,
            cluster_over_single,
            meets,
            label="3-node / 1-node swarm successful episodes per minute",
            modes=modes,
            cluster_runs=speed["runs"],
            failure_run=failure,
            cluster_over_uv=cluster_over_uv,
        )
        | {"ratio_text": f"{cluster_over_single} (3-node / UV {cluster_over_uv})"}
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

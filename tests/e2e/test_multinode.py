"""Docker Swarm beyond one machine: a manager and two workers, each a Docker daemon in a
network namespace of its own, joined in one swarm on a bridge, pulling the env image from a
registry started here (`openenvgen_testsupport.multinode`). The package is pointed at the
manager with DOCKER_HOST, the way a user points it at a remote swarm: every `docker`
command the runtime runs (service create, service ps, node inspect, the reaper's) goes
there, and the pool reaches each replica on its node's address and published port.

Shown: the manager drained, 4 replicas placed 2 + 2 on the workers (`docker node ps`) and
every episode played with all four replicas taking episodes; `provider_kwargs.constraints`
pinning the replicas to a labelled node; a sandboxed launch's replicas, on their internal
network and publishing nothing, each reached through the router on its node; verifiers' own
env server with 2 workers, each worker's pool launching a service of its own on the
cluster; a worker node killed mid-run (daemon, shims and containers at once) losing only
the episodes in flight on it, all of which `--env.retries` reruns, while the swarm puts its
replicas on the surviving worker and the pool takes episodes there; nothing of ours left on
any node afterwards. The machine's own daemon and swarm are left as found
(`host_left_as_found`)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport import docker_images, multinode, served
from openenvgen_testsupport.adapters import load_env, model_context, outcome, wait_for
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app
from openenvgen_testsupport.skips import REQUIRE_DOCKER, skip_loudly

pytestmark = [pytest.mark.multinode, pytest.mark.rollout, pytest.mark.timeout(900)]
RUN = uuid.uuid4().hex
"""This module's run label value, on everything it starts (next to each test's own token)."""
POOL_LABEL = "openenvgen.test.pool"
"""The node label the constraint test pins its replicas with."""


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[multinode.Cluster]:
    reason = docker_images.daemon_problem() or multinode.problem()
    if reason:
        skip_loudly(request.config, "multinode swarm tests", reason, required_by=REQUIRE_DOCKER)
    image = docker_images.env_image()
    with docker_images.host_left_as_found(RUN):
        with multinode.multinode_swarm(image, registry_cache=docker_images.CACHE / "multinode-registry") as made:
            made.docker(made.manager, "node", "update", "--availability", "drain", made.manager.name)
            made.docker(made.manager, "node", "update", "--label-add", f"{POOL_LABEL}=pinned", "worker2")
            yield made
            assert nothing_left(made, f"{docker_images.RUN_LABEL}={RUN}")


@pytest.fixture
def on_manager(cluster: multinode.Cluster, token: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The package (and every `docker` it runs) pointed at the cluster's manager."""
    monkeypatch.setenv("DOCKER_HOST", cluster.manager.host)
    yield token
    docker_images.remove_labelled(token)  # still on the manager: a failed test's service


def cluster_taskset(image: str, token: str, replicas: int, **provider_kwargs: Any) -> dict[str, Any]:
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    return {
        "env": "test/guess-env",
        "use_swarm": True,
        "replicas": replicas,
        "startup_timeout": 300,
        "provider_kwargs": {"image": image, "labels": labels, **provider_kwargs},
    }


def our_service(cluster: multinode.Cluster, token: str) -> str:
    (name,) = cluster.services(f"{docker_images.TEST_LABEL}={token}")
    return name


def sessions_per_replica(cluster: multinode.Cluster, token: str) -> dict[str, int]:
    """Sessions each replica's server accepted (its access log), by node/container."""
    return cluster.sessions(f"{docker_images.TEST_LABEL}={token}")


def nothing_left(cluster: multinode.Cluster, label: str) -> bool:
    """No service, container, network or secret with `label` on any node, within a minute:
    the runtime waits for the service's containers on the engine it talks to (the manager);
    each worker removes its own a little later."""
    return wait_for(lambda: cluster.leftovers(label) == {}, 60, interval=1)


def play(env: Any, cluster: multinode.Cluster, token: str, episodes: int) -> dict[str, Any]:
    """`episodes` concurrent episodes inside one `serving()`; the placement and each
    replica's sessions seen while the service runs."""
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> dict[str, Any]:
            async with env.serving():
                service = our_service(cluster, token)
                placement = cluster.placement(service)
                ctx = model_context(str(model_url))
                played = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * episodes))
                return {
                    "placement": placement,
                    "outcomes": [outcome(e) for e in played],
                    "servers": sorted(s.url for s in env.pool.servers),
                    "sessions": sessions_per_replica(cluster, token),
                }

        return asyncio.run(main())


def test_a_drained_manager_places_replicas_on_the_workers_and_episodes_spread(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str
) -> None:
    token = on_manager
    seen = play(load_env(guess_pkg, cluster_taskset(cluster.image, token, replicas=4)), cluster, token, episodes=8)
    assert seen["placement"] == {"worker1": 2, "worker2": 2}, seen
    assert seen["outcomes"] == [(True, "env_done", 1.0)] * 8, seen
    workers = {node.address for node in cluster.workers}
    assert len(seen["servers"]) == 4 and {url.split("//")[1].split(":")[0] for url in seen["servers"]} == workers
    assert len(seen["sessions"]) == 4 and all(n >= 1 for n in seen["sessions"].values()), seen
    assert nothing_left(cluster, f"{docker_images.TEST_LABEL}={token}")


def test_sandboxed_replicas_are_reached_through_the_router_on_their_node(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str
) -> None:
    """The sandbox without network across machines: four replicas on the workers, on their
    launch's internal network, publish nothing; the launch's router runs on each worker (the
    drained manager runs none), and the run reaches every replica through the router on its
    node, by a loopback URL of its own; episodes spread over all four; nothing is left on
    any node, the launch's networks included."""
    token = on_manager
    label = f"{docker_images.TEST_LABEL}={token}"
    env = load_env(guess_pkg, {**cluster_taskset(cluster.image, token, replicas=4), "sandbox": True})
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> dict[str, Any]:
            async with env.serving():
                (router,) = [name for name in cluster.services(label) if name.endswith("-router")]
                (replicas,) = [name for name in cluster.services(label) if name != router]
                ctx = model_context(str(model_url))
                played = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 8))
                # A router task that failed to start (moby/moby#48783) is restarted after Swarm's delay.
                one_each = {"worker1": 1, "worker2": 1}
                await asyncio.to_thread(wait_for, lambda: cluster.placement(router) == one_each, timeout=30)
                return {
                    "placement": cluster.placement(replicas),
                    "routers": cluster.placement(router),
                    "published": cluster.replica_urls(replicas),
                    "outcomes": [outcome(e) for e in played],
                    "servers": sorted(s.url for s in env.pool.servers),
                    "sessions": cluster.sessions(f"com.docker.swarm.service.name={replicas}"),
                }

        seen = asyncio.run(main())
    assert seen["placement"] == {"worker1": 2, "worker2": 2}, seen
    assert seen["routers"] == {"worker1": 1, "worker2": 1}, seen
    assert seen["published"] == [], seen  # the replicas publish nothing
    assert seen["outcomes"] == [(True, "env_done", 1.0)] * 8, seen
    assert len(seen["servers"]) == 4 and all(url.startswith("http://127.0.0.1:") for url in seen["servers"]), seen
    assert len(seen["sessions"]) == 4 and all(n >= 1 for n in seen["sessions"].values()), seen
    assert nothing_left(cluster, label)


def test_constraints_pin_the_replicas_to_a_labelled_node(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str
) -> None:
    token = on_manager
    constraints = [f"node.labels.{POOL_LABEL}==pinned"]
    taskset = cluster_taskset(cluster.image, token, replicas=2, constraints=constraints)
    seen = play(load_env(guess_pkg, taskset), cluster, token, episodes=4)
    assert seen["placement"] == {"worker2": 2}, seen
    assert seen["outcomes"] == [(True, "env_done", 1.0)] * 4, seen
    (worker2,) = [node for node in cluster.workers if node.name == "worker2"]
    assert {url.split("//")[1].split(":")[0] for url in seen["servers"]} == {worker2.address}, seen
    assert nothing_left(cluster, f"{docker_images.TEST_LABEL}={token}")


def test_served_workers_each_launch_their_own_service_on_the_cluster(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str, tmp_path: Path
) -> None:
    """verifiers' own `serve_env` with a static pool of 2 workers, the tasks sent as wire
    data (prime-rl's path, `openenvgen_testsupport.served`): each worker's pool launches a
    service of its own on the cluster (one replica each: lean), its replica on a worker node,
    and plays on it; every episode wins. After the env server stops (SIGTERM, as a host stops
    it) no service, container, network or secret of the run is left on any node."""
    token = on_manager
    label = f"{docker_images.TEST_LABEL}={token}"
    config = served.env_config(guess_pkg, cluster_taskset(cluster.image, token, replicas=1))
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    started = time.monotonic()
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), tasks * 8, timeout=600)
        services = cluster.services(label)
        seen: dict[str, Any] = {
            "played_after": round(time.monotonic() - started, 1),
            "workers": server.workers(),
            "placement": {s: cluster.placement(s) for s in services},
            "replicas": {s: cluster.replica_urls(s) for s in services},
            "sessions": cluster.sessions(label),
        }
    seen["stopped_after"] = round(time.monotonic() - started, 1)
    log = server.log()
    # Each worker logs its own pool's launch: "PID openenvgen_runtime.launching.launch INFO: ... ready in N s at URL".
    ready = re.findall(r"^(\d+) \S+ INFO: test/guess-env \(swarm\) ready in \d+ s at (.+)$", log, re.MULTILINE)
    launched = {int(pid): sorted(urls.split(", ")) for pid, urls in ready}
    played = {int(line.split()[0]) for line in log.splitlines() if "rollout done" in line}
    print(f"served on the cluster: {seen}, launched by worker {launched}")
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 8, seen
    assert len(services) == 2 and len(seen["workers"]) == 2, seen
    workers = {node.name for node in cluster.workers}
    assert all(sum(p.values()) == 1 and set(p) <= workers for p in seen["placement"].values()), seen
    # One launch per worker process, and its pool's server is its own service's replica.
    assert len(ready) == 2 and sorted(launched) == sorted(seen["workers"]) == sorted(played), (ready, seen)
    assert sorted(launched.values()) == sorted(seen["replicas"].values()), (launched, seen)
    assert len(seen["sessions"]) == 2 and all(n >= 1 for n in seen["sessions"].values()), seen
    assert nothing_left(cluster, label)
    print(f"nothing left {round(time.monotonic() - started, 1)} s after the start")


def test_an_image_no_node_can_pull_is_one_line(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The manager cannot read the image's command either (it pulls it first); that is one
    warning line, and the swarm's own reason is the error."""
    token = on_manager
    missing = f"{cluster.registry}/openenvgen-test-missing:nope"
    env = load_env(guess_pkg, cluster_taskset(missing, token, replicas=2))

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    first_line = str(info.value).splitlines()[0]
    assert first_line.startswith("test/guess-env (swarm): swarm cannot run a replica (rejected: "), first_line
    assert "openenvgen-test-missing:nope" in first_line, first_line
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "nope" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(f"use_swarm: image {missing} is not on this machine"), warnings
    assert nothing_left(cluster, f"{docker_images.TEST_LABEL}={token}")


def load_with_retries(package_id: str, taskset: dict[str, Any], retries: int) -> Any:
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config = {"taskset": {"id": package_id, **taskset}, "retries": {"max_retries": retries}}
    return load_environment(resolve_env_config(config))


def host_of(url: str) -> str:
    return url.split("//")[1].split(":")[0]


def containers(cluster: multinode.Cluster, node: multinode.Node, token: str) -> set[str]:
    selector = f"label={docker_images.TEST_LABEL}={token}"
    return set(cluster.docker(node, "ps", "-q", "--filter", selector).split())


def replaced(env: Any, survivor: multinode.Node) -> bool:
    """Swarm runs all 4 replicas on `survivor` (the provider's view, as the pool reads it),
    and each answers `/health` (a started container may not serve yet)."""
    urls = env.pool.servers[0].provider.replicas()
    return len(urls) == 4 and {host_of(url) for url in urls} == {survivor.address} and all(map(answers, urls))


def answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    return False


@pytest.mark.parametrize("retries", [0, 2])
def test_a_worker_killed_mid_run_loses_only_its_in_flight_episodes(
    cluster: multinode.Cluster, guess_pkg: str, on_manager: str, retries: int
) -> None:
    """32 episodes at 8 in flight on 4 replicas (2 per worker). At the first model turn
    with an episode in flight on worker1, worker1 is killed (daemon, shims, containers);
    the model then holds its answers until the swarm runs all 4 replicas on worker2, and
    answers with some latency after that, so the rest of the run plays while the pool takes
    the new replicas in. Without retries only episodes in flight on worker1 fail, as
    env_lost; with retries none do. The run is bounded; worker1 is revived afterwards."""
    token = on_manager
    doomed, survivor = cluster.workers
    env = load_with_retries(guess_pkg, cluster_taskset(cluster.image, token, replicas=4), retries)
    script = Script(["5", '{"guess": 7}'])
    seen: dict[str, Any] = {}

    def reply(history: list[dict[str, Any]]) -> str:
        if "killed_at" not in seen:
            on_doomed = sum(s.active for s in env.pool.servers if host_of(s.url) == doomed.address)
            if on_doomed:
                seen["in_flight"] = on_doomed
                seen["killed_at"] = time.monotonic()
                cluster.kill_node(doomed)
                # Held (the model answers nobody meanwhile) until Swarm has replaced the lost
                # replicas and they serve, so episodes are left to begin on them; bounded.
                wait_for(lambda: replaced(env, survivor), 180, interval=1)
                seen["replaced_after"] = round(time.monotonic() - seen["killed_at"], 1)
        else:
            # A model with some latency (one answer at a time): the run outlasts the
            # pool's next replica refresh, a second after worker1's servers are down.
            time.sleep(0.2)
        return str(script.reply_for(history))

    model = ScriptedChatModel(reply)
    with serve_app(model) as model_url:

        async def main() -> list[Any]:
            async with env.serving():
                seen["serving_after"] = round(time.monotonic() - started, 1)
                seen["before"] = containers(cluster, survivor, token)
                ctx = model_context(str(model_url))
                gate = asyncio.Semaphore(8)
                slots = [slot for task in env.taskset for slot in env.slots(task, 32)]
                played = asyncio.gather(*(env.run_slot(slot, ctx, semaphore=gate) for slot in slots))
                episodes = await asyncio.wait_for(played, 420)  # a hang fails, it does not stall the suite
                seen["ran_after"] = round(time.monotonic() - started, 1)
                seen["servers"] = sorted(s.url for s in env.pool.servers)
                seen["after"] = {
                    c: sum("WebSocket /ws" in line for line in cluster.logs(survivor, c).splitlines())
                    for c in containers(cluster, survivor, token)
                }
                return list(episodes)

        try:
            started = time.monotonic()
            episodes = asyncio.run(main())
            seen["run_seconds"] = round(time.monotonic() - started, 1)
        finally:
            cluster.revive_node(doomed)
    failed = [outcome(e) for e in episodes if not e.ok]
    print(f"node failure (retries={retries}): failed {failed}, {seen}")
    assert seen.get("in_flight", 0) >= 1, "no episode was in flight on the killed node: the test proves nothing"
    assert len(episodes) == 32
    if retries:
        assert failed == [], seen
    else:
        assert 1 <= len(failed) <= seen["in_flight"], (failed, seen)
        assert {stop for _, stop, _ in failed} == {"env_lost"}, failed
    assert [outcome(e) for e in episodes if e.ok] == [(True, "env_done", 1.0)] * (32 - len(failed))
    # The replicas Swarm started on the survivor joined the pool (the dead ones left it),
    # and episodes begun after the failure played on them.
    fresh = set(seen["after"]) - seen["before"]
    assert len(fresh) == 2 and sum(seen["after"][c] for c in fresh) >= 1, seen
    assert len(seen["servers"]) == 4 and {host_of(url) for url in seen["servers"]} == {survivor.address}, seen
    assert nothing_left(cluster, f"{docker_images.TEST_LABEL}={token}")

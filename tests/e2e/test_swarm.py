"""Docker Swarm as the launch engine, on a single-node swarm: one service of N replicas
through OpenEnv's `DockerSwarmProvider`, episodes spread over the replicas (each one's
session capacity learnt), a replica that dies replaced by Swarm and followed by the pool,
and the service removed on every path (normal end, an error, SIGKILL of `vf-eval`). A
swarm that is not initialised is one line before any episode: shown on a throwaway Docker
daemon of the test's own, so the machine's daemon and swarm are never changed (checked
for the whole module: `docker info`'s swarm state and our labelled containers and services
are the same after it as before; a swarm the module had to initialise, it leaves again)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import (
    load_env,
    model_context,
    outcome,
    wait_for,
)
from openenvgen_testsupport.rollout import start_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

# The first run on a machine builds the env image (minutes); later runs find it cached.
pytestmark = [
    pytest.mark.swarm,
    pytest.mark.rollout,
    pytest.mark.timeout(1800),
    pytest.mark.usefixtures("host_left_as_found", "swarm"),
]
RUN = uuid.uuid4().hex
"""This module's run label value, on everything it starts (next to each test's own token)."""


def swarm_taskset(image: str, token: str, replicas: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "env": "test/guess-env",
        "use_swarm": True,
        "replicas": replicas,
        "startup_timeout": 240,
        "provider_kwargs": {"image": image, "labels": {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}},
        **extra,
    }


def test_episodes_spread_over_the_replicas_and_the_service_is_removed(image: str, guess_pkg: str, token: str) -> None:
    """Six concurrent episodes on a one-session env served by two replicas: both replicas
    play, each is capped at the one session it takes, and nothing is left at the end."""
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, swarm_taskset(image, token))

        async def main() -> tuple[list[Any], list[tuple[str, int | None]], int]:
            async with env.serving():
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 6))
                servers = [(s.url, s.capacity) for s in env.pool.servers]
                return episodes, servers, len(docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}"))

        episodes, servers, running = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 6
    assert len({url for url, _ in servers}) == 2 and running == 2, servers
    assert [capacity for _, capacity in servers] == [1, 1], servers
    assert docker_images.labelled(token) == []


def test_a_replica_that_dies_is_replaced_and_followed(image: str, guess_pkg: str, token: str) -> None:
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, swarm_taskset(image, token))

        async def main() -> tuple[list[Any], set[str], set[str]]:
            async with env.serving():
                before = {s.url for s in env.pool.servers}
                (victim, _) = docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}")
                docker_images.docker("kill", victim)
                ctx = model_context(str(model_url))
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline:
                    # Episodes notice the dead replica; the pool then follows Swarm's replacement.
                    episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 2))
                    now = {s.url for s in env.pool.servers}
                    if len(now - before) >= 1 and len(now) == 2:
                        break
                    await asyncio.sleep(1)
                return episodes, before, {s.url for s in env.pool.servers}

        episodes, before, after = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
    assert len(after) == 2 and len(after - before) == 1, (before, after)
    assert docker_images.labelled(token) == []


def test_no_service_left_after_an_error(image: str, guess_pkg: str, token: str) -> None:
    env = load_env(guess_pkg, swarm_taskset(image, token, replicas=1))

    async def main() -> None:
        async with env.serving():
            assert len(docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")) == 1
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(main())
    assert docker_images.labelled(token) == []


def test_no_service_left_after_vf_eval_is_killed(image: str, guess_pkg: str, token: str, tmp_path: Path) -> None:
    def slow(messages: list[dict]) -> str:
        time.sleep(60)
        return "7"

    model = ScriptedChatModel(slow)
    with serve_app(model) as model_url:
        proc = start_eval(
            guess_pkg, model_url=str(model_url), out_dir=tmp_path, taskset=swarm_taskset(image, token, replicas=1)
        )
        try:
            assert wait_for(lambda: len(model.requests) >= 1, 240), "episode never reached the model"
            assert len(docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")) == 1
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert wait_for(lambda: docker_images.labelled(token) == [], 90), docker_images.labelled(token)


def test_a_swarm_that_is_not_initialised_is_one_line_before_any_episode(
    guess_pkg: str, token: str, request: pytest.FixtureRequest
) -> None:
    from openenvgen_testsupport.skips import REQUIRE_DOCKER, skip_loudly

    with contextlib.ExitStack() as stack:
        try:
            host = stack.enter_context(docker_images.throwaway_daemon())
        except docker_images.DockerUnavailable as e:
            skip_loudly(request.config, "the not-initialised swarm test", str(e), required_by=REQUIRE_DOCKER)
        # The code under test talks to the throwaway daemon only, which is in no swarm.
        stack.enter_context(pytest.MonkeyPatch.context()).setenv("DOCKER_HOST", host)
        assert docker_images.swarm_state() == "inactive"
        env = load_env(guess_pkg, swarm_taskset("openenvgen-test-guess:any", token))

        async def main() -> None:
            async with env.serving():
                raise AssertionError("started")

        with pytest.raises(LaunchError) as info:
            asyncio.run(main())
        assert docker_images.swarm_state() == "inactive"
        assert docker_images.labelled(token) == []
    assert str(info.value) == (
        "use_swarm: this Docker engine is not part of a swarm (state: inactive); "
        "run `docker swarm init` (or `docker swarm join` to a manager) first"
    )

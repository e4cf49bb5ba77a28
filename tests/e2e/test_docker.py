"""The Docker launch mode, for real: a small env image built locally (see
`openenvgen_testsupport.docker_images`), episodes through OpenEnv's Docker provider, and no
container of ours left in `docker ps -a` on any path: normal end, an error, and SIGINT or
SIGKILL of a real `vf-eval`. A container that dies mid-run is replaced. Bad input (a
missing image, a container that dies while starting) is one line before any episode."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.access.tokens import for_people
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
    pytest.mark.docker,
    pytest.mark.rollout,
    pytest.mark.timeout(1800),
    pytest.mark.usefixtures("host_left_as_found"),
]
RUN = uuid.uuid4().hex
"""This module's run label value, on everything it starts (next to each test's own token)."""


def containers(token: str, *, running_only: bool = False) -> list[str]:
    if running_only:
        return docker_images.docker("ps", "-q", "--filter", f"label={docker_images.TEST_LABEL}={token}").stdout.split()
    return docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}")


def docker_taskset(image: str, token: str, **extra: Any) -> dict[str, Any]:
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    provider_kwargs = {"image": image, "labels": labels, **extra.pop("provider_kwargs", {})}
    return {
        "env": "test/guess-env",
        "use_docker": True,
        "startup_timeout": 180,
        "provider_kwargs": provider_kwargs,
        **extra,
    }


def test_episodes_run_in_containers_that_are_removed_at_the_end(image: str, guess_pkg: str, token: str) -> None:
    """Four concurrent episodes on a one-session env: the pool runs two containers (its
    `max_servers`), learns each one's capacity, and removes both at the end."""
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, docker_taskset(image, token, max_servers=2))

        async def main() -> tuple[list[Any], list[str], list[int | None]]:
            async with env.serving():
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 4))
                return episodes, containers(token), [s.capacity for s in env.pool.servers]

        episodes, running, capacities = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    assert len(running) == 2 and len(capacities) == 2 and 1 in capacities, (running, capacities)
    assert containers(token) == []


@pytest.mark.parametrize("path", ["exception", "cancellation"])
def test_no_container_left_after_a_failed_or_cancelled_run(image: str, guess_pkg: str, token: str, path: str) -> None:
    env = load_env(guess_pkg, docker_taskset(image, token))
    running: list[list[str]] = []

    async def main() -> None:
        async with env.serving():
            running.append(containers(token, running_only=True))
            if path == "exception":
                raise RuntimeError("boom")
            current = asyncio.current_task()
            assert current is not None
            current.cancel()
            await asyncio.sleep(1)
            raise AssertionError("not cancelled")

    # Exactly the error raised inside the run, or the cancellation: not a failed launch.
    with pytest.raises(RuntimeError, match="^boom$") if path == "exception" else pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    # The launch had started: one container was running inside `serving()`; then none is left.
    assert len(running) == 1 and len(running[0]) == 1, running
    assert containers(token) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_no_container_left_after_vf_eval_is_signalled(
    image: str, guess_pkg: str, token: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """A real `vf-eval` is signalled while its episode waits on the model."""

    def slow(messages: list[dict]) -> str:
        time.sleep(60)
        return "7"

    model = ScriptedChatModel(slow)
    with serve_app(model) as model_url:
        proc = start_eval(guess_pkg, model_url=str(model_url), out_dir=tmp_path, taskset=docker_taskset(image, token))
        try:
            assert wait_for(lambda: len(model.requests) >= 1, 240), "episode never reached the model"
            assert len(containers(token)) == 1
            proc.send_signal(sig)
            proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert wait_for(lambda: containers(token) == [], 60), containers(token)


def test_a_missing_image_is_one_line_before_any_episode(image: str, guess_pkg: str, token: str) -> None:
    env = load_env(guess_pkg, docker_taskset("openenvgen-test-missing:nope", token))

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    message = str(info.value)
    assert message.startswith(
        "use_docker: image openenvgen-test-missing:nope is not on this machine and cannot be pulled: "
    )
    assert "\n" not in message
    assert containers(token) == []


def test_a_container_gets_only_the_variables_the_run_names(
    image: str, guess_pkg: str, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of the trainer's environment reaches a container but `pass_env` (by name: its
    value is not on the `docker run` command line) and `env_vars`; episodes play as before."""
    secret, named = f"trainer-secret-{uuid.uuid4().hex}", f"named-{uuid.uuid4().hex}"
    monkeypatch.setenv("SOME_TRAINER_SECRET", secret)
    monkeypatch.setenv("PASSED_BY_NAME", named)
    taskset = docker_taskset(image, token, provider_kwargs={"env_vars": {"GIVEN": "value"}})
    env = load_env(guess_pkg, {**taskset, "pass_env": ["PASSED_BY_NAME"]})
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> tuple[Any, list[str]]:
            async with env.serving():
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                inspected = docker_images.docker("inspect", "--format", "{{json .Config.Env}}", *containers(token))
                return episode, json.loads(inspected.stdout)

        episode, variables = asyncio.run(main())
    assert outcome(episode) == (True, "env_done", 1.0)
    assert f"PASSED_BY_NAME={named}" in variables and "GIVEN=value" in variables
    assert not any(secret in v or v.startswith("SOME_TRAINER_SECRET") for v in variables)
    assert containers(token) == []


@pytest.mark.timeout(900)
def test_a_container_that_dies_while_starting_is_reported_with_its_log(image: str, guess_pkg: str, token: str) -> None:
    # A startup timeout far past the test's own (pytest-timeout): only the exit itself,
    # noticed while waiting, can end this launch in time.
    taskset = docker_taskset(image, token, provider_kwargs={"env_vars": {"GUESS_ENV_CRASH": "1"}})
    env = load_env(guess_pkg, {**taskset, "startup_timeout": 3600})

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    message = str(info.value)
    assert message.startswith(
        "test/guess-env (docker): server exited with code 1 while starting (to try: base_url for a server "
        "already running (`--base-url URL`), or the UV launch (without use_docker)); last lines of its log:\n"
    )
    assert "crashing on purpose" in message
    assert containers(token) == []


def test_a_container_that_dies_is_replaced(
    image: str, guess_pkg: str, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="openenvgen_runtime")
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, docker_taskset(image, token, max_servers=1))

        async def main() -> tuple[list[Any], str, str, list[str]]:
            async with env.serving():
                (first,) = env.pool.servers
                (victim,) = containers(token)
                docker_images.docker("kill", victim)
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline:
                    urls = [s.url for s in env.pool.servers]
                    if urls and urls != [first.url]:
                        break
                    await asyncio.sleep(0.2)
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in env.taskset))
                return episodes, first.url, env.pool.servers[0].url, containers(token)

        episodes, old_url, new_url, running = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)]
    assert new_url != old_url and len(running) == 1
    (warning,) = [r.getMessage() for r in caplog.records if "died (exit code" in r.getMessage()]
    # Named by its relay's URL without the token (the run's credential).
    assert f"server at {for_people(old_url)} died (exit code 137); replacing it; last lines of its log:" in warning
    assert old_url.rsplit("/", 1)[1] not in caplog.text
    assert containers(token) == []

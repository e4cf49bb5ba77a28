"""Fleets that survive dead servers, and launches that say what they do.

Real OpenEnv servers on loopback (in-thread, or in a subprocess where one must be
SIGKILLed), episodes through verifiers' own Env API or a real `vf-eval`: a server killed
mid-run loses only the episodes in flight on it (and retries rerun those elsewhere), a
down server returns when healthy, an all-down fleet fails in bounded time with one line,
a launched server that dies is replaced with its log tail, and launch progress and
failures reach `vf-eval`'s output as single lines.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_servers.ports import free_port
from openenvgen_testsupport.adapters import (
    launch_error,
    load_env,
    marked_processes,
    model_context,
    outcome,
    uv_taskset,
)
from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

pytestmark = pytest.mark.rollout

WORDLE_WIN = Script(["[slate]", "[crane]"])


def load_with_retries(package_id: str, taskset: dict[str, Any], retries: int) -> Any:
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config = {"taskset": {"id": package_id, **taskset}, "retries": {"max_retries": retries}}
    return load_environment(resolve_env_config(config))


async def run_batch(env: Any, model_url: str, repeat: int, concurrency: int) -> list[Any]:
    """Episodes inside an already-started `serving()`, at most `concurrency` at once, each
    with verifiers' whole-episode retries (`--env.retries`), as vf-eval runs them."""
    ctx = model_context(model_url)
    gate = asyncio.Semaphore(concurrency)
    slots = [slot for task in env.taskset for slot in env.slots(task, repeat)]
    return await asyncio.gather(*(env.run_slot(slot, ctx, semaphore=gate) for slot in slots))


def pool_server(env: Any, url: str) -> Any:
    return next(s for s in env.pool.servers if s.url == url)


def messages(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if needle in r.getMessage()]


@pytest.mark.parametrize("retries", [0, 2])
def test_a_server_killed_mid_run_loses_only_its_in_flight_episodes(
    wordle_pkg: str, retries: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Three servers, eighteen episodes; one server is SIGKILLed a quarter of the way in,
    while one of its episodes waits for the model. Without retries only the episodes in
    flight on it fail (as env_lost); with retries every episode ends ok. The dead server is
    reported down once."""
    caplog.set_level(logging.INFO, logger="openenvgen_runtime")
    with (
        serve_app_subprocess(
            "openenvgen_testsupport.fixture_envs:make_tagged_wordle_app",
            env={"WORDLE_FIXTURE_TAG": "doomed"},
            factory=True,
            ready_path="/health",
        ) as doomed,
        serve_app(make_wordle_app(), ready_path="/health") as second,
        serve_app(make_wordle_app(), ready_path="/health") as third,
    ):
        env = load_with_retries(wordle_pkg, {"base_url": [str(doomed), str(second), str(third)]}, retries)
        in_flight: list[int] = []

        def reply(history: list[dict]) -> str:
            # Killed while answering an episode on it, so that episode's next step must fail.
            if len(model.requests) >= 8 and not in_flight and "(server doomed)" in str(history):
                in_flight.append(pool_server(env, str(doomed)).active)
                doomed.kill()
            return WORDLE_WIN.reply_for(history)

        model = ScriptedChatModel(reply)
        with serve_app(model) as model_url:

            async def main() -> tuple[list[Any], str | None]:
                async with env.serving():
                    episodes = await run_batch(env, str(model_url), repeat=18, concurrency=6)
                    return episodes, pool_server(env, str(doomed)).down

            episodes, doomed_state = asyncio.run(main())
    assert in_flight and in_flight[0] >= 1, "the killed server held no session: the test proves nothing"
    failed = [outcome(e) for e in episodes if not e.ok]
    if retries:
        assert failed == []
    else:
        assert 1 <= len(failed) <= in_flight[0], (failed, in_flight)
        assert {stop for _, stop, _ in failed} == {"env_lost"}
    assert sum(e.ok for e in episodes) == 18 - len(failed)
    assert doomed_state is not None
    assert len(messages(caplog, f"{doomed} is down")) == 1


def test_a_down_server_is_routed_around_and_returns_when_healthy(
    wordle_pkg: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="openenvgen_runtime")
    port = free_port()
    model = ScriptedChatModel(WORDLE_WIN)
    with serve_app(model) as model_url, serve_app(make_wordle_app(), ready_path="/health") as steady:
        flaky_url = f"http://127.0.0.1:{port}"
        env = load_env(wordle_pkg, {"base_url": [flaky_url, str(steady)]})

        # One serving() across the outage, so the same pool sees the server go and come back.
        async def outage() -> tuple[list[Any], list[Any], str | None, str | None]:
            with serve_app(make_wordle_app(), port=port, ready_path="/health") as first:
                async with env.serving():
                    first.stop()  # gone after start: its first reset fails, the episode moves on
                    during = await run_batch(env, str(model_url), repeat=4, concurrency=2)
                    down = pool_server(env, flaky_url).down
                    with serve_app(make_wordle_app(), port=port, ready_path="/health"):
                        deadline = time.monotonic() + 15
                        while pool_server(env, flaky_url).down and time.monotonic() < deadline:
                            await asyncio.sleep(0.2)
                        back = pool_server(env, flaky_url).down
                        after = await run_batch(env, str(model_url), repeat=4, concurrency=4)
                    return during, after, down, back

        during, after, down, back = asyncio.run(outage())
    assert [outcome(e) for e in during + after] == [(True, "env_done", 1.0)] * 8
    assert down == "connection refused"
    assert back is None
    assert len(messages(caplog, f"{flaky_url} is down")) == 1
    assert len(messages(caplog, f"{flaky_url} is back")) == 1


def test_every_server_down_fails_episodes_in_bounded_time_with_one_line(wordle_pkg: str) -> None:
    model = ScriptedChatModel(WORDLE_WIN)
    with serve_app(model) as model_url:
        with serve_app(make_wordle_app(), ready_path="/health") as server:
            url = str(server)
            env = load_env(wordle_pkg, {"base_url": [url], "unavailable_timeout": 2})

            async def main() -> list[Any]:
                async with env.serving():
                    server.stop()
                    # Bounded by `unavailable_timeout` (the message names it); this
                    # generous limit only turns a hang into a failure.
                    return await asyncio.wait_for(run_batch(env, str(model_url), repeat=2, concurrency=2), 120)

            episodes = asyncio.run(main())
    assert [e.ok for e in episodes] == [False, False]
    for episode in episodes:
        message = episode.errors[-1].message
        assert message.endswith(f"LaunchError: no healthy server after 2s: {url} (connection refused)"), message
    assert len(model.requests) == 0


@pytest.mark.parametrize(
    ("fleet", "error"),
    [
        (["http://127.0.0.1:8001", "http://127.0.0.1:8001/"], "http://127.0.0.1:8001 is listed twice"),
        (["http://127.0.0.1:8001", "127.0.0.1:8002"], "'127.0.0.1:8002' is not an http(s) URL"),
        (["http://127.0.0.1:80x1"], "'http://127.0.0.1:80x1' is not an http(s) URL"),
    ],
)
def test_a_bad_fleet_is_one_line_before_any_episode(wordle_pkg: str, fleet: list[str], error: str) -> None:
    env = load_env(wordle_pkg, {"base_url": fleet})

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    assert error in str(info.value) and "\n" not in str(info.value)


def test_the_startup_timeout_is_one_setting(guess_pkg: str) -> None:
    env = load_env(guess_pkg, {"env": "test/guess-env", "provider_kwargs": {"startup_timeout": 30}})
    with pytest.raises(
        LaunchError, match=r"provider_kwargs.startup_timeout is not a provider option: set `startup_timeout`"
    ):
        asyncio.run(env.start())


def test_a_launched_server_that_dies_is_replaced_with_its_log_tail(
    guess_pkg: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="openenvgen_runtime")
    marker = uuid.uuid4().hex
    env = load_env(guess_pkg, uv_taskset(marker, max_servers=1))
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> tuple[list[Any], str, str]:
            async with env.serving():
                (first,) = env.pool.servers
                for pid in marked_processes(marker):
                    os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline:
                    urls = [s.url for s in env.pool.servers]
                    if urls and urls != [first.url]:
                        break
                    await asyncio.sleep(0.2)
                episodes = await run_batch(env, str(model_url), repeat=2, concurrency=2)
                return episodes, first.url, env.pool.servers[0].url

        episodes, old_url, new_url = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
    assert new_url != old_url
    (warning,) = messages(caplog, "died (exit code")
    # Each server is named by its relay's URL with the token, the run's credential, left out.
    assert f"server at {old_url.rsplit('/', 1)[0]}/… died" in warning, warning
    tokens = [url.rsplit("/", 1)[1] for url in (old_url, new_url)]
    assert not [r.getMessage() for r in caplog.records if any(t in r.getMessage() for t in tokens)]
    assert "replacing it; last lines of its log:" in warning
    # The tail is the dead server's own log: it opens with the command that started it (serving
    # the socket the runtime made, passed as a descriptor).
    command = f"$ uv run --isolated --project {UV_FIXTURE_PROJECT} -- uvicorn {UV_FIXTURE_APP} --fd "
    first_line = warning.split("last lines of its log:\n", 1)[1].splitlines()[0]
    assert first_line.startswith(command), warning
    assert len(messages(caplog, "(uv) ready in")) == 2
    assert marked_processes(marker) == []


def test_a_startup_timeout_reports_the_servers_log_tail(guess_pkg: str, tmp_path: Path) -> None:
    # A server that writes a line, then never answers: Python runs `sitecustomize` first.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys, time\nprint('warming a cache that never warms', file=sys.stderr, flush=True)\ntime.sleep(600)\n"
    )
    marker = uuid.uuid4().hex
    env = load_env(guess_pkg, uv_taskset(marker, startup_timeout=25, env_vars={"PYTHONPATH": str(tmp_path)}))

    message = str(launch_error(env))
    # The relay's URL, its token (the run's credential) left out.
    ready = r"test/guess-env \(uv\): server not ready after 25s at http://127\.0\.0\.1:\d+/… \(to try"
    assert re.match(ready, message), message
    assert "; last lines of its log:\n" in message
    assert message.rstrip().endswith("warming a cache that never warms"), message
    assert marked_processes(marker) == []


def test_vf_eval_shows_launch_progress_and_a_failed_launch_as_one_line(
    guess_pkg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # vf-eval imports the generated package
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:
        ok = run_eval(
            guess_pkg, model_url=str(model_url), out_dir=tmp_path / "ok", taskset=uv_taskset(uuid.uuid4().hex)
        )
        crash = run_eval(
            guess_pkg,
            model_url=str(model_url),
            out_dir=tmp_path / "crash",
            taskset=uv_taskset(uuid.uuid4().hex, env_vars={"GUESS_ENV_CRASH": "1"}),
        )
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert ok.printed == [(1.0, "env_done")]
    assert "starting test/guess-env (uv) …" in ok.stderr
    assert "test/guess-env (uv) ready in " in ok.stderr
    assert crash.returncode != 0
    assert "Traceback" not in crash.stderr, crash.stderr[-3000:]
    (line,) = [line for line in crash.stderr.splitlines() if line.startswith("error: ")]
    # The one line says what to try: a running server, a local copy of the env, Docker.
    assert line.startswith(
        "error: test/guess-env (uv): server exited with code 1 while starting (to try: base_url for a server "
        "already running (`--base-url URL`), provider_kwargs.project_path for a local copy of the env, or "
        "use_docker); last lines of its log:"
    )
    assert "crashing on purpose" in crash.stderr.split(line, 1)[1]
    assert len(model.requests) == 1  # the crash run never reached the model

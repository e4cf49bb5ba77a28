"""Launch modes and cleanup: OpenEnv's UV provider starting a local env project, the Docker
provider's missing-daemon error, a crash reported as such, a launch that never blocks the event loop,
and no server process left behind on any path (process counts before and after)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path

import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport.adapters import (
    generate_from_server,
    launch_error,
    load_env,
    marked_processes,
    outcome,
    run_all,
    uv_taskset,
    wait_for,
)
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT
from openenvgen_testsupport.rollout import start_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout


@pytest.fixture(scope="module")
def guess_pkg(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Generate the package from the env launched once by hand with OpenEnv's UV provider."""
    from openenvgen_runtime.launching import launch

    options = {"project_path": str(UV_FIXTURE_PROJECT), "app": UV_FIXTURE_APP}
    provider = launch.make_provider("test/guess-env", options, mode="uv", timeout=240)
    try:
        (url,) = provider.launch()
        assert wait_for(lambda: _healthy(url), timeout=240), provider.log_tail()
        return generate_from_server("guess", url, tmp_path_factory.mktemp("pkgs"))
    finally:
        provider.stop()


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_uv_provider_pool_plays_single_session_env_and_cleans_up(guess_pkg: str) -> None:
    """Six concurrent episodes on a one-session env: the pool launches up to three servers
    through OpenEnv's UV provider, shares them, and stops every process at the end."""
    marker = uuid.uuid4().hex
    model = ScriptedChatModel(Script(['{"guess": 3}', "7"]))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, uv_taskset(marker, max_servers=3))
        episodes = asyncio.run(run_all(env, str(model_url), repeat=6, concurrency=6))
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 6
    assert marked_processes(marker) == []


def test_launch_does_not_block_the_event_loop(guess_pkg: str, tmp_path: Path) -> None:
    """The launched server cannot come up until a coroutine on the same event loop opens
    its start gate, and that coroutine opens it only after it has run again and again
    while the launch was in progress (its server process alive, `env.start()` not done).
    A launch that held the loop while it waits would never see its server ready."""
    marker = uuid.uuid4().hex
    gate = tmp_path / "gate"
    env = load_env(guess_pkg, uv_taskset(marker, env_vars={"GUESS_ENV_START_GATE": str(gate)}, startup_timeout=120))
    events: list[str] = []

    async def main() -> None:
        async def opener() -> None:
            alive = 0
            while alive < 3:  # three separate turns of the loop with the server process up
                await asyncio.sleep(0.05)
                if marked_processes(marker):
                    alive += 1
                    events.append("tick with the server process alive")
            events.append("gate opened")
            gate.touch()

        task = asyncio.create_task(opener())
        try:
            await env.start()
            events.append("start returned")
        finally:
            task.cancel()
            await env.stop()

    asyncio.run(main())
    assert events == ["tick with the server process alive"] * 3 + ["gate opened", "start returned"]
    assert marked_processes(marker) == []


def test_server_that_dies_while_starting_is_reported_at_once_with_its_log(guess_pkg: str) -> None:
    marker = uuid.uuid4().hex
    # A startup timeout far past the test's own (pytest-timeout): only the exit itself,
    # noticed while waiting, can end this launch in time.
    env = load_env(guess_pkg, uv_taskset(marker, env_vars={"GUESS_ENV_CRASH": "1"}, startup_timeout=3600))

    message = str(launch_error(env))
    assert "server exited with code 1 while starting" in message
    assert "crashing on purpose" in message
    assert marked_processes(marker) == []


def test_docker_without_a_daemon_fails_before_any_episode(
    guess_pkg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Point the docker CLI at a socket nobody listens on: no daemon, even where one runs.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-daemon.sock'}")
    env = load_env(guess_pkg, {"env": "test/guess-env", "use_docker": True})
    with pytest.raises(LaunchError, match="use_docker: no (Docker daemon answers|`docker` command)"):
        asyncio.run(env.start())


@pytest.mark.parametrize("path", ["exception", "cancellation"])
def test_no_server_left_after_a_failed_or_cancelled_run(guess_pkg: str, path: str) -> None:
    marker = uuid.uuid4().hex
    env = load_env(guess_pkg, uv_taskset(marker))
    running: list[list[int]] = []

    async def main() -> None:
        async with env.serving():
            running.append(marked_processes(marker))
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
    # The launch had started: its server was up inside `serving()`; then nothing is left.
    assert len(running) == 1 and running[0], running
    assert wait_for(lambda: marked_processes(marker) == [], timeout=15), marked_processes(marker)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_no_server_left_after_the_eval_process_is_signalled(
    guess_pkg: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """A real `vf-eval` run is signalled while its episode waits on the model."""
    marker = uuid.uuid4().hex

    def slow(messages: list[dict]) -> str:
        time.sleep(60)
        return "7"

    model = ScriptedChatModel(slow)
    with serve_app(model) as model_url:
        proc = start_eval(guess_pkg, model_url=str(model_url), out_dir=tmp_path, taskset=uv_taskset(marker))
        try:
            assert wait_for(lambda: len(model.requests) >= 1, timeout=180), "episode never reached the model"
            assert len(marked_processes(marker)) >= 1
            proc.send_signal(sig)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert wait_for(lambda: marked_processes(marker) == [], timeout=20), marked_processes(marker)


def test_a_users_label_cannot_take_the_runs_owner_label() -> None:
    """The reaper removes a run's containers and folders by its owner label: a user's
    `provider_kwargs.labels` of the same name is overridden, other labels are kept."""
    from openenvgen_runtime.config import AdapterConfig
    from openenvgen_runtime.launching.docker_cli import OWNER_LABEL
    from openenvgen_runtime.launching.launch import Launcher

    config = AdapterConfig(
        env="test/guess-env", use_docker=True, provider_kwargs={"labels": {OWNER_LABEL: "someone", "team": "rl"}}
    )
    launcher = Launcher(config, mcp=False)
    assert launcher.labels()[OWNER_LABEL] == launcher.owner != "someone"
    assert launcher.labels()["team"] == "rl"


def test_a_launcher_stopped_while_it_launches_leaves_no_server() -> None:
    """`stop()` (the pool closing) at several moments of a launch: before the provider
    is made, while its server starts, while it is awaited. A launch still under way then
    fails with one line and undoes itself, a later launch is refused, and no server
    process is left whatever the moment (the old launcher kept a provider made after
    `stop()`, and a server started after it, running)."""
    import httpx

    from openenvgen_runtime.config import AdapterConfig
    from openenvgen_runtime.launching.launch import Launcher

    async def stop_during_launch(delay: float) -> str:
        marker = uuid.uuid4().hex
        launcher = Launcher(AdapterConfig(**uv_taskset(marker)), mcp=False)
        async with httpx.AsyncClient(trust_env=False) as http:
            launching = asyncio.create_task(launcher.launch(http))
            await asyncio.sleep(delay)
            await launcher.stop()
            try:
                servers = await launching
                result = f"launched {len(servers)} before stop"
            except LaunchError as e:
                result = str(e)
            with pytest.raises(LaunchError, match="^server pool is closed$"):
                await launcher.launch(http)
        assert wait_for(lambda: marked_processes(marker) == [], timeout=20), (delay, result, marked_processes(marker))
        return result

    results = {delay: asyncio.run(stop_during_launch(delay)) for delay in (0.0, 0.05, 0.3, 1.0, 3.0)}
    print("launcher stopped at", results)
    assert all(r == "server pool is closed" or r.startswith("launched ") for r in results.values()), results
    assert results[0.0] == "server pool is closed"

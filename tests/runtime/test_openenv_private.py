"""Every private name of OpenEnv the runtime relies on (`openenvgen_runtime.openenv_private`),
one test each: an OpenEnv upgrade that renames, moves or changes one fails here, naming it
and the installed OpenEnv version, instead of failing a launch somewhere else."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime import openenv_private
from openenvgen_servers.processes import find_uv

OPENENV = version("openenv")


def changed(name: str, detail: str) -> str:
    return (
        f"openenv {OPENENV} changed its private `{name}`, which openenvgen_runtime.openenv_private relies on: {detail}"
    )


def uv_module_attribute(name: str) -> object:
    module = openenv_private.openenv_module(openenv_private.UV_PROVIDER_MODULE)
    if not hasattr(module, name):
        pytest.fail(changed(f"uv_provider.{name}", f"{openenv_private.UV_PROVIDER_MODULE} has no `{name}`"))
    return getattr(module, name)


WEB_UI_OPTIONAL = f"""
import sys
sys.modules[{openenv_private.WEB_UI_MODULE!r}] = None
import openenv.core.env_server as env_server
assert env_server.create_web_interface_app is None, "env_server imported its web UI anyway"
assert "gradio" not in sys.modules, "env_server imported Gradio without its web UI module"
print("ok")
"""


def test_the_web_ui_module_exists_and_is_optional() -> None:
    """`WEB_UI_MODULE`: the module that pulls in Gradio, which `env_server` imports only if it can."""
    name = openenv_private.WEB_UI_MODULE
    spec_script = f"import importlib.util; print(importlib.util.find_spec({name!r}) is not None)"
    found = subprocess.run([sys.executable, "-c", spec_script], capture_output=True, text=True, timeout=300)
    assert found.stdout.strip() == "True", changed(name, f"no such module ({found.stderr.strip()[-500:]})")
    proc = subprocess.run([sys.executable, "-c", WEB_UI_OPTIONAL], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", changed(name, f"it is no longer optional: {proc.stderr.strip()[-1000:]}")


def test_git_url_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """`uv_provider.GIT_URL_PREFIX`: a `project_path` starting with it is a git URL that
    `UVProvider` keeps as given (and `_clone_git_project` clones)."""
    prefix = uv_module_attribute("GIT_URL_PREFIX")
    now = changed("uv_provider.GIT_URL_PREFIX", f"now {prefix!r}")
    assert prefix == openenv_private.git_url_prefix() == "git+", now
    uv = find_uv()
    assert uv is not None
    # UVProvider's constructor runs the `uv` on PATH.
    monkeypatch.setenv("PATH", f"{Path(uv).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    UVProvider = openenv_private.openenv_module("openenv.core.containers.runtime").UVProvider
    spec = "git+https://example.invalid/env"
    kept = UVProvider(project_path=spec).project_path
    assert kept == spec, changed("uv_provider.GIT_URL_PREFIX", f"UVProvider turned {spec!r} into {kept!r}")


def test_clone_git_project(tmp_path: Path) -> None:
    """`uv_provider._clone_git_project(git_url, timeout_s)`: a `git+URL` project cloned to a
    new folder, its path returned."""
    clone = uv_module_attribute("_clone_git_project")
    params = list(inspect.signature(clone).parameters)  # type: ignore[arg-type]
    assert params == ["git_url", "timeout_s"], changed("uv_provider._clone_git_project", f"now takes {params}")
    repo = tmp_path / "env"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'env'\n")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "env"], check=True)
    folder = Path(openenv_private.clone_git_project(f"git+{repo.as_uri()}", 60))
    try:
        assert (folder / "pyproject.toml").read_text() == "[project]\nname = 'env'\n", changed(
            "uv_provider._clone_git_project", f"{folder} holds no clone of the project"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


STEP_PRIVATES = ("_ws", "_ws_loop", "_execution_mode", "_message_timeout", "_step_payload", "_parse_result")


async def _outcome(step: Any) -> tuple[Any, ...]:
    """What awaiting a step gave: its observation, reward and done, or its error."""
    try:
        result = await step
    except Exception as e:
        return type(e).__name__, str(e)
    return result.observation, result.reward, result.done


def test_step_is_the_clients_step(wordle_server: str) -> None:
    """`step`: what `client.step` gives, for a valid action and for one the server refuses,
    on a connected client; and `client.step` itself on one not connected yet."""
    import asyncio

    client_class = openenv_private.openenv_module("openenv.core").GenericEnvClient

    async def play() -> None:
        ours, theirs = client_class(base_url=wordle_server), client_class(base_url=wordle_server)
        try:
            action = {"message": "[crane]"}
            first = await _outcome(openenv_private.step(ours, action)), await _outcome(theirs.step(action))
            assert first[0] == first[1]
            for client in (ours, theirs):
                await client.reset(max_guesses=10)
                missing = [name for name in STEP_PRIVATES if not hasattr(client, name)]
                assert not missing, changed("EnvClient", f"it has no {missing}")
            for action in ({"message": "[slate]"}, {"message": "[crane]"}, {"guess": "x"}):
                a, b = await _outcome(openenv_private.step(ours, action)), await _outcome(theirs.step(action))
                assert a == b, changed("EnvClient._step_async", f"{a} != {b}")
            assert a[0] == "RuntimeError" and "VALIDATION_ERROR" in a[1], a
        finally:
            await ours.close()
            await theirs.close()

    asyncio.run(play())


def _nap_app() -> Any:
    """A real OpenEnv server whose step takes as long as the action asks."""
    import time

    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class NapAction(Action):
        seconds: float

    class NapObservation(Observation):
        slept: float = 0.0

    class NapEnvironment(Environment[NapAction, NapObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> NapObservation:
            return NapObservation()

        def step(self, action: NapAction, timeout_s: float | None = None, **kwargs: Any) -> NapObservation:
            time.sleep(action.seconds)
            return NapObservation(slept=action.seconds)

        @property
        def state(self) -> State:
            return self._state

    return create_app(NapEnvironment, NapAction, NapObservation, env_name="nap", max_concurrent_envs=4)


def test_step_times_out_as_the_clients_step_does() -> None:
    """`step` keeps the client's `message_timeout_s` on every reply (`reply_deadline`): a
    reply in time is the client's result, and a late one is a TimeoutError, as with
    `client.step`; a reply after an earlier reply's deadline, in time itself, is no timeout."""
    import asyncio

    from openenvgen_testsupport.servers import serve_app

    client_class = openenv_private.openenv_module("openenv.core").GenericEnvClient

    async def play(url: str) -> None:
        ours = client_class(base_url=url, message_timeout_s=1.0)
        theirs = client_class(base_url=url, message_timeout_s=1.0)
        try:
            for client in (ours, theirs):
                await client.reset()
            naps = (0.0, 0.6, 0.6)  # the last reply comes after the first one's deadline
            a = [await _outcome(openenv_private.step(ours, {"seconds": seconds})) for seconds in naps]
            b = [await _outcome(theirs.step({"seconds": seconds})) for seconds in naps]
            assert a == b == [({"slept": seconds, "metadata": {}}, None, False) for seconds in naps]
            assert ours._ws in openenv_private._deadlines  # the runtime's own way, not `client.step`
            late = {"seconds": 2.0}
            a, b = await _outcome(openenv_private.step(ours, late)), await _outcome(theirs.step(late))
            assert (a[0], b[0]) == ("TimeoutError", "TimeoutError"), (a, b)
        finally:
            await ours.close()
            await theirs.close()

    with serve_app(_nap_app(), ready_path="/health") as url:
        asyncio.run(play(str(url)))

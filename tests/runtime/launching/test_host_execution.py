"""What a launched server may see of the trainer: a code-executing package refuses the UV
(host) launch unless the run allows it; allowed, the model's code runs in a server that
holds none of the trainer's environment but what the run names (`pass_env`); a catalog
env's missing key is one warning line. Real servers: the code-running fixture env under
OpenEnv's UV provider, its own processes read from /proc."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport.adapters import (
    generate_from_server,
    launch_error,
    load_env,
    marked_processes,
    model_context,
    outcome,
)
from openenvgen_testsupport.local_user import REFUSED, other_user, probe_as
from openenvgen_testsupport.paths import UV_CODE_FIXTURE_APP, UV_CODE_FIXTURE_PROJECT
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout

SECRET_NAME = "SOME_TRAINER_SECRET"
SECRET = f"trainer-secret-{uuid.uuid4().hex}"
PRINT_SECRET = json.dumps({"code": f"import os\nprint('secret:', os.environ.get({SECRET_NAME!r}), 'done')"})


@pytest.fixture(scope="module")
def code_app() -> Any:
    sys.path.insert(0, str(UV_CODE_FIXTURE_PROJECT))
    try:
        from code_env.server import app
    finally:
        sys.path.remove(str(UV_CODE_FIXTURE_PROJECT))
    return app


@pytest.fixture(scope="module")
def code_pkg(code_app: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The code env's package, generated with `--executes-code`."""
    with serve_app(code_app, ready_path="/health") as url:
        return generate_from_server("runcode", str(url), tmp_path_factory.mktemp("pkgs"), executes_code=True)


def uv_code_taskset(marker: str, **extra: Any) -> dict[str, Any]:
    env_vars = {"OPENENVGEN_TEST_MARKER": marker}
    provider_kwargs = {"project_path": str(UV_CODE_FIXTURE_PROJECT), "app": UV_CODE_FIXTURE_APP, "env_vars": env_vars}
    return {"env": "test/code-env", "startup_timeout": 240, "provider_kwargs": provider_kwargs, **extra}


def test_the_uv_launch_of_a_code_executing_package_is_refused_in_one_line(code_pkg: str) -> None:
    marker = uuid.uuid4().hex
    env = load_env(code_pkg, uv_code_taskset(marker))

    message = str(launch_error(env))
    assert "\n" not in message
    assert "runs model-written code" in message
    assert "allow_host_execution = true" in message and "use_docker" in message
    assert marked_processes(marker) == []  # refused before any server started


def test_a_base_url_fleet_of_a_code_executing_package_is_not_refused(code_pkg: str, code_app: Any) -> None:
    model = ScriptedChatModel(Script(['{"code": "print(\'done\')"}']))
    with serve_app(model) as model_url, serve_app(code_app, ready_path="/health") as env_url:
        env = load_env(code_pkg, {"base_url": str(env_url)})

        async def main() -> Any:
            async with env.serving():
                return await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))

        episode = asyncio.run(main())
    assert outcome(episode) == (True, "env_done", 1.0)


def _run_printing_the_secret(code_pkg: str, taskset: dict[str, Any], marker: str) -> tuple[Any, list[bytes]]:
    """One allowed UV episode whose code prints the secret; the episode and the environments
    of the server's processes, read while it ran."""
    model = ScriptedChatModel(Script([PRINT_SECRET]))
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[Any, list[bytes]]:
            async with env.serving():
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                environs = []
                for pid in marked_processes(marker):
                    try:
                        environs.append(Path(f"/proc/{pid}/environ").read_bytes())
                    except OSError:
                        continue
                return episode, environs

        return asyncio.run(main())


def test_allowed_model_code_gets_no_trainer_variable_unless_the_run_names_it(
    code_pkg: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET)
    caplog.set_level(logging.INFO)
    marker = uuid.uuid4().hex
    episode, environs = _run_printing_the_secret(code_pkg, uv_code_taskset(marker, allow_host_execution=True), marker)
    assert outcome(episode) == (True, "env_done", 1.0)
    text = episode.model_dump_json()
    assert "secret: None done" in text  # the code ran, and read nothing
    assert SECRET not in text and SECRET not in caplog.text
    assert environs and not any(SECRET.encode() in e for e in environs)
    assert marked_processes(marker) == []

    named = uuid.uuid4().hex
    passed = uv_code_taskset(named, allow_host_execution=True, pass_env=[SECRET_NAME])
    episode, environs = _run_printing_the_secret(code_pkg, passed, named)
    assert outcome(episode) == (True, "env_done", 1.0)
    assert f"secret: {SECRET} done" in episode.model_dump_json()
    assert environs and all(f"{SECRET_NAME}={SECRET}".encode() in e for e in environs)
    assert marked_processes(named) == []


def test_a_catalog_envs_missing_key_is_one_warning_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """jupyter's server needs E2B_API_KEY (the catalog's server_env): without it the launch
    says so once, in one line, before its server starts (here one that cannot start)."""
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    caplog.set_level(logging.WARNING)
    env = load_env("jupyter-openenv", {"provider_kwargs": {"project_path": str(tmp_path)}, "startup_timeout": 60})

    launch_error(env)
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "E2B_API_KEY" in r.getMessage()
    ]
    assert warnings == [
        "openenv/jupyter_env: E2B_API_KEY not set in this environment (the env's server needs it); "
        "its server starts without it"
    ]


def test_pass_env_is_a_taskset_option_of_every_mode(code_pkg: str) -> None:
    """From the command line a list of names arrives as one string; in `provider_kwargs` it is
    an error that says where it goes, before anything starts."""
    config = load_env(code_pkg, {"pass_env": "E2B_API_KEY, HTTPS_PROXY"}).taskset.config
    assert config.pass_env == ["E2B_API_KEY", "HTTPS_PROXY"]
    assert load_env(code_pkg, {"pass_env": '["A"]'}).taskset.config.pass_env == ["A"]
    env = load_env(code_pkg, {"provider_kwargs": {"pass_env": ["A"]}, "allow_host_execution": True})
    with pytest.raises(LaunchError, match=r"provider_kwargs.pass_env is not a provider option: set `pass_env` on the"):
        asyncio.run(env.start())


def test_another_local_user_cannot_reach_the_uv_server(code_pkg: str, pytestconfig: pytest.Config) -> None:
    """As a second OS user that sees the run's port (not its URL): every reset, step, schema
    read and WebSocket is refused by the relay, and none reaches the server (its step code,
    which would write a file as the trainer's user, never runs); the server has no port of
    its own to find in `ps`; the run's episodes play on."""
    marker = uuid.uuid4().hex
    planted = Path(f"/tmp/openenvgen-other-user-{marker}")
    code = f"open({str(planted)!r}, 'w').write('ran')"
    model = ScriptedChatModel(Script(['{"code": "print(\'done\')"}']))
    with other_user(pytestconfig) as user, serve_app(model) as model_url:
        env = load_env(code_pkg, uv_code_taskset(marker, allow_host_execution=True))

        async def main() -> tuple[str, dict[str, str], list[str], str, Any]:
            async with env.serving():
                (server,) = env.pool.servers
                url = await env.pool.session_url(server)
                found = await asyncio.to_thread(probe_as, user, url, code)
                lines = [Path(f"/proc/{pid}/cmdline").read_bytes().decode() for pid in marked_processes(marker)]
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                assert server.provider is not None
                return url, found, lines, server.provider.log_tail(200), episode

        url, found, lines, log, episode = asyncio.run(main())
    assert all(status.startswith(REFUSED) for status in found.values()), found
    assert url.startswith("http://127.0.0.1:") and len(url.rsplit("/", 1)[1]) >= 32
    assert not planted.exists()
    assert "/reset" not in log and "/step" not in log and "/health" in log  # the run's probes alone reached it
    assert lines and not any("--port" in line or "--host" in line for line in lines), lines
    assert outcome(episode) == (True, "env_done", 1.0)

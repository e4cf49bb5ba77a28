"""Generate adapter packages from live fixture servers and run their episodes in-process
through verifiers' own Env API (`serving()` + `run_episode`), the path vf-eval takes."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from openenvgen_testsupport.paths import OPENENV_GEN, UV_CODE_FIXTURE_PROJECT, UV_FIXTURE_APP, UV_FIXTURE_PROJECT

_ids = itertools.count()


def generate_from_server(stem: str, base_url: str, root: Path, **flags: str | bool) -> str:
    """`openenv-gen` against a live server (`flags`: `--key value`, or `--key` for True); the
    package becomes importable. Returns its id."""
    name = f"{stem}_{next(_ids)}"
    out = root / name
    args = [OPENENV_GEN, name, "--base-url", base_url, "--out", str(out)]
    for key, value in flags.items():
        flag = f"--{key.replace('_', '-')}"
        args += [flag] if value is True else [] if value is False else [flag, value]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    sys.path.insert(0, str(out))
    return f"{name.replace('_', '-')}-openenv"


def load_env(package_id: str, taskset: dict[str, Any] | None = None, player: dict[str, Any] | None = None) -> Any:
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    config: dict[str, Any] = {"taskset": {"id": package_id, **(taskset or {})}}
    if player:
        config["player"] = player
    return load_environment(resolve_env_config(config))


def model_context(model_url: str) -> Any:
    import verifiers.v1 as vf

    return vf.ModelContext(
        client=vf.EvalClientConfig(base_url=f"{model_url}/v1"),
        model="scripted-model",
        sampling=vf.SamplingConfig(),
    )


async def run_all(env: Any, model_url: str, repeat: int = 1, concurrency: int = 8) -> list[Any]:
    """Every task `repeat` times, at most `concurrency` at once, inside one `serving()`."""
    ctx = model_context(model_url)
    tasks = list(env.taskset) * repeat
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Any) -> Any:
        async with gate:
            return await env.run_episode(task, ctx)

    async with env.serving():
        return await asyncio.gather(*(one(t) for t in tasks))


def outcome(episode: Any) -> tuple[bool, str | None, float]:
    (trace,) = episode.traces
    return episode.ok, trace.stop_condition, trace.rewards["openenv_reward"].score


def generate_uv_fixture_package(root: Path) -> str:
    """The UV fixture env's package, generated from its app served in this process."""
    from openenvgen_testsupport.servers import serve_app

    sys.path.insert(0, str(UV_FIXTURE_PROJECT))
    try:
        from guess_env.server import app
    finally:
        sys.path.remove(str(UV_FIXTURE_PROJECT))
    with serve_app(app, ready_path="/health") as url:
        return generate_from_server("guess", str(url), root)


def generate_code_env_package(root: Path) -> str:
    """The code-executing fixture env's package (`--executes-code`: sandboxed by default),
    generated from its app served in this process."""
    from openenvgen_testsupport.servers import serve_app

    sys.path.insert(0, str(UV_CODE_FIXTURE_PROJECT))
    try:
        from code_env.server import app
    finally:
        sys.path.remove(str(UV_CODE_FIXTURE_PROJECT))
    with serve_app(app, ready_path="/health") as url:
        return generate_from_server("runcode", str(url), root, executes_code=True)


def launch_error(env: Any) -> BaseException:
    """The LaunchError that starting `env`'s servers raises (the env is stopped either way);
    the calling test fails if none is raised."""
    import pytest

    from openenvgen_runtime.launching.errors import LaunchError

    async def start_and_stop() -> None:
        try:
            await env.start()
        finally:
            await env.stop()

    with pytest.raises(LaunchError) as info:
        asyncio.run(start_and_stop())
    return info.value


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.1) -> bool:
    """Poll `predicate` until it holds or `timeout` seconds pass; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def uv_taskset(marker: str, **extra: Any) -> dict[str, Any]:
    """Taskset options that launch the UV fixture env with OpenEnv's UV provider; its
    processes carry `marker` in their environment (see `marked_processes`)."""
    env_vars = {"OPENENVGEN_TEST_MARKER": marker, **extra.pop("env_vars", {})}
    return {
        "env": "test/guess-env",
        "startup_timeout": extra.pop("startup_timeout", 240),
        "provider_kwargs": {"project_path": str(UV_FIXTURE_PROJECT), "app": UV_FIXTURE_APP, "env_vars": env_vars},
        **extra,
    }


def marked_processes(marker: str) -> list[int]:
    """PIDs whose environment carries `marker` (a launched uv process and the uvicorn it runs)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids

"""Episodes served the way RL training runs them, as P8, R6 and HOOKS-P8 all do: an env
server process running verifiers' `serve_env`, and this process as the orchestrator.

`env_config` is the `[env]` table each side is served with (ours, or the built-in OpenEnv
taskset; the package, seats and model of bench/vf_eval_runs.py); `env_server` starts the
server process (`python bench/served_runs.py --serve ...`, or a benchmark's own script
that calls `serve_main`) and stops it with everything it started; `client_tasks` is what
prime-rl's orchestrator sends (the taskset loaded client-side, each task's data dumped as
JSON); `play` keeps that many episodes in flight through one `EnvClient` and counts the
ok and successful ones (ok, and `openenv_reward` 1.0).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import eval_env, marked_pids

API_KEY_VAR = "SCRIPTED_API_KEY"


def env_config(adapter: str, url: str, tasks: int) -> dict[str, Any]:
    """The `[env]` table each side is served with."""
    from vf_eval_runs import PACKAGE_ID, PLAYERS

    resets = [{} for _ in range(tasks)]
    if adapter == "runtime":
        # As a user writes it: the package's own default `env` stays, `base_url` beside it.
        return {"taskset": {"id": PACKAGE_ID, "base_url": url, "resets": resets}, "player": PLAYERS["in-process"]}
    return {"taskset": {"id": "openenv", "base_url": url, "resets": resets}, "player": PLAYERS["null"]}


# --------------------------------------------------------------------------- the server side


def _log_setup() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(processName)s %(name)s %(levelname)s %(message)s")


def serve_main(config_file: str, workers: int, address: str) -> None:
    """The env-server process: `serve_env` exactly as a trainer's env server calls it."""
    from verifiers.v1.serve import serve_env

    serve_env(
        max_workers=workers,
        elastic=False,
        address=address,
        log_setup=_log_setup,
        config_data=json.loads(Path(config_file).read_text()),
    )


# --------------------------------------------------------------------------- the orchestrator side


@contextmanager
def env_server(
    config_data: dict[str, Any],
    workers: int,
    out_dir: Path,
    package_dir: Path,
    marker: str,
    *,
    script: Path | None = None,
    extra_args: Sequence[str] = (),
    env_extra: dict[str, str] | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The env-server process (`script --serve`, this module's by default, with `extra_args`
    and `env_extra` in its environment), stopped with everything it started on exit."""
    # Here, not at the top: the server process may run another tree's code (bench/baseline.py).
    from openenvgen_servers.processes import stop_process_group

    out_dir.mkdir(parents=True, exist_ok=True)
    config_file = out_dir / "env_config.json"
    config_file.write_text(json.dumps(config_data))
    address = f"ipc://{out_dir}/env.sock"
    env = eval_env(package_dir, **{marker: "1", API_KEY_VAR: "scripted", **(env_extra or {})})
    with open(out_dir / "server.log", "wb") as logfile:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(script or Path(__file__).resolve()),
                "--serve",
                str(config_file),
                "--workers",
                str(workers),
                "--address",
                address,
                *extra_args,
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield proc, address
        finally:
            if proc.poll() is None:
                stop_process_group(proc, grace=60)
            for pid in marked_pids(marker):  # anything the server left behind
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _outcome(episode: Any) -> tuple[bool, bool, str | None]:
    ok = bool(episode.ok)
    reward = None
    for trace in episode.traces:
        r = (trace.rewards or {}).get("openenv_reward")
        if r is not None:
            reward = r.score
    error = None
    if not ok:
        last = episode.last_error
        error = (
            (getattr(last, "type", None) or "error") + ": " + str(getattr(last, "message", last))[:160]
            if last
            else "not ok"
        )
    return ok, ok and reward == 1.0, error


async def play(address: str, task_data: list[dict[str, Any]], concurrency: int, model_url: str) -> dict[str, Any]:
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.serve import EnvClient
    from verifiers.v1.types import SamplingConfig

    client_config = EvalClientConfig(base_url=f"{model_url}/v1", api_key_var=API_KEY_VAR)
    client = EnvClient(address)
    gate = asyncio.Semaphore(concurrency)
    counts = {"ok": 0, "successful": 0, "in_flight": 0, "peak_in_flight": 0}
    errors: dict[str, int] = {}

    async def one(data: dict[str, Any]) -> None:
        async with gate:
            counts["in_flight"] += 1
            counts["peak_in_flight"] = max(counts["peak_in_flight"], counts["in_flight"])
            try:
                episode = await client.run(
                    client=client_config, model="scripted-model", sampling=SamplingConfig(), task_data=data
                )
                ok, success, error = _outcome(episode)
            except Exception as e:  # a failed request is a failed episode
                ok, success, error = False, False, f"{type(e).__name__}: {str(e)[:160]}"
            finally:
                counts["in_flight"] -= 1
            counts["ok"] += ok
            counts["successful"] += success
            if error:
                errors[error] = errors.get(error, 0) + 1

    try:
        await client.wait_for_server_startup(timeout=300, interval=0.5)
        started = time.perf_counter()
        await asyncio.gather(*(one(d) for d in task_data))
        wall = time.perf_counter() - started
    finally:
        await client.close()
    return {**counts, "wall_s": wall, "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5])}


def client_tasks(env: dict[str, Any], rollouts: int) -> list[dict[str, Any]]:
    """What prime-rl's orchestrator sends: the taskset loaded client-side, each task's data
    dumped as JSON, `rollouts` times."""
    import verifiers.v1 as vf
    from verifiers.v1.utils.loaders import resolve_env_config

    config = resolve_env_config(env)
    taskset = vf.load_taskset(config.taskset)
    return [task.data.model_dump(mode="json") for task in list(taskset) for _ in range(rollouts)]


def main() -> None:
    """`--serve CONFIG_JSON --workers N --address ADDRESS`: the env-server process."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", metavar="CONFIG_JSON", required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--address", required=True)
    ns = parser.parse_args()
    serve_main(ns.serve, ns.workers, ns.address)


if __name__ == "__main__":
    main()

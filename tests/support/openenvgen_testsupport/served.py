"""The training path, as prime-rl drives it, with verifiers' own serving API.

- the client (prime-rl's orchestrator) loads the taskset itself: `vf.load_taskset(config.taskset)`,
  `list(taskset)`, and ships each task as `task.data.model_dump(mode="json")`;
- the env server is verifiers' `serve_env(config_data=env_config_data(config), ...)` in its own
  spawned process: one in-process `EnvServer`, or a ZMQ broker over worker processes (a static
  pool or the elastic one, sized with `pool_serve_kwargs` as verifiers' own hosts do);
- each episode is `EnvClient.run(client=..., model=..., sampling=..., task_data=...)`.

Nothing here is a test: `bench/` can follow the same recipe (it must not import tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing as mp
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.configs.serve import ElasticPoolConfig, StaticPoolConfig, pool_serve_kwargs
from verifiers.v1.serve import EnvClient, env_config_data, serve_env
from verifiers.v1.utils.loaders import resolve_env_config

from openenvgen_testsupport.scripted_model import DEFAULT_MODEL_ID, message_text

STATIC_2 = StaticPoolConfig(num_workers=2)
ELASTIC = ElasticPoolConfig()


def env_config(package_id: str, taskset: dict[str, Any] | None = None, **env: Any) -> Any:
    """The env config a user writes (`[env]` with `[env.taskset]`), validated as verifiers does."""
    return resolve_env_config({"taskset": {"id": package_id, **(taskset or {})}, **env})


def client_tasks(config: Any) -> list[dict[str, Any]]:
    """The orchestrator's side: load the taskset in this process and dump every task for the wire."""
    taskset = vf.load_taskset(config.taskset)
    return [task.data.model_dump(mode="json") for task in list(taskset)]


def log_to(path: str) -> None:
    """`serve_env`'s `log_setup` (picklable via functools.partial): every process of the env
    server appends to one file, each line with its pid."""
    logging.basicConfig(
        filename=path, level=logging.INFO, format="%(process)d %(name)s %(levelname)s: %(message)s", force=True
    )


def _stat(pid: int) -> tuple[int, int]:
    """(ppid, process group) of `pid`; /proc/PID/stat is "pid (comm) state ppid pgrp ...",
    and comm may hold spaces, so it is split after the last ")"."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[2])


def children(pid: int) -> list[int]:
    """Direct child processes of `pid` that multiprocessing spawned (the broker's workers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            if _stat(int(proc.name))[0] == pid and b"spawn_main" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return sorted(found)


def launched_servers(pids: list[int]) -> dict[int, int]:
    """Launched servers among `pids` (e.g. `marked_processes`): each runs in its own process
    group (a `uv run` and the uvicorn under it), keyed by group, with the pid that launched it."""
    servers: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid, group = _stat(pid)
            if pid == group:
                servers[group] = ppid
    return servers


def serve_env_interruptible(**kwargs: Any) -> None:
    """verifiers' `serve_env`, with SIGINT handled however this process was started.

    A process that starts with SIGINT ignored (every background job of a non-interactive
    shell: `make test &` in a script, a CI step run that way) passes that on to what it
    spawns, and Python then installs no KeyboardInterrupt handler. verifiers 0.4.0's
    `serve_env` arms SIGTERM itself (`_arm_teardown`) but leaves SIGINT as it found it, and
    `asyncio.run` turns SIGINT into a cancel only when its handler is Python's default: so
    the env server would ignore SIGINT and stay up. Here SIGINT stops it, as in a terminal."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    serve_env(**kwargs)


@dataclass
class EnvServerProcess:
    """A running `serve_env` process and the ZMQ address its frontend bound."""

    process: Any
    address: str
    log_path: Path

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def log(self) -> str:
        return self.log_path.read_text("utf-8", "replace") if self.log_path.exists() else ""

    def workers(self) -> list[int]:
        """The broker's worker processes (none when it serves in-process)."""
        return children(self.pid)

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def stop(self, timeout: float = 60.0) -> None:
        """What a host does at the end of a run: SIGTERM the env server and wait for it."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)


@contextlib.contextmanager
def env_server(
    config: Any,
    log_path: Path,
    *,
    pool: StaticPoolConfig | ElasticPoolConfig = STATIC_2,
    startup_timeout: float = 180.0,
) -> Iterator[EnvServerProcess]:
    """`serve_env` for `config` in a spawned process, on an OS-assigned loopback port; stopped
    (SIGTERM, as the orchestrator's shutdown does) on exit unless the test already ended it.
    SIGINT stops it too, even when this process runs with SIGINT ignored (see
    `serve_env_interruptible`)."""
    ctx = mp.get_context("spawn")
    addresses = ctx.Queue()
    process = ctx.Process(
        target=serve_env_interruptible,
        kwargs=dict(
            config_data=env_config_data(config),
            address="tcp://127.0.0.1:0",
            address_queue=addresses,
            log_setup=functools.partial(log_to, str(log_path)),
            **pool_serve_kwargs(pool),
        ),
        daemon=False,
    )
    process.start()
    try:
        address = addresses.get(timeout=startup_timeout)
    except Exception:
        process.kill()
        process.join(10)
        raise RuntimeError(
            f"the env server reported no address; its log:\n{log_path.read_text() if log_path.exists() else ''}"
        ) from None
    server = EnvServerProcess(process, address, log_path)
    try:
        yield server
    finally:
        server.stop()


def model_client(model_url: str) -> Any:
    """The client config of the scripted model server at `model_url`."""
    return vf.EvalClientConfig(base_url=f"{model_url}/v1")


async def run_episodes(
    address: str, model_url: str, task_data: list[dict[str, Any]], *, timeout: float = 300.0
) -> list[Any]:
    """One episode per entry of `task_data`, all in flight at once through one `EnvClient`;
    each result is the `WireEpisode`, or the exception the client raised for it (a
    `TimeoutError` after `timeout` seconds without an answer)."""
    client = EnvClient(address)
    try:
        await client.wait_for_server_startup(timeout=60)

        async def one(data: dict[str, Any]) -> Any:
            run = client.run(
                client=model_client(model_url), model=DEFAULT_MODEL_ID, sampling=vf.SamplingConfig(), task_data=data
            )
            return await asyncio.wait_for(run, timeout)

        return await asyncio.gather(*(one(d) for d in task_data), return_exceptions=True)
    finally:
        await client.close()


def play(address: str, model_url: str, task_data: list[dict[str, Any]], *, timeout: float = 300.0) -> list[Any]:
    """`run_episodes` from synchronous test code."""
    return asyncio.run(run_episodes(address, model_url, task_data, timeout=timeout))


def outcome(episode: Any) -> tuple[bool, str | None, float]:
    """(ok, stop condition, the env's summed reward) of a one-trace wire episode."""
    if isinstance(episode, BaseException):
        raise episode
    (trace,) = episode.traces
    return episode.ok, trace.stop_condition, trace.rewards["openenv_reward"].score


def first_observation(body: dict[str, Any]) -> str:
    """The text of the first user message of a model request: what the episode opened on."""
    return next(message_text(m.get("content")) for m in body["messages"] if m.get("role") == "user")

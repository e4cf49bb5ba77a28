"""S1: what the sandbox costs. The same code-executing env (tests/fixtures/uv_code_env: each
step runs the action's Python in a process of its own), played by the same scripted model
(three steps of small Python an episode), under four launches, interleaved round by round
(the order reversed every other round): UV on this machine (`allow_host_execution`), the
Docker sandbox on runc (the machine's daemon), on gVisor (`runsc`, in a throwaway daemon that
registers it with `--platform=ptrace --network=host --host-uds=all`, the image loaded with
`docker save | docker load`) and sandboxed Swarm replicas (one-node swarm; relay, router, gate).

Each run is one `serving()` of the generated package in this process, two servers, two
episodes at a time: start-up is until the first server answers; two warm-up episodes at once
bring up the second; then N episodes (quick: 8 and two rounds; else 24 and three). CPU-s per
episode, over the episodes only: this process (the runtime; for the sandbox its host relay)
from `getrusage`, plus the servers: UV's server processes and their reaped children (/proc,
by a marker variable), Docker's container cgroups (`cpu.stat` usage_usec: shim, server, the
model's code; gVisor's kernel; Swarm's router). Episodes/min is N over the episodes' wall
time. Headline: runc's CPU-s per episode over UV's (medians over the rounds), target ≤ 1.15;
gVisor's and Swarm's over UV's are shown, without a target.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import cli, docker_host, log, median, process_cpu_s, row

from openenvgen_testsupport.adapters import marked_processes
from openenvgen_testsupport.docker_images import docker

TARGET_RATIO = 1.15
SIDES = ("uv", "runc", "gvisor", "swarm")
RUNSC_ARGS = ["--platform=ptrace", "--network=host", "--host-uds=all"]
CODES = [
    "print(sum(i * i for i in range(20000)))",
    "import json\nprint(json.dumps({'squares': [i * i for i in range(200)]})[:60])",
    "print('done')",
]


def _taskset(side: str, image: str, marker: str) -> dict[str, Any]:
    from openenvgen_testsupport.paths import UV_CODE_FIXTURE_APP, UV_CODE_FIXTURE_PROJECT

    common = {"env": "test/code-env", "max_servers": 2, "startup_timeout": 240}
    if side == "uv":
        provider = {
            "project_path": str(UV_CODE_FIXTURE_PROJECT),
            "app": UV_CODE_FIXTURE_APP,
            "env_vars": {"OPENENVGEN_S1_MARKER": marker},
        }
        return {**common, "allow_host_execution": True, "provider_kwargs": provider}
    if side == "swarm":
        labels = {"openenvgen.bench": marker}  # on the service, its containers and the router
        return {**common, "use_swarm": True, "replicas": 2, "provider_kwargs": {"image": image, "labels": labels}}
    runtime = "runsc" if side == "gvisor" else "runc"
    return {**common, "use_docker": True, "container_runtime": runtime, "provider_kwargs": {"image": image}}


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _container_cpu_s(container_id: str) -> float | None:
    """The container's cgroup CPU so far: cgroup v2 `cpu.stat` (systemd or cgroupfs layout)
    or v1 `cpuacct.usage`; None when its cgroup is not found."""
    root = Path("/sys/fs/cgroup")
    for pattern in (f"system.slice/docker-{container_id}*.scope", f"docker/{container_id}*"):
        for folder in root.glob(pattern):
            if (folder / "cpu.stat").exists():
                usage = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
                return int(usage["usage_usec"]) / 1e6
    for folder in root.glob(f"cpuacct/docker/{container_id}*"):
        return int((folder / "cpuacct.usage").read_text()) / 1e9
    return None


def _servers_cpu_s(env: Any, side: str, marker: str) -> float | None:
    if side == "uv":
        return sum(process_cpu_s(pid) for pid in marked_processes(marker))
    if side == "swarm":
        ids = docker(
            "ps", "-q", "--no-trunc", "--filter", f"label=openenvgen.bench={marker}", check=False
        ).stdout.split()
    else:
        ids = [getattr(server.provider, "container_id", None) or "" for server in env.pool.servers]
    cpu = [_container_cpu_s(i) for i in ids]
    return None if not ids or None in cpu else sum(c for c in cpu if c is not None)


def _one_run(package: str, side: str, image: str, model_url: str, episodes: int) -> dict[str, Any]:
    from openenvgen_testsupport.adapters import load_env, model_context, outcome

    marker = uuid.uuid4().hex
    env = load_env(package, _taskset(side, image, marker))

    async def main() -> dict[str, Any]:
        started = time.monotonic()
        async with env.serving():
            startup = time.monotonic() - started  # the first server answering
            ctx = model_context(model_url)
            tasks = list(env.taskset)
            # Two warm-up episodes at once: both servers up before the clock starts.
            warm = await asyncio.gather(*(env.run_episode(tasks[0], ctx) for _ in range(2)))
            cpu0, server0, t0 = _self_cpu_s(), _servers_cpu_s(env, side, marker), time.monotonic()
            gate = asyncio.Semaphore(2)

            async def one() -> Any:
                async with gate:
                    return await env.run_episode(tasks[0], ctx)

            done = await asyncio.gather(*(one() for _ in range(episodes)))
            wall = time.monotonic() - t0
            cpu, server1 = _self_cpu_s() - cpu0, _servers_cpu_s(env, side, marker)
        ok = sum(outcome(e) == (True, "env_done", 1.0) for e in [*warm, *done])
        server = None if server0 is None or server1 is None else server1 - server0
        total = None if server is None else cpu + server
        return {
            "side": side,
            "episodes": episodes,
            "ok": ok,
            "of": episodes + len(warm),
            "startup_s": round(startup, 2),
            "episodes_per_min": round(episodes / wall * 60, 1),
            "client_cpu_s": round(cpu, 3),
            "server_cpu_s": None if server is None else round(server, 3),
            "cpu_s_per_episode": None if total is None else round(total / episodes, 4),
        }

    return asyncio.run(main())


@contextlib.contextmanager
def _gvisor(image: str) -> Iterator[str | None]:
    """A throwaway daemon with runsc registered and the image loaded: its DOCKER_HOST (None,
    logged, when it cannot be had here)."""
    from openenvgen_testsupport import docker_images

    try:
        daemon = docker_images.throwaway_daemon(runtimes={"runsc": RUNSC_ARGS})
        host = daemon.__enter__()
    except docker_images.DockerUnavailable as e:
        log(f"S1: no gVisor side: {e}")
        yield None
        return
    try:
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        loaded = subprocess.run(["docker", "load"], stdin=save.stdout, env={**os.environ, "DOCKER_HOST": host})
        save.wait()
        yield host if loaded.returncode == 0 else None
    finally:
        daemon.__exit__(None, None, None)


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    from openenvgen_testsupport import docker_images
    from openenvgen_testsupport.adapters import generate_code_env_package
    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    if problem := docker_images.daemon_problem():
        raise RuntimeError(f"S1 needs Docker: {problem}")
    image = docker_images.code_env_image()
    package = generate_code_env_package(workdir / "s1-pkgs")
    episodes, rounds = (8, 2) if quick else (24, 3)
    model = ScriptedChatModel(Script([json.dumps({"code": code}) for code in CODES]))
    runs: list[dict[str, Any]] = []
    with serve_app(model) as model_url, _gvisor(image) as gvisor_host, docker_images.single_node_swarm():
        sides = [s for s in SIDES if s != "gvisor" or gvisor_host is not None]
        for rnd in range(rounds):
            for side in sides if rnd % 2 == 0 else sides[::-1]:
                with docker_host(gvisor_host if side == "gvisor" else None):
                    result = _one_run(package, side, image, str(model_url), episodes)
                log(f"S1 round {rnd} {side}: {result}")
                runs.append(result)
    by_side = {s: [r for r in runs if r["side"] == s] for s in sides}

    def med(side: str, key: str) -> float | None:
        values = [r[key] for r in by_side.get(side, []) if r[key] is not None]
        return round(median(values), 4) if values else None

    summary = {s: {k: med(s, k) for k in ("cpu_s_per_episode", "episodes_per_min", "startup_s")} for s in by_side}
    uv = summary["uv"]["cpu_s_per_episode"]
    over_uv = {s: round(v["cpu_s_per_episode"] / uv, 3) for s, v in summary.items() if uv and v["cpu_s_per_episode"]}
    ratio = over_uv.get("runc")
    measured = "; ".join(
        f"{s}: {v['cpu_s_per_episode']} CPU-s/episode ({over_uv.get(s)}x UV), {v['episodes_per_min']} episodes/min, "
        f"start-up {v['startup_s']} s"
        for s, v in summary.items()
    )
    return [
        row(
            "S1",
            "the sandbox's cost: a code-executing env under UV, the runc sandbox, the gVisor sandbox and Swarm",
            f"every episode ok; runc sandbox ≤ {TARGET_RATIO:g}x UV's CPU-s per episode",
            measured,
            ratio,
            all(r["ok"] == r["of"] for r in runs) and ratio is not None and ratio <= TARGET_RATIO,
            label="runc sandbox / UV CPU-s per episode",
            summary=summary,
            runs=runs,
        ),
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

"""Model code cannot fill the host's disk through its server's log: the code env, its code run
in the server's own process (as a REPL env runs it), played by a scripted model whose code
writes 1 GB to the server's stdout, in every launch mode: UV (the
runtime rotates the log it reads from the server's pipe), Docker without and with the
sandbox, and a sandboxed Swarm replica (Docker's json-file driver rotates the container's
log: its files are read from `docker inspect`'s LogPath). Outcome: the episode plays to its
end, and the server's log files on the host hold at most `log_max_size` x `log_max_files`
bytes, and at least one full file (the flood did reach the log).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.launching.swarm_isolation import dns_fix_missing
from openenvgen_servers.logs import LogLimit, log_files
from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import load_env, model_context, outcome
from openenvgen_testsupport.paths import UV_CODE_FIXTURE_APP, UV_CODE_FIXTURE_PROJECT
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = [pytest.mark.rollout, pytest.mark.timeout(900)]
RUN = uuid.uuid4().hex
LIMIT = LogLimit("1m", 2)
"""Small, so 1 GB is a thousand times the bound."""
FLOOD = "\n".join(
    [
        "# in the server",
        "import os",
        "line = b'x' * (2**20 - 1) + b'\\n'",
        "for _ in range(1024):",
        "    os.write(1, line)",
        "result = ' '.join(['flooded', 'done'])",
    ]
)
"""1 GB (1024 lines of 1 MiB) onto the server's stdout, from the server's process."""


def limits(**extra: Any) -> dict[str, Any]:
    return {"log_max_size": LIMIT.max_size, "log_max_files": LIMIT.max_files, "reply_timeout": 300, **extra}


def flood(code_pkg: str, taskset: dict[str, Any], measure: Any) -> tuple[Any, int]:
    """One episode of FLOOD; the episode and `measure(env)`, the log's bytes on the host,
    read while the server still runs."""
    model = ScriptedChatModel(Script([json.dumps({"code": FLOOD})]))
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[Any, int]:
            async with env.serving():
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                return episode, await asyncio.to_thread(measure, env)

        return asyncio.run(main())


def server_container(token: str) -> dict[str, Any]:
    """`docker inspect` of the test's one server container (a sandboxed Swarm launch's router,
    labelled too, apart)."""
    found = []
    for container in docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}"):
        (inspected,) = json.loads(docker_images.docker("inspect", container).stdout)
        if not inspected["Config"]["Labels"].get("com.docker.swarm.service.name", "").endswith("-router"):
            found.append(inspected)
    (server,) = found
    return server


def container_log_bytes(token: str) -> int:
    """The bytes of the server container's json-file logs, rotated ones included."""
    log = Path(server_container(token)["LogPath"])
    return sum(p.stat().st_size for p in log.parent.glob(f"{log.name}*"))


def assert_bounded(episode: Any, size: int) -> None:
    assert outcome(episode) == (True, "env_done", 1.0)
    assert "flooded done" in episode.model_dump_json()  # the code ran to its end
    assert LIMIT.size_bytes <= size <= LIMIT.total_bytes, size


def test_a_uv_servers_log_stays_within_its_limit(code_pkg: str) -> None:
    def measure(env: Any) -> int:
        (provider,) = env.pool.launcher.providers
        return sum(p.stat().st_size for p in log_files(provider.server.log, LIMIT))

    provider_kwargs = {"project_path": str(UV_CODE_FIXTURE_PROJECT), "app": UV_CODE_FIXTURE_APP}
    taskset = limits(env="test/code-env", allow_host_execution=True, startup_timeout=240)
    episode, size = flood(code_pkg, {**taskset, "provider_kwargs": provider_kwargs}, measure)
    assert_bounded(episode, size)


@pytest.mark.docker
@pytest.mark.usefixtures("host_left_as_found")
@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "sandboxed"])
def test_a_containers_log_stays_within_its_limit(code_pkg: str, code_image: str, token: str, sandbox: bool) -> None:
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    provider_kwargs = {"image": code_image, "labels": labels}
    taskset = limits(env="test/code-env", use_docker=True, sandbox=sandbox, startup_timeout=180)
    taskset["provider_kwargs"] = provider_kwargs
    episode, size = flood(code_pkg, taskset, lambda _: container_log_bytes(token))
    assert_bounded(episode, size)


@pytest.mark.swarm
@pytest.mark.usefixtures("host_left_as_found", "swarm")
def test_a_swarm_replicas_log_stays_within_its_limit(
    code_pkg: str, code_image: str, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Sandboxed (the code env's default): its replica on the launch's internal network, so the
    launch also says, in one line, whether this engine predates the DNS fix."""
    caplog.set_level(logging.WARNING)
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    taskset = limits(env="test/code-env", use_swarm=True, replicas=1, startup_timeout=180, sandbox_memory="512m")
    taskset["provider_kwargs"] = {"image": code_image, "labels": labels}
    resources: dict[str, Any] = {}

    def measure(_: Any) -> int:
        resources.update(server_container(token)["HostConfig"])
        return container_log_bytes(token)

    episode, size = flood(code_pkg, taskset, measure)
    assert_bounded(episode, size)
    # Its swap is capped at its memory limit: Docker's default for a container with a memory
    # limit (memory and swap together twice the limit), as `docker service create` takes no
    # `--memory-swap`.
    assert (resources["Memory"], resources["MemorySwap"]) == (512 * 2**20, 2 * 512 * 2**20)
    engine = docker_images.docker("version", "--format", "{{.Server.Version}}").stdout.strip()
    warned = [r.getMessage() for r in caplog.records if "CVE-2024-29018" in r.getMessage()]
    assert len(warned) == (1 if dns_fix_missing(engine) else 0)
    assert all("\n" not in line and engine in line for line in warned)

"""Only the run that launched a Swarm service may use its replicas: on the machine's
single-node swarm, each replica publishes only its access gate's port; a client without
the launch's secret gets `/health` and nothing else (401 on `/ws`, `/reset`, `/step`,
`/state`, `/mcp`, `/schema`), while the run that launched it plays all its episodes. The
secret is in no `docker inspect` of the service, its tasks and containers, no Swarm secret
or config inspect, no service or container log, no process's command line, no log record
or trace of the run, and no LaunchError; the secret and the gate's config go with the
service (`docker_images.labelled` counts them). A `pass_env` variable reaches the server
the same way, as a Swarm secret: its value is in the server's environment and nowhere
else. The daemon is left as found.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from openenvgen_runtime.launching import swarm_gate
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import load_env, model_context, outcome
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = [
    pytest.mark.swarm,
    pytest.mark.rollout,
    pytest.mark.timeout(900),
    pytest.mark.usefixtures("host_left_as_found", "swarm"),
]
RUN = uuid.uuid4().hex


class KnownSecret:
    """The secrets of the launches made in a test, read from the runtime's own gates."""

    def __init__(self) -> None:
        self.gates: list[swarm_gate.SwarmGate] = []

    def __str__(self) -> str:
        (gate,) = self.gates
        return gate.request_headers()["Authorization"].removeprefix("Bearer ")


@pytest.fixture
def known_secret(monkeypatch: pytest.MonkeyPatch) -> KnownSecret:
    """Each launch's gate, as the runtime makes it, remembered here to look for its secret."""
    known = KnownSecret()
    made = swarm_gate.SwarmGate.__init__

    def remember(gate: swarm_gate.SwarmGate, *args: Any, **kwargs: Any) -> None:
        made(gate, *args, **kwargs)
        known.gates.append(gate)

    monkeypatch.setattr(swarm_gate.SwarmGate, "__init__", remember)
    return known


def swarm_taskset(image: str, token: str, replicas: int = 2, **provider_kwargs: Any) -> dict[str, Any]:
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    return {
        "env": "test/guess-env",
        "use_swarm": True,
        "replicas": replicas,
        "startup_timeout": 240,
        "provider_kwargs": {"image": image, "labels": labels, **provider_kwargs},
    }


async def unauthenticated(url: str) -> dict[str, int]:
    """What a client without the secret gets on each route of a replica."""
    statuses = {}
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=10) as http:
        statuses["GET /health"] = (await http.get("/health")).status_code
        statuses["GET /schema"] = (await http.get("/schema")).status_code
        statuses["POST /reset"] = (await http.post("/reset", json={})).status_code
        statuses["POST /step"] = (await http.post("/step", json={"action": {"guess": 7}})).status_code
        statuses["GET /state"] = (await http.get("/state")).status_code
        statuses["POST /mcp"] = (await http.post("/mcp", json={"jsonrpc": "2.0", "method": "tools/list"})).status_code
    try:
        async with websockets.connect(url.replace("http://", "ws://") + "/ws", open_timeout=10):
            statuses["WS /ws"] = 101
    except InvalidStatus as e:
        statuses["WS /ws"] = e.response.status_code
    return statuses


def everything_docker_shows(token: str) -> str:
    """`docker inspect` of the service, its tasks, containers, secrets and configs, and
    every log of theirs, as one text."""
    selector = f"{docker_images.TEST_LABEL}={token}"
    shown = []
    for service in docker_images.ours("service", selector):
        shown.append(docker_images.docker("service", "inspect", service).stdout)
        tasks = docker_images.docker("service", "ps", "-q", "--no-trunc", service).stdout.split()
        shown.append(docker_images.docker("inspect", *tasks).stdout)
        logs = docker_images.docker("service", "logs", "--raw", service, check=False)
        shown += [logs.stdout, logs.stderr]
    for container in docker_images.ours("container", selector):
        shown.append(docker_images.docker("inspect", container).stdout)
        logs = docker_images.docker("logs", container, check=False)
        shown += [logs.stdout, logs.stderr]
    for kind in ("secret", "config"):
        for item in docker_images.ours(kind, selector):
            shown.append(docker_images.docker(kind, "inspect", item).stdout)
    return "\n".join(shown)


def command_lines() -> str:
    """Every process's command line on this machine (a replica's processes included)."""
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return "\n".join(lines)


def test_only_the_run_that_launched_the_replicas_uses_them(
    image: str, guess_pkg: str, token: str, known_secret: KnownSecret, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:
        env = load_env(guess_pkg, swarm_taskset(image, token))

        async def main() -> tuple[list[Any], list[dict[str, int]], str, str, list[int]]:
            async with env.serving():
                urls = [s.url for s in env.pool.servers]
                refused = [await unauthenticated(url) for url in urls]
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 4))
                (service,) = docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")
                ports = json.loads(
                    docker_images.docker(
                        "service", "inspect", "--format", "{{json .Spec.EndpointSpec.Ports}}", service
                    ).stdout
                )
                return (
                    episodes,
                    refused,
                    everything_docker_shows(token),
                    command_lines(),
                    [p["TargetPort"] for p in ports],
                )

        episodes, refused, shown, processes, published = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    closed = {"GET /schema": 401, "POST /reset": 401, "POST /step": 401, "GET /state": 401, "POST /mcp": 401}
    assert refused == [{"GET /health": 200, **closed, "WS /ws": 401}] * 2, refused
    assert published == [swarm_gate.GATE_PORT]
    secret = str(known_secret)
    assert len(secret) >= 40 and "/run/secrets/openenvgen-access" in shown  # the file is named, not its content
    assert secret not in shown
    assert secret not in processes
    assert secret not in caplog.text
    assert secret not in repr([e.traces for e in episodes])
    assert docker_images.labelled(token) == []


def gate_environments() -> tuple[list[bytes], list[bytes]]:
    """(the environment of every access gate running on this machine, that of each server a
    gate started): read from /proc, as the replicas' processes are this machine's."""
    gates, servers = [], []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and swarm_gate.GATE_FILE.encode() in (proc / "cmdline").read_bytes():
                gates.append((proc / "environ").read_bytes())
                for child in (proc / "task" / proc.name / "children").read_text().split():
                    servers.append(Path(f"/proc/{child}/environ").read_bytes())
        except OSError:
            continue
    return gates, servers


def test_a_pass_env_variable_reaches_the_server_as_a_swarm_secret_and_shows_nowhere(
    image: str,
    guess_pkg: str,
    token: str,
    known_secret: KnownSecret,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A variable set only in this process and named in `pass_env` is in the server's
    environment (the guess env names its SHA-256 in its first hint), while its value is in
    no `docker inspect` of the service, its tasks and containers, no secret inspect, no log,
    no process's command line, not in the gate's own environment, no log record or trace;
    `env_vars` stay in the service's spec as before. Its secret goes with the service."""
    caplog.set_level(logging.DEBUG)
    value = f"passed-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    monkeypatch.setenv("GUESS_ENV_PASSED", value)
    taskset = swarm_taskset(image, token, replicas=1, env_vars={"GIVEN": "given-value"})
    env = load_env(guess_pkg, {**taskset, "pass_env": ["GUESS_ENV_PASSED"]})
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> tuple[list[Any], str, str, tuple[list[bytes], list[bytes]], int]:
            async with env.serving():
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 2))
                secrets = len(docker_images.ours("secret", f"{docker_images.TEST_LABEL}={token}"))
                return episodes, everything_docker_shows(token), command_lines(), gate_environments(), secrets

        episodes, shown, processes, (gates, servers), secrets = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
    traces = repr([e.traces for e in episodes])
    assert f"GUESS_ENV_PASSED sha256 {hashlib.sha256(value.encode()).hexdigest()}" in traces
    assert value not in shown
    assert secrets == 2  # the launch's access secret and the variable's
    assert "GIVEN=given-value" in shown and "--env-file" in shown  # env_vars in the spec; the variable's file named
    assert gates and any(f"GUESS_ENV_PASSED={value}".encode() in server for server in servers)
    assert value not in processes
    assert not any(value.encode() in gate for gate in gates)
    assert value not in caplog.text
    assert value not in traces
    assert str(known_secret) not in shown
    assert docker_images.labelled(token) == []


def test_a_launch_that_fails_names_no_secret_and_leaves_nothing(
    image: str, guess_pkg: str, token: str, known_secret: KnownSecret
) -> None:
    failing = ["python3", "-c", "import sys; print('env server failed to start'); sys.exit(3)"]
    env = load_env(guess_pkg, {**swarm_taskset(image, token, replicas=1, command=failing), "startup_timeout": 60})

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    message = str(info.value)
    assert message.startswith("test/guess-env (swarm): "), message
    assert str(known_secret) not in message
    assert docker_images.labelled(token) == []

"""A code-executing package on Swarm, sandboxed (its default): on the machine's single-node
swarm, the code env (it runs the action's Python) launched with `use_swarm`, played by a
scripted model whose code reports its uid, whether the trainer's variable reached it,
whether it can write outside /tmp and whether it can connect to listeners on the host's
loopback, the Docker bridge's and the Swarm gateway bridge's host addresses and every
other address of the host; then forks until refused, then writes memory until killed.
Outcome: the model's code runs as nobody (65534) on a read-only root, sees no variable set
only in this (the trainer's) process, connects to nothing (no listener accepts a
connection: the replica's only network is its launch's internal one, and it publishes no
port); its forks stop at `sandbox_pids`, and its memory at `sandbox_memory` (the kernel
kills its process, which ends its step); the router and the gate still admit the run
(every episode plays, the replica goes on after both probes) and refuse a client without
the launch's secret, straight at the router's published port as through the run's relay;
the launch line says the sandbox ran without network; nothing is left afterwards, the
launch's networks included.

The probes run only inside the replica, which has small limits (processes, memory, half a
CPU), and stop by themselves (FORK_CAP forks, MEMORY_CAP blocks), so a replica without
limits fails the test without taking the machine down.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from openenvgen_runtime.launching.docker_cli import service_tasks
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.sandbox.hardening import swarm_swap_warning
from openenvgen_runtime.launching.swarm_gate import GATE_PORT
from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import load_env, model_context, outcome
from openenvgen_testsupport.host_listeners import Listener, connect_probe, host_addresses
from openenvgen_testsupport.local_user import REFUSED, other_user, probe_as
from openenvgen_testsupport.scripted_model import ScriptedChatModel, count_assistant_turns
from openenvgen_testsupport.servers import serve_app

pytestmark = [
    pytest.mark.swarm,
    pytest.mark.rollout,
    pytest.mark.timeout(600),
    pytest.mark.usefixtures("host_left_as_found", "swarm"),
]
RUN = uuid.uuid4().hex
SECRET_NAME = "SOME_TRAINER_SECRET"
SECRET = f"trainer-secret-{uuid.uuid4().hex}"
HOST_FILE = f"/tmp/openenvgen-swarm-probe-{RUN}"
"""Where the model's code writes: the replica's /tmp, which must not be the host's."""
PIDS = 96
"""The replica's process limit: the gate, the server and its threads fit well below it."""
FORK_CAP = 1000
"""Where the fork probe stops by itself: far above PIDS, far below what hurts the machine."""


def probe_code(listeners: list[Listener]) -> str:
    return "\n".join(
        [
            "import errno, json, os",
            f"found = {{'uid': os.getuid(), 'secret': os.environ.get({SECRET_NAME!r})}}",
            f"for path in ('/app/written', '/written', {HOST_FILE!r}):",
            "    try:",
            "        open(path, 'w').write('x')",
            "        found[path] = 'written'",
            "    except OSError as e:",
            "        found[path] = errno.errorcode[e.errno]",
            *connect_probe(listeners),
            "print('probe', json.dumps(found), 'done')",
        ]
    )


FORKS = "\n".join(
    [
        "import os, signal",
        "children, refused = [], None",
        f"while len(children) < {FORK_CAP}:",
        "    try:",
        "        pid = os.fork()",
        "    except OSError as e:",
        "        refused = type(e).__name__",
        "        break",
        "    if pid == 0:",
        "        signal.pause()",
        "        os._exit(0)",
        "    children.append(pid)",
        "for pid in children:",
        "    os.kill(pid, signal.SIGKILL)",
        "    os.waitpid(pid, 0)",
        "print('forks', len(children), refused, 'done')",
    ]
)
MEMORY_CAP = 64
"""Where the memory probe stops by itself: 64 blocks of 32 MiB (2 GiB), four times the
replica's limit, a twelfth of the machine's memory."""
MEMORY = "\n".join(
    [
        "blocks = []",
        f"while len(blocks) < {MEMORY_CAP}:",
        "    blocks.append(b'x' * (32 * 2**20))  # written, so resident",
        "print('memory', len(blocks), 'done')",
    ]
)
PLAIN = "print('plain', 'done')"


class Codes:
    """The scripted model: each new episode's first reply is the next of `codes`; a later
    reply (none is expected: each code ends its episode) is PLAIN."""

    def __init__(self, codes: list[str]) -> None:
        self.codes = list(codes)
        self.lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        if count_assistant_turns(messages) > 0:
            return json.dumps({"code": PLAIN})
        with self.lock:
            return json.dumps({"code": self.codes.pop(0)})


async def unauthenticated(url: str) -> dict[str, int]:
    """What a client without the launch's secret gets from a replica."""
    statuses = {}
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=10) as http:
        statuses["GET /health"] = (await http.get("/health")).status_code
        statuses["POST /reset"] = (await http.post("/reset", json={})).status_code
        statuses["POST /step"] = (await http.post("/step", json={"action": {"code": PLAIN}})).status_code
    try:
        async with websockets.connect(url.replace("http://", "ws://") + "/ws", open_timeout=10):
            statuses["WS /ws"] = 101
    except InvalidStatus as e:
        statuses["WS /ws"] = e.response.status_code
    return statuses


def through_router(router: tuple[str, int], replica: str, request: bytes) -> str:
    """The status line a client without the secret gets for `request`, sent straight to the
    router's published port and tunnelled to the replica's gate (no relay of the run)."""
    with socket.create_connection(router, timeout=10) as connection:
        connection.sendall(f"CONNECT {replica}:{GATE_PORT} HTTP/1.1\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += connection.recv(1)
        assert head.startswith(b"HTTP/1.1 200 "), head
        connection.sendall(request)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return reply.split(b"\r\n", 1)[0].decode()


def swarm_layout(token: str) -> dict[str, Any]:
    """The launch as Docker has it: its services, the replicas' networks (internal?) and
    published ports, the router's published address and the replica's address."""
    services = {
        docker_images.docker("service", "inspect", "--format", "{{.Spec.Name}}", s).stdout.strip(): s
        for s in docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")
    }
    (router,) = [name for name in services if name.endswith("-router")]
    (replicas,) = [name for name in services if name != router]
    (task,) = [t for t in service_tasks(replicas) if t["Status"]["State"] == "running"]
    (router_task,) = [t for t in service_tasks(router) if t["Status"]["State"] == "running"]
    networks = [a["Network"]["Spec"]["Name"] for a in task["NetworksAttachments"]]
    return {
        "replicas": replicas,
        "internal": [
            docker_images.docker("network", "inspect", "--format", "{{.Internal}}", n).stdout.strip() for n in networks
        ],
        "published": task["Status"].get("PortStatus", {}).get("Ports"),
        "replica": task["NetworksAttachments"][0]["Addresses"][0].split("/")[0],
        "router": ("127.0.0.1", router_task["Status"]["PortStatus"]["Ports"][0]["PublishedPort"]),
    }


def swarm_taskset(
    image: str, token: str, provider_kwargs: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The code env on the swarm, one replica, labelled with the test's token and the module's run."""
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    return {
        "env": "test/code-env",
        "use_swarm": True,
        "replicas": 1,
        "startup_timeout": 180,
        "reply_timeout": 60,
        **extra,
        "provider_kwargs": {"image": image, "labels": labels, **(provider_kwargs or {})},
    }


def reported(episode: Any, word: str) -> str:
    """What the model's code printed after `word` (up to its `done`), from the episode."""
    text = episode.model_dump_json().replace('\\"', '"')
    return text.split(f"{word} ", 1)[1].split(" done", 1)[0]


def test_model_code_on_swarm_stays_in_the_sandbox(
    code_image: str,
    code_pkg: str,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setenv(SECRET_NAME, SECRET)
    taskset = swarm_taskset(code_image, token, sandbox_pids=PIDS, sandbox_memory="512m", sandbox_cpus=0.5)
    listeners = [Listener(address) for address in host_addresses()]
    model = ScriptedChatModel(Codes([probe_code(listeners), PLAIN, FORKS, MEMORY, PLAIN]))
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[list[Any], list[dict[str, int]], str, dict[str, Any], dict[str, str]]:
            async with env.serving():
                # The replica's relay without its URL's token; the gate without the secret is `direct`.
                refused = [await unauthenticated(s.url.rsplit("/", 1)[0]) for s in env.pool.servers]
                layout = await asyncio.to_thread(swarm_layout, token)
                direct = {
                    request.split(b" HTTP", 1)[0].decode(): await asyncio.to_thread(
                        through_router, layout["router"], layout["replica"], request
                    )
                    for request in (
                        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                    )
                }
                ctx = model_context(str(model_url))
                (task,) = list(env.taskset)[:1]
                # The probe and a plain episode at once, then the forks, then one more: the
                # replica plays on after its processes ran out.
                first = await asyncio.gather(env.run_episode(task, ctx), env.run_episode(task, ctx))
                forks = await env.run_episode(task, ctx)
                memory = await env.run_episode(task, ctx)
                after = await env.run_episode(task, ctx)
                limits = docker_images.docker(
                    "service", "inspect", "--format", "{{json .Spec.TaskTemplate.Resources.Limits}}", layout["replicas"]
                ).stdout
                return [*first, forks, memory, after], refused, limits, layout, direct

        try:
            episodes, refused, limits, layout, direct = asyncio.run(main())
        finally:
            for listener in listeners:
                listener.close()
    print("outcomes:", [outcome(e) for e in episodes])
    memory = episodes.pop(3)
    assert [outcome(e) for e in [*episodes, memory]] == [(True, "env_done", 1.0)] * 5
    # The memory probe's process was killed at the replica's limit (SIGKILL: exit code -9),
    # which ended its step; the episode went on, and so did the replica.
    assert '\\"exit_code\\": -9' in memory.model_dump_json(), memory.model_dump_json()[-2000:]
    assert "memory 64 done" not in memory.model_dump_json()
    assert refused == [{"GET /health": 403, "POST /reset": 403, "POST /step": 403, "WS /ws": 403}], refused
    assert direct == {"GET /health": "HTTP/1.1 200 OK", "POST /reset": "HTTP/1.1 401 Unauthorized"}, direct
    print("the launch:", layout)
    assert layout["internal"] == ["true"] and not layout["published"], layout
    assert json.loads(limits)["Pids"] == PIDS, limits
    probe = next(e for e in episodes if "probe {" in e.model_dump_json())
    found = json.loads(reported(probe, "probe"))
    print("the probe found:", found)
    assert found["uid"] == 65534 and found["secret"] is None, found
    assert found["/app/written"] == found["/written"] == "EROFS", found  # not EACCES: the root is read-only
    assert found[HOST_FILE] == "written", found  # the replica's scratch tmpfs, not the host's /tmp
    assert not Path(HOST_FILE).exists()
    assert len(listeners) >= 3, [listener.address for listener in listeners]
    for listener in listeners:
        assert found[listener.address] != "connected", found
        assert listener.accepted == [], f"{listener.address} accepted {listener.accepted}"
    count, refusal = reported(next(e for e in episodes if "forks " in e.model_dump_json()), "forks").split()
    print(f"the model's code forked {count} times before {refusal}")
    assert refusal == "BlockingIOError" and 0 < int(count) < PIDS, (count, refusal)  # EAGAIN at the limit
    assert "swarm, sandboxed on the node's runtime, no network" in caplog.text
    # No swap beyond the memory limit where the engine takes one; elsewhere one warning line says so.
    swapping = [r.getMessage() for r in caplog.records if "set no swap limit on a service" in r.getMessage()]
    assert len(swapping) == (0 if swarm_swap_warning() is None else 1), swapping
    assert SECRET not in caplog.text and SECRET not in repr([e.model_dump_json() for e in episodes])
    assert docker_images.labelled(token) == []


def test_an_overlay_network_for_replicas_without_network_is_one_line(
    code_pkg: str, code_image: str, token: str
) -> None:
    network = f"openenvgen-test-{token}"
    taskset = swarm_taskset(code_image, token, {"overlay_network": network})
    env = load_env(code_pkg, taskset)

    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    with pytest.raises(LaunchError) as info:
        asyncio.run(main())
    assert str(info.value) == (
        "overlay_network: the sandbox keeps replicas off every network but their own (sandbox_network = none); "
        f"set sandbox_network = egress to attach them to {network}"
    )
    assert docker_images.labelled(token) == []
    assert docker_images.docker("network", "inspect", network, check=False).returncode != 0  # not made either


def test_a_replica_swarm_replaces_is_reached_through_a_new_relay(
    code_image: str, code_pkg: str, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The model's code kills its env server: that episode is lost, the replica's container
    exits, Swarm starts another (a new task, a new address on the internal network), and
    the next episode plays on it through a relay of its own."""
    caplog.set_level(logging.INFO)
    taskset = swarm_taskset(code_image, token)
    kill_server = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
    model = ScriptedChatModel(Codes([kill_server, PLAIN]))
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[list[Any], list[str], list[str]]:
            async with env.serving():
                before = [s.url for s in env.pool.servers]
                ctx = model_context(str(model_url))
                (task,) = list(env.taskset)[:1]
                killed = await env.run_episode(task, ctx)
                after = await env.run_episode(task, ctx)
                return [killed, after], before, [s.url for s in env.pool.servers]

        (killed, after), before, now = asyncio.run(main())
    print("outcomes:", outcome(killed), outcome(after), "replicas before:", before, "after:", now)
    assert outcome(killed)[1] == "env_lost", outcome(killed)
    assert outcome(after) == (True, "env_done", 1.0)
    assert now and set(now).isdisjoint(before), (before, now)  # the new replica's own relay
    assert "swarm replica" in caplog.text and "joined" in caplog.text
    assert docker_images.labelled(token) == []


def wall_probe(replicas: list[str], router: str) -> str:
    """Model code that tries to reset and step every other replica of its launch: at its
    address on port 8000 (its server) and at the gate's port without the secret, and through
    the router (which asks the gate); and to read the launch's secret."""
    reset = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    body = json.dumps({"action": {"code": PLAIN}}).encode()
    step = b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    return "\n".join(
        [
            "import errno, json, socket",
            "def ask(address, data):",
            "    try:",
            "        with socket.create_connection(address, timeout=5) as s:",
            "            s.sendall(data)",
            "            reply = b''",
            "            while True:",
            "                chunk = s.recv(65536)",
            "                if not chunk:",
            "                    break",
            "                reply += chunk",
            "        return [line.decode() for line in reply.split(b'\\r\\n') if line.startswith(b'HTTP/1.1 ')]",
            "    except OSError as e:",
            "        return errno.errorcode.get(e.errno or 0, type(e).__name__)",
            "own = socket.gethostbyname(socket.gethostname())",
            "found = {'own': own}",
            f"for other in [a for a in {replicas!r} if a != own]:",
            f"    for name, request in (('reset', {reset!r}), ('step', {step!r})):",
            "        found[other + ' 8000 ' + name] = ask((other, 8000), request)",
            f"        found[other + ' {GATE_PORT} ' + name] = ask((other, {GATE_PORT}), request)",
            f"        connect = ('CONNECT %s:{GATE_PORT} HTTP/1.1\\r\\n\\r\\n' % other).encode()",
            f"        found[other + ' router ' + name] = ask(({router!r}, 18080), connect + request)",
            "try:",
            "    found['secret'] = open('/run/secrets/openenvgen-access').read() and 'read'",
            "except OSError as e:",
            "    found['secret'] = errno.errorcode[e.errno]",
            "print('wall', json.dumps(found), 'done')",
        ]
    )


def replica_network_addresses(token: str) -> tuple[list[str], str]:
    """The running replicas' addresses on their launch's internal network, and the router's there."""
    services = {
        docker_images.docker("service", "inspect", "--format", "{{.Spec.Name}}", s).stdout.strip(): s
        for s in docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")
    }
    (router,) = [name for name in services if name.endswith("-router")]
    (replicas,) = [name for name in services if name != router]

    def on_network(task: dict[str, Any]) -> str:
        (address,) = [
            a["Addresses"][0].split("/")[0]
            for a in task["NetworksAttachments"]
            if a["Network"]["Spec"]["Name"].endswith("-replicas")
        ]
        return address

    running = [t for t in service_tasks(replicas) if t["Status"]["State"] == "running"]
    (router_task,) = [t for t in service_tasks(router) if t["Status"]["State"] == "running"]
    return sorted(on_network(t) for t in running), on_network(router_task)


def test_one_replicas_code_reaches_no_other_replica_nor_the_secret(code_image: str, code_pkg: str, token: str) -> None:
    """Two replicas: the model's code in one tries to reset and step the other at its
    address (the server's port 8000 and the gate's) and through the router, and to read the
    launch's secret. Each replica's gate routes every address of the internal network but
    the routers' nowhere (so neither port answers: no HTTP reply at all), the router's way
    ends at the other replica's gate (401 without the secret), and the secret file is the
    gate's (root's, 0400): the code, as nobody, cannot open it. The run's own episodes play."""
    taskset = swarm_taskset(code_image, token, replicas=2)
    codes = Codes([])
    model = ScriptedChatModel(codes)
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[list[Any], tuple[list[str], str]]:
            async with env.serving():
                layout = ([], "")
                for _ in range(120):  # both replicas running (the pool starts with the first one up)
                    layout = await asyncio.to_thread(replica_network_addresses, token)
                    if len(layout[0]) == 2:
                        break
                    await asyncio.sleep(1)
                probe = wall_probe(*layout)
                codes.codes += [probe, probe, PLAIN, PLAIN]
                ctx = model_context(str(model_url))
                (task,) = list(env.taskset)[:1]
                probes = await asyncio.gather(env.run_episode(task, ctx), env.run_episode(task, ctx))
                plain = await asyncio.gather(env.run_episode(task, ctx), env.run_episode(task, ctx))
                return [*probes, *plain], layout

        episodes, layout = asyncio.run(main())
    print("the launch's replicas and router on its network:", layout)
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    assert len(layout[0]) == 2, layout
    for episode in episodes[:2]:
        found = json.loads(reported(episode, "wall"))
        print("one replica's code found:", found)
        (other,) = [a for a in layout[0] if a != found["own"]]
        assert found["secret"] == "EACCES", found
        for name in ("reset", "step"):
            assert isinstance(found[f"{other} 8000 {name}"], str), found  # an errno: no HTTP reply at all
            assert isinstance(found[f"{other} {GATE_PORT} {name}"], str), found
            assert found[f"{other} router {name}"] == [
                "HTTP/1.1 200 Connection established",
                "HTTP/1.1 401 Unauthorized",
            ], found
    assert docker_images.labelled(token) == []


def test_another_local_user_cannot_reach_a_replica_through_its_relay(
    code_image: str, code_pkg: str, token: str, pytestconfig: pytest.Config
) -> None:
    """As a second OS user that sees the replica's loopback port (not its URL): every reset,
    step, schema read and WebSocket is refused by the replica's relay, so none reaches the
    replica (its log shows the run's requests alone) and the launch's secret is added to
    none; the run's sessions take that relay alone (no second one in front of it) and play on."""
    model = ScriptedChatModel(Codes([PLAIN]))
    with other_user(pytestconfig) as user, serve_app(model) as model_url:
        env = load_env(code_pkg, swarm_taskset(code_image, token))

        async def main() -> tuple[str, str, dict[str, str], str, Any]:
            async with env.serving():
                (server,) = env.pool.servers
                url = await env.pool.session_url(server)
                found = await asyncio.to_thread(probe_as, user, url)
                service = (await asyncio.to_thread(swarm_layout, token))["replicas"]
                logs = docker_images.docker("service", "logs", "--raw", service, check=False)
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                return server.url, url, found, logs.stdout + logs.stderr, episode

        replica, url, found, log, episode = asyncio.run(main())
    assert all(status.startswith(REFUSED) for status in found.values()), found
    assert url == replica and url.startswith("http://127.0.0.1:") and len(url.rsplit("/", 1)[1]) >= 32
    assert "/health" in log and "/reset" not in log and "/step" not in log, log
    assert outcome(episode) == (True, "env_done", 1.0)
    assert docker_images.labelled(token) == []

"""A code-executing package on Swarm, sandboxed (its default): on the machine's single-node
swarm, the code env (it runs the action's Python) launched with `use_swarm`, played by a
scripted model whose code reports its uid, whether the trainer's variable reached it and
whether it can write outside /tmp, and forks until refused. Outcome: the model's code runs
as nobody (65534) on a read-only root, sees no variable set only in this (the trainer's)
process, and its forks stop at `sandbox_pids`; the access gate still admits the run (every
episode plays, the replica too goes on after the forks) and refuses a client without the
launch's secret; the launch line says the sandbox ran; nothing is left afterwards.

The forks run only inside the replica, which has small limits (processes, memory, half a
CPU), and stop by themselves after FORK_CAP, so a replica that had no process limit fails
the test without taking the machine down.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import generate_code_env_package, load_env, model_context, outcome
from openenvgen_testsupport.scripted_model import ScriptedChatModel, count_assistant_turns
from openenvgen_testsupport.servers import serve_app

pytestmark = [pytest.mark.swarm, pytest.mark.rollout, pytest.mark.timeout(600)]
RUN = uuid.uuid4().hex
SECRET_NAME = "SOME_TRAINER_SECRET"
SECRET = f"trainer-secret-{uuid.uuid4().hex}"
PIDS = 96
"""The replica's process limit: the gate, the server and its threads fit well below it."""
FORK_CAP = 1000
"""Where the fork probe stops by itself: far above PIDS, far below what hurts the machine."""
PROBE = "\n".join(
    [
        "import errno, json, os",
        f"found = {{'uid': os.getuid(), 'secret': os.environ.get({SECRET_NAME!r})}}",
        "for path in ('/app/written', '/written', '/tmp/written'):",
        "    try:",
        "        open(path, 'w').write('x')",
        "        found[path] = 'written'",
        "    except OSError as e:",
        "        found[path] = errno.errorcode[e.errno]",
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
PLAIN = "print('plain', 'done')"


@pytest.fixture(scope="module", autouse=True)
def host_left_as_found() -> Iterator[None]:
    with docker_images.host_left_as_found(RUN):
        yield


@pytest.fixture(scope="module")
def image(host_left_as_found: None) -> Iterator[str]:
    with docker_images.single_node_swarm():
        yield docker_images.code_env_image()


@pytest.fixture(scope="module")
def code_pkg(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The code env's package, generated with `--executes-code` (sandboxed by default)."""
    return generate_code_env_package(tmp_path_factory.mktemp("pkgs"))


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


def reported(episode: Any, word: str) -> str:
    """What the model's code printed after `word` (up to its `done`), from the episode."""
    text = episode.model_dump_json().replace('\\"', '"')
    return text.split(f"{word} ", 1)[1].split(" done", 1)[0]


def test_model_code_on_swarm_stays_in_the_sandbox(
    image: str,
    code_pkg: str,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setenv(SECRET_NAME, SECRET)
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    taskset = {
        "env": "test/code-env",
        "use_swarm": True,
        "replicas": 1,
        "startup_timeout": 180,
        "reply_timeout": 60,
        "sandbox_pids": PIDS,
        "sandbox_memory": "512m",
        "sandbox_cpus": 0.5,
        "provider_kwargs": {"image": image, "labels": labels},
    }
    model = ScriptedChatModel(Codes([PROBE, PLAIN, FORKS, PLAIN]))
    with serve_app(model) as model_url:
        env = load_env(code_pkg, taskset)

        async def main() -> tuple[list[Any], list[dict[str, int]], str]:
            async with env.serving():
                refused = [await unauthenticated(s.url) for s in env.pool.servers]
                ctx = model_context(str(model_url))
                (task,) = list(env.taskset)[:1]
                # The probe and a plain episode at once, then the forks, then one more: the
                # replica plays on after its processes ran out.
                first = await asyncio.gather(env.run_episode(task, ctx), env.run_episode(task, ctx))
                forks = await env.run_episode(task, ctx)
                after = await env.run_episode(task, ctx)
                (service,) = docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")
                limits = docker_images.docker(
                    "service", "inspect", "--format", "{{json .Spec.TaskTemplate.Resources.Limits}}", service
                ).stdout
                return [*first, forks, after], refused, limits

        episodes, refused, limits = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    assert refused == [{"GET /health": 200, "POST /reset": 401, "POST /step": 401, "WS /ws": 401}], refused
    assert json.loads(limits)["Pids"] == PIDS, limits
    probe = next(e for e in episodes if "probe {" in e.model_dump_json())
    found = json.loads(reported(probe, "probe"))
    print("the probe found:", found)
    assert found["uid"] == 65534 and found["secret"] is None, found
    assert found["/app/written"] == found["/written"] == "EROFS", found  # not EACCES: the root is read-only
    assert found["/tmp/written"] == "written", found  # the scratch tmpfs
    count, refusal = reported(next(e for e in episodes if "forks " in e.model_dump_json()), "forks").split()
    print(f"the model's code forked {count} times before {refusal}")
    assert refusal == "BlockingIOError" and 0 < int(count) < PIDS, (count, refusal)  # EAGAIN at the limit
    assert "swarm, sandboxed on the node's runtime, network egress" in caplog.text
    assert SECRET not in caplog.text and SECRET not in repr([e.model_dump_json() for e in episodes])
    assert docker_images.labelled(token) == []

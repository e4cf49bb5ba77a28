"""The sandbox, attacked for real: a code-executing package (the fixture env that runs the
action's Python, in an image built like the guess env's) played by a scripted model whose
code reads a variable set only in this (the trainer's) process, writes a file under /tmp,
connects to listeners on the host's loopback and on the Docker bridge's host address,
prints its uid, forks without bound and allocates without bound. Under runc on the
machine's daemon, and under gVisor (runsc) in a throwaway daemon that registers it (the
image is loaded into it with `docker save | docker load`); on Swarm, the same hardening on
the service. Outcome: no secret in any episode, trace or log; no host file; no connection
accepted; a non-root uid; the bombs end their own step or episode while another episode
plays on and the host stays responsive; nothing left running, also when a launch is
stopped while its container starts. A real `vf-eval` of the
package, killed (SIGTERM, SIGKILL) mid-episode, leaves no container and no socket folder of
its run. Bad sandbox settings are one line before any container starts.

The bombs run only inside a sandboxed container with small limits (memory, processes,
half a CPU): never anywhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.launching.docker_cli import OWNER_LABEL
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.sandbox import folders
from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import load_env, model_context, outcome, wait_for
from openenvgen_testsupport.host_listeners import Listener, bridge_address, connect_probe, interface_addresses
from openenvgen_testsupport.local_user import REFUSED, other_user, probe_as
from openenvgen_testsupport.rollout import start_eval
from openenvgen_testsupport.scripted_model import ScriptedChatModel, count_assistant_turns
from openenvgen_testsupport.servers import serve_app
from openenvgen_testsupport.skips import REQUIRE_DOCKER, skip_loudly

pytestmark = [
    pytest.mark.docker,
    pytest.mark.rollout,
    pytest.mark.timeout(900),
    pytest.mark.usefixtures("host_left_as_found"),
]
RUN = uuid.uuid4().hex
SECRET_NAME = "SOME_TRAINER_SECRET"
SECRET = f"trainer-secret-{uuid.uuid4().hex}"
RUNSC_ARGS = ["--platform=ptrace", "--network=host", "--host-uds=all"]
"""What runsc needs on this machine, in Docker's network namespace, serving the host a socket."""
LIMITS = {
    "runc": {"sandbox_memory": "256m", "sandbox_pids": 64, "sandbox_cpus": 0.5, "sandbox_scratch": "16m"},
    # gVisor's own kernel runs in the container's cgroup: its threads count as processes.
    "runsc": {"sandbox_memory": "512m", "sandbox_pids": 256, "sandbox_cpus": 0.5, "sandbox_scratch": "16m"},
}
"""Small limits, so the bombs hit them fast and take little of a shared machine."""
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
MEMORY_BOMB = "blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 2**20))\n"
PLAIN = "print('plain', 'done')"
LATER = "print('later', 'done')"
CODE_MARKS = {"probe": "print('probe'", "fork": "os.fork()", "memory": "bytearray(", "plain": "print('plain'"}
"""How each episode's trace is told apart: its first code (later replies are PLAIN)."""


def probe_code(host_file: str, listeners: list[Listener]) -> str:
    return "\n".join(
        [
            "import json, os",
            f"found = {{'uid': os.getuid(), 'secret': os.environ.get({SECRET_NAME!r})}}",
            "try:",
            f"    open({host_file!r}, 'w').write('x')",
            "    found['wrote'] = 'in the container'",
            "except OSError as e:",
            "    found['wrote'] = type(e).__name__",
            *connect_probe(listeners),
            "print('probe', json.dumps(found), 'done')",
        ]
    )


class Bombs:
    """The scripted model: each new episode's first reply is the next code of `codes`;
    later replies end the episode (LATER)."""

    def __init__(self, codes: list[str]) -> None:
        self.codes = list(codes)
        self.lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        if count_assistant_turns(messages) > 0:
            return json.dumps({"code": LATER})
        with self.lock:
            return json.dumps({"code": self.codes.pop(0)})


class Responsiveness:
    """How long the host takes to start a process while the bombs run (the worst seen)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            started = time.monotonic()
            subprocess.run(["true"], check=True, timeout=60)
            self.worst = max(self.worst, time.monotonic() - started)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.worst


def sandbox_dirs() -> set[str]:
    return {p.name for p in Path("/tmp").glob("openenvgen-sandbox-*")}


def relay_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("loopback-relay")]


def containers(token: str) -> list[str]:
    return docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}")


def sandbox_taskset(image: str, token: str, **extra: Any) -> dict[str, Any]:
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    return {
        "env": "test/code-env",
        "use_docker": True,
        "startup_timeout": 180,
        "provider_kwargs": {"image": image, "labels": labels},
        **extra,
    }


def attack(code_pkg: str, image: str, token: str, runtime: str, caplog: pytest.LogCaptureFixture) -> None:
    """Four episodes at once, one container each: the probe, a fork bomb, a memory bomb and a
    plain one; everything the acceptance asks of the sandbox, checked."""
    caplog.set_level(logging.INFO)
    host_file = f"/tmp/openenvgen-sandbox-probe-{uuid.uuid4().hex}"
    listeners = [Listener("127.0.0.1"), Listener(bridge_address())]
    dirs_before = sandbox_dirs()
    model = ScriptedChatModel(Bombs([probe_code(host_file, listeners), FORK_BOMB, MEMORY_BOMB, PLAIN]))
    # A bomb's step gets no reply: the episode is lost after reply_timeout, not the run.
    taskset = sandbox_taskset(
        image, token, max_servers=4, reply_timeout=15, container_runtime=runtime, **LIMITS[runtime]
    )
    logs: list[str] = []
    try:
        with serve_app(model) as model_url:
            env = load_env(code_pkg, taskset)

            async def main() -> list[Any]:
                async with env.serving():
                    ctx = model_context(str(model_url))
                    watch = Responsiveness()
                    started = time.monotonic()
                    try:
                        episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 4))
                    finally:
                        worst = watch.stop()
                    assert time.monotonic() - started < 240
                    assert worst < 5.0, f"the host took {worst:.1f}s to start a process while the bombs ran"
                    for container in containers(token):
                        shown = docker_images.docker("logs", container, check=False)
                        logs.append(shown.stdout + shown.stderr)
                    return list(episodes)

            episodes = asyncio.run(main())
    finally:
        for listener in listeners:
            listener.close()
    texts = [e.model_dump_json() for e in episodes]
    pairs = list(zip(texts, episodes, strict=True))
    by_code = {kind: [e for t, e in pairs if mark in t] for kind, mark in CODE_MARKS.items()}
    assert {kind: len(found) for kind, found in by_code.items()} == dict.fromkeys(CODE_MARKS, 1), by_code
    probe = by_code["probe"][0].model_dump_json()
    assert outcome(by_code["probe"][0]) == (True, "env_done", 1.0)
    found = json.loads(probe.split("probe ")[-1].split(" done")[0].replace('\\"', '"'))
    print("the probe found:", found)
    assert found["uid"] != 0 and found["secret"] is None, found
    for listener in listeners:
        assert found[listener.address] != "connected", found
        assert listener.accepted == [], f"{listener.address} accepted {listener.accepted}"
    assert not Path(host_file).exists()
    assert outcome(by_code["plain"][0]) == (True, "env_done", 1.0)
    # Each bomb ended: its step (the memory bomb's process killed at the limit) or its episode.
    print("outcomes:", {kind: outcome(found[0]) for kind, found in by_code.items()})
    assert "launch" in caplog.text and f"sandboxed on {runtime}, no network" in caplog.text
    everything = "\n".join([*texts, caplog.text, *logs])
    assert SECRET not in everything
    assert containers(token) == []
    assert relay_threads() == []
    assert sandbox_dirs() - dirs_before == set()


def test_model_code_stays_in_the_runc_sandbox(
    code_pkg: str, code_image: str, token: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET)
    attack(code_pkg, code_image, token, "runc", caplog)


def test_model_code_stays_in_the_gvisor_sandbox(
    code_pkg: str,
    code_image: str,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> None:
    """gVisor in a daemon of its own (the machine's is never told of runsc). Without one (no
    runsc, no root) it skips loudly, as the Docker tests do without a daemon, and fails
    instead under OPENENVGEN_REQUIRE_DOCKER=1 (.ci/run installs Debian's `runsc`)."""
    with contextlib.ExitStack() as stack:
        try:
            host = stack.enter_context(docker_images.throwaway_daemon(runtimes={"runsc": RUNSC_ARGS}))
        except docker_images.DockerUnavailable as e:
            reason = f"it needs a throwaway Docker daemon with gVisor: {e} (Debian: apt-get install runsc)"
            skip_loudly(request.config, "the gVisor sandbox test", reason, required_by=REQUIRE_DOCKER)
        stack.callback(monkeypatch.delenv, "DOCKER_HOST", raising=False)  # before the daemon stops
        save = subprocess.Popen(["docker", "save", code_image], stdout=subprocess.PIPE)
        loaded = subprocess.run(
            ["docker", "load"], stdin=save.stdout, env={**os.environ, "DOCKER_HOST": host}, capture_output=True
        )
        save.wait()
        assert loaded.returncode == 0, loaded.stderr
        monkeypatch.setenv("DOCKER_HOST", host)
        monkeypatch.setenv(SECRET_NAME, SECRET)
        attack(code_pkg, code_image, token, "runsc", caplog)


def test_another_local_user_cannot_reach_the_sandboxed_server(
    code_pkg: str, code_image: str, token: str, pytestconfig: pytest.Config
) -> None:
    """As a second OS user that sees the run's loopback port (not its URL): every reset,
    step, schema read and WebSocket is refused by the relay, so none reaches the container's
    server (its log shows the run's requests alone); the run's episode plays on."""
    model = ScriptedChatModel(Bombs([PLAIN]))
    with other_user(pytestconfig) as user, serve_app(model) as model_url:
        env = load_env(code_pkg, sandbox_taskset(code_image, token))

        async def main() -> tuple[str, dict[str, str], str, Any]:
            async with env.serving():
                (server,) = env.pool.servers
                url = await env.pool.session_url(server)
                found = await asyncio.to_thread(probe_as, user, url)
                (container,) = containers(token)
                shown = docker_images.docker("logs", container, check=False)
                episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                return url, found, shown.stdout + shown.stderr, episode

        url, found, log, episode = asyncio.run(main())
    assert all(status.startswith(REFUSED) for status in found.values()), found
    assert url.startswith("http://127.0.0.1:") and len(url.rsplit("/", 1)[1]) >= 32
    assert "/health" in log and "/reset" not in log and "/step" not in log, log
    assert outcome(episode) == (True, "env_done", 1.0)
    assert containers(token) == [] and relay_threads() == []


NETWORKED = {"not-sandboxed": {"sandbox": False}, "egress": {"sandbox_network": "egress"}}
"""The Docker launches whose container keeps a network: the sandbox off, or on with egress."""


@pytest.mark.parametrize("launch", list(NETWORKED))
def test_another_local_user_cannot_reach_a_docker_server_with_network(
    code_pkg: str, code_image: str, token: str, pytestconfig: pytest.Config, launch: str
) -> None:
    """As a second OS user: at the run's loopback port every request is the relay's 403, and
    at the container's own address on the Docker bridge (from the bridge's host side, and
    from another of the machine's addresses) nothing answers, so none reaches the server
    (its log shows the run's requests alone); the run's episode plays on, and its code
    still reaches the host's bridge address: the container kept its network."""
    listener = Listener(bridge_address())
    reach = "\n".join(["import json", "found = {}", *connect_probe([listener]), "print('reach', json.dumps(found))"])
    model = ScriptedChatModel(Bombs([reach]))
    other = next(a for a in interface_addresses() if not a.startswith("127.") and a != listener.address)
    try:
        with other_user(pytestconfig) as user, serve_app(model) as model_url:
            env = load_env(code_pkg, sandbox_taskset(code_image, token, **NETWORKED[launch]))

            async def main() -> tuple[str, dict[str, str], dict[str, str], str, Any]:
                async with env.serving():
                    (server,) = env.pool.servers
                    url = await env.pool.session_url(server)
                    (container,) = containers(token)
                    inspected = docker_images.docker("inspect", "-f", "{{.NetworkSettings.IPAddress}}", container)
                    direct = f"http://{inspected.stdout.strip()}:8000"
                    found = await asyncio.to_thread(probe_as, user, url)
                    bridged = await asyncio.to_thread(probe_as, user, direct, timeout=2)
                    bridged |= {
                        f"from {other}: {k}": v
                        for k, v in (await asyncio.to_thread(probe_as, user, direct, timeout=2, source=other)).items()
                    }
                    shown = docker_images.docker("logs", container, check=False)
                    episode = await env.run_episode(list(env.taskset)[0], model_context(str(model_url)))
                    return url, found, bridged, shown.stdout + shown.stderr, episode

            url, found, bridged, log, episode = asyncio.run(main())
    finally:
        listener.close()
    assert all(status.startswith(REFUSED) for status in found.values()), found
    assert not any(status.startswith("HTTP/") for status in bridged.values()), bridged
    assert url.startswith("http://127.0.0.1:") and len(url.rsplit("/", 1)[1]) >= 32
    assert "/health" in log and "/reset" not in log and "/step" not in log, log
    assert outcome(episode) == (True, "env_done", 1.0)
    assert listener.accepted, episode.model_dump_json()
    assert containers(token) == [] and relay_threads() == []


def test_a_launch_stopped_while_its_container_starts_leaves_nothing(code_image: str, token: str) -> None:
    """`stop()` while the launch runs (the pool closing, a replacement cancelled), at several
    moments of it: a launch that had not finished fails with one line, and whatever the
    moment, no container, relay thread or socket folder is left afterwards."""
    from openenvgen_runtime.launching import docker_provider
    from openenvgen_runtime.launching.sandbox.hardening import Sandbox

    sandbox = Sandbox(runtime="runc", memory="256m", pids=64, cpus=0.5, scratch="16m", network="none")
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN, OWNER_LABEL: token}
    dirs_before = sandbox_dirs()
    results = []
    for delay in (0.0, 0.1, 0.2, 0.4, 0.8, 1.6):
        provider = docker_provider.provider_for(code_image, {}, labels=labels, timeout=60, sandbox=sandbox)
        result: dict[str, Any] = {}

        def launch(provider: Any = provider, result: dict[str, Any] = result) -> None:
            try:
                result["urls"] = provider.launch()
            except LaunchError as e:
                result["error"] = str(e)

        thread = threading.Thread(target=launch)
        thread.start()
        time.sleep(delay)
        provider.stop()
        thread.join(120)
        results.append(result)
        assert containers(token) == [] and relay_threads() == [], (delay, result)
    print("launches stopped at 0, 0.1, 0.2, 0.4, 0.8, 1.6 s:", results)
    stopped = [r["error"] for r in results if "error" in r]
    assert stopped and all(e.startswith("use_docker: stopped ") and "\n" not in e for e in stopped), results
    assert sandbox_dirs() - dirs_before == set()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_killed_run_leaves_no_container_and_no_socket_folder(
    code_pkg: str, code_image: str, token: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """A real `vf-eval` is killed while its sandboxed episode waits on the model: its
    reaper removes the container and the run's socket folder (named by its owner label)."""

    def slow(messages: list[dict[str, Any]]) -> str:
        time.sleep(60)
        return json.dumps({"code": PLAIN})

    model = ScriptedChatModel(slow)
    with serve_app(model) as model_url:
        proc = start_eval(
            code_pkg, model_url=str(model_url), out_dir=tmp_path, taskset=sandbox_taskset(code_image, token)
        )
        try:
            assert wait_for(lambda: len(model.requests) >= 1, 240), (tmp_path / "vf-eval.log").read_text()[-2000:]
            (container,) = containers(token)
            shown = docker_images.docker(
                "inspect", "--format", f'{{{{index .Config.Labels "{OWNER_LABEL}"}}}}', container
            )
            owner = shown.stdout.strip()
            assert len(folders.owned(owner)) == 1, (owner, sandbox_dirs())
            proc.send_signal(sig)
            proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert wait_for(lambda: containers(token) == [], 60), containers(token)
    assert wait_for(lambda: folders.owned(owner) == [], 30), folders.owned(owner)


def test_bad_sandbox_settings_are_one_line_before_any_container(code_pkg: str, code_image: str, token: str) -> None:
    """runsc asked of a daemon without it; a sandbox asked of the UV launch; an image with no
    python for the shim, sandboxed or not: each one line, nothing left."""
    cases = [
        (sandbox_taskset(code_image, token, container_runtime="runsc"), "container_runtime = runsc: "),
        ({"env": "test/code-env", "sandbox": True, "allow_host_execution": True}, "sandbox = true needs a container"),
    ]
    empty = docker_images.docker(
        "import", "--change", 'CMD ["/serve"]', "--change", f"LABEL {docker_images.TEST_LABEL}=1", "-", input=""
    )
    no_python = empty.stdout.strip()
    no_shim = "use_docker: the runtime starts its relay with the image's python3"
    cases.append((sandbox_taskset(no_python, token), no_shim))
    cases.append((sandbox_taskset(no_python, token, sandbox=False), no_shim))
    try:
        for taskset, start in cases:
            env = load_env(code_pkg, taskset)

            async def main(env: Any = env) -> None:
                async with env.serving():
                    raise AssertionError("started")

            with pytest.raises(LaunchError) as info:
                asyncio.run(main())
            message = str(info.value)
            assert start in message and "\n" not in message, message
            assert containers(token) == []
    finally:
        docker_images.docker("rmi", "-f", no_python, check=False)
    with pytest.raises(ValueError, match="sandbox_memory"):
        load_env(code_pkg, sandbox_taskset(code_image, token, sandbox_memory="lots"))


def test_the_sandbox_settings_come_from_the_command_line(code_pkg: str) -> None:
    """vf-eval's `--env.taskset.KEY VALUE` arrives as strings."""
    config = load_env(
        code_pkg,
        {"sandbox": "true", "sandbox_pids": "128", "sandbox_cpus": "1.5", "container_runtime": "runc"},
    ).taskset.config
    assert (config.sandbox, config.sandbox_pids, config.sandbox_cpus) == (True, 128, 1.5)
    assert config.container_runtime == "runc" and config.sandbox_network == "none"

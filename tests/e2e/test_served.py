"""The training path: generated packages under verifiers' own env server, as prime-rl runs them.

The client (prime-rl's orchestrator) loads the taskset in its own process and ships each task's
dumped data; `serve_env` in a spawned process rebuilds the env config from its JSON dump in every
worker, which owns its server pool, its seat and its episodes; `EnvClient.run` streams each
episode back (see openenvgen_testsupport.served). Real OpenEnv servers on loopback, a scripted model,
real worker processes, the UV, Docker and Swarm launch modes; what is left after a worker or the
env server is signalled is counted like the other cleanup tests. Where verifiers 0.4.0 itself
gives the client no answer (a worker that dies), the test proves that with a timeout and
docs/training.md says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from verifiers.v1.serve import EnvClient, env_config_data
from verifiers.v1.utils.loaders import resolve_env_config

from openenvgen_runtime.launching.launch import LaunchError
from openenvgen_servers.ports import free_port
from openenvgen_testsupport import docker_images, served
from openenvgen_testsupport.adapters import (
    generate_code_env_package,
    generate_from_server,
    marked_processes,
    uv_taskset,
    wait_for,
)
from openenvgen_testsupport.media_envs import make_task_api_app
from openenvgen_testsupport.paths import ROOT, UV_TASK_FIXTURE_APP, UV_TASK_FIXTURE_PROJECT
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel, ToolCalls, message_text
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

pytestmark = [pytest.mark.served, pytest.mark.timeout(900)]

HANG = 20.0
"""Seconds a test waits for an answer verifiers 0.4.0 never sends (a dead worker's episodes)."""


# --- configs survive the wire -----------------------------------------------------------------

SHAPES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "package-default-env": ("wordle-openenv", {}, {}),
    "env-set": ("wordle-openenv", {"env": "openenv/wordle"}, {}),
    "base-url": ("wordle-openenv", {"base_url": "http://127.0.0.1:8001"}, {}),
    "base-url-list": ("wordle-openenv", {"base_url": ["http://127.0.0.1:8001", "http://127.0.0.1:8002/"]}, {}),
    "base-url-cli-commas": ("wordle-openenv", {"base_url": "http://127.0.0.1:8001, http://127.0.0.1:8002"}, {}),
    "base-url-cli-json": ("wordle-openenv", {"base_url": '["http://127.0.0.1:8001", "http://127.0.0.1:8002"]'}, {}),
    "env-and-base-url": ("wordle-openenv", {"env": "openenv/wordle", "base_url": "http://127.0.0.1:8001"}, {}),
    "docker": ("wordle-openenv", {"use_docker": True, "provider_kwargs": {"image": "x:1", "labels": {"a": "b"}}}, {}),
    "swarm": (
        "wordle-openenv",
        {"use_swarm": True, "replicas": 3, "provider_kwargs": {"image": "x:1", "cpu_limit": 0.5}},
        {},
    ),
    "provider-kwargs-over-defaults": (
        "wordle-openenv",
        {"provider_kwargs": {"project_path": "/srv/wordle", "env_vars": {"K": "v"}, "port": 9000}},
        {},
    ),
    "provider-kwargs-own-app": ("wordle-openenv", {"provider_kwargs": {"app": "other.server:app"}}, {}),
    "split": ("wordle-openenv", {"split": "train", "split_range": "10:", "resets": [{"max_guesses": 3}]}, {}),
    "split-over-base-url": ("wordle-openenv", {"base_url": "http://127.0.0.1:8001", "split": "test"}, {}),
    "resets": ("wordle-openenv", {"resets": [{"secret": "crane"}, {"secret": "plumb", "seed": 7}]}, {}),
    "hidden-fields-and-limits": (
        "wordle-openenv",
        {
            "hidden_fields": ["board.solution"],
            "max_media_bytes": 1024,
            "on_drift": "error",
            "max_servers": 2,
            "max_invalid_actions": 0,
            "startup_timeout": 5.5,
            "unavailable_timeout": 1,
        },
        {},
    ),
    "tools": ("wordle-openenv", {"action_format": "tools"}, {}),
    "mcp-tools": ("echo-openenv", {"action_format": "tools", "base_url": "http://127.0.0.1:8001"}, {}),
    "plugged-reward-and-seat": (
        "wordle-openenv",
        {"task": {"rewards": {"openenv_reward": {"weight": 2.0}}}},
        {"player": {"max_turns": 3, "harness": {"id": "null"}}},
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_config_survives_the_wire(shape: str) -> None:
    """What a worker rebuilds from the dump (`env_config_data`, as JSON) validates, has the
    package's own config type and equals what the user wrote; dumping it again is a fixed point."""
    package, taskset, env = SHAPES[shape]
    config = served.env_config(package, taskset, **env)
    data = env_config_data(config)
    wire = json.loads(json.dumps(data))
    rebuilt = resolve_env_config(wire)
    assert type(rebuilt.taskset) is type(config.taskset) and type(rebuilt) is type(config)
    assert rebuilt == config
    assert env_config_data(rebuilt) == data
    assert rebuilt.taskset.base_urls == config.taskset.base_urls
    assert rebuilt.taskset.provider_kwargs == config.taskset.provider_kwargs


GENERATED = sorted(p.parent.name for p in (ROOT / "generated").glob("*/pyproject.toml"))


@pytest.mark.parametrize("transport", ["launch", "base-url", "docker"])
@pytest.mark.parametrize("package", GENERATED)
def test_every_generated_package_config_survives_the_wire(package: str, transport: str) -> None:
    """Each checked-in package's own config (its env id, its PROVIDER_DEFAULTS) round-trips."""
    if importlib.util.find_spec(package.replace("-", "_")) is None:
        pytest.skip(
            f"{package} is not installed in this environment yet (make install installs every generated/ package)"
        )
    taskset = {"launch": {}, "base-url": {"base_url": "http://127.0.0.1:8001"}, "docker": {"use_docker": True}}[
        transport
    ]
    config = served.env_config(package, taskset)
    rebuilt = resolve_env_config(json.loads(json.dumps(env_config_data(config))))
    assert type(rebuilt.taskset) is type(config.taskset) and rebuilt == config


def test_a_package_default_app_is_kept_under_the_users_provider_kwargs() -> None:
    config = served.env_config("wordle-openenv", {"provider_kwargs": {"project_path": "/srv/wordle"}})
    rebuilt = resolve_env_config(env_config_data(config))
    assert rebuilt.taskset.provider_kwargs == {"app": "textarena_env.server.app:app", "project_path": "/srv/wordle"}


@pytest.mark.parametrize(
    ("taskset", "message"),
    [
        ({"env": "openenv/other", "base_url": "http://127.0.0.1:8001"}, "set `env` or `base_url`, not both"),
        ({"use_docker": True, "use_swarm": True}, "set `use_docker` or `use_swarm`, not both"),
        ({"split_range": "0:2"}, "`split_range` picks tasks of a `split`"),
        ({"split": "train", "split_range": "two"}, "split_range must be START:STOP"),
    ],
)
def test_a_config_that_cannot_work_fails_the_same_on_both_sides(taskset: dict[str, Any], message: str) -> None:
    """The user's config fails where it is written, before any worker; the same values arriving
    as a worker's dump fail there with the same one-line message."""
    with pytest.raises(ValueError, match=re.escape(message)) as at_client:
        served.env_config("wordle-openenv", taskset)
    dump = env_config_data(served.env_config("wordle-openenv"))
    dump["taskset"].update(taskset)
    with pytest.raises(ValueError, match=re.escape(message)) as in_worker:
        resolve_env_config(dump)
    assert _reason(at_client.value) == _reason(in_worker.value)


def test_provider_options_a_worker_would_refuse_fail_in_the_clients_load() -> None:
    """An option no provider takes is found by the orchestrator's `load()`, with the line a
    worker's pool start would give, so no worker starts on it."""
    config = served.env_config("wordle-openenv", {"provider_kwargs": {"image_name": "wordle"}})
    with pytest.raises(LaunchError, match=r"provider_kwargs not understood by the uv launch mode: \['image_name'\]"):
        served.client_tasks(config)


def _reason(error: BaseException) -> str:
    """The one-line reason pydantic wraps (its `Value error, ...` line)."""
    return next(line for line in str(error).splitlines() if "Value error" in line).split("[type=")[0].strip()


# --- fixtures shared by the served tests ------------------------------------------------------


@pytest.fixture(scope="module")
def task_server() -> Iterator[str]:
    """The counting env (Task API, concurrent sessions): task i of a split asks for i + 1."""
    with serve_app(make_task_api_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def count_pkg(task_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return generate_from_server("count", task_server, tmp_path_factory.mktemp("pkgs"))


def counting_reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic model: right on odd targets, one too many on even ones."""
    asked = re.findall(r"Say (\d+)\.", " ".join(message_text(m.get("content")) for m in messages))
    target = int(asked[-1]) if asked else 0
    return str(target if target % 2 else target + 1)


def _rollout_pids(log: str) -> set[int]:
    return {int(line.split()[0]) for line in log.splitlines() if "rollout done" in line}


def _first_user_text(episode: Any) -> str:
    (trace,) = episode.traces
    return next(message_text(m.content) for m in trace.messages if m.role == "user")


# --- the served path ----------------------------------------------------------------------------


@pytest.mark.rollout
def test_grpo_groups_of_a_task_api_split_on_a_static_pool(count_pkg: str, task_server: str, tmp_path: Path) -> None:
    """A split read over `base_url` in the client's `load()`; 4 tasks x G=4 rollouts on a static
    pool of 2 workers. Each group opens on its own task's observation, the same for all G, and
    (deterministic env and model) scores the same; both workers play."""
    config = served.env_config(count_pkg, {"base_url": task_server, "split": "train", "split_range": "0:4"})
    tasks = served.client_tasks(config)
    assert [t["name"].rsplit("#", 1)[1] for t in tasks] == ["train:0", "train:1", "train:2", "train:3"]
    group_size = 4
    model = ScriptedChatModel(counting_reply)
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), [t for t in tasks for _ in range(group_size)])
        workers = server.workers()
        log = server.log()
    groups: dict[str, list[Any]] = {}
    for episode in episodes:
        served.outcome(episode)  # raises what the client got instead of an episode
        groups.setdefault(episode.traces[0].task.data.name, []).append(episode)
    assert sorted(groups) == sorted(t["name"] for t in tasks)
    opened = {name: {_first_user_text(e) for e in group} for name, group in groups.items()}
    scores = {name: [served.outcome(e) for e in group] for name, group in groups.items()}
    for i, task in enumerate(tasks):
        name = task["name"]
        assert len(opened[name]) == 1 and f"Say {i + 1}." in opened[name].pop()
        won = 1.0 if (i + 1) % 2 else 0.0
        assert scores[name] == [(True, "env_done", won)] * group_size, (name, scores[name])
    assert len(workers) == 2 and _rollout_pids(log) == set(workers), (workers, _rollout_pids(log))


@pytest.mark.rollout
def test_a_fleet_of_base_urls_on_the_elastic_pool(tmp_path: Path) -> None:
    """`base_url` as a list of two running servers, the elastic pool (one worker): episodes
    spread over both servers of the fleet and all win."""
    with (
        serve_app_subprocess(
            "openenvgen_testsupport.fixture_envs:make_tagged_wordle_app",
            env={"WORDLE_FIXTURE_TAG": "east"},
            factory=True,
            ready_path="/health",
        ) as east,
        serve_app_subprocess(
            "openenvgen_testsupport.fixture_envs:make_tagged_wordle_app",
            env={"WORDLE_FIXTURE_TAG": "west"},
            factory=True,
            ready_path="/health",
        ) as west,
    ):
        package = generate_from_server("wordle", str(east), tmp_path / "pkgs")
        config = served.env_config(package, {"base_url": [str(east), str(west)], "max_servers": 2})
        tasks = served.client_tasks(config)
        model = ScriptedChatModel(Script(["[slate]", "[crane]"]))
        with (
            serve_app(model) as model_url,
            served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
        ):
            episodes = served.play(server.address, str(model_url), tasks * 8)
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 8
    seen = Counter(tag for tag in ("east", "west") for body in model.requests if f"(server {tag})" in json.dumps(body))
    assert seen["east"] and seen["west"], seen


@pytest.mark.rollout
def test_tool_call_actions_on_a_served_worker(wordle_pkg: str, wordle_server: str, tmp_path: Path) -> None:
    """`action_format = "tools"`: every model call a worker makes offers the action as a function
    tool, and streamed tool calls play the game."""
    config = served.env_config(wordle_pkg, {"base_url": wordle_server, "action_format": "tools"})
    tasks = served.client_tasks(config)
    assert tasks[0]["action_tools"] and tasks[0]["action_tools"][0]["function"]["name"] == "act"
    model = ScriptedChatModel(
        Script([ToolCalls((("act", '{"message": "[slate]"}'),)), ToolCalls((("act", '{"message": "[crane]"}'),))])
    )
    with (
        serve_app(model) as model_url,
        served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
    ):
        episodes = served.play(server.address, str(model_url), tasks * 2)
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
    assert all([tool["function"]["name"] for tool in body["tools"]] == ["act"] for body in model.requests)


@pytest.mark.rollout
def test_an_mcp_env_on_a_served_worker(mcp_pkg: str, mcp_server: str, tmp_path: Path) -> None:
    config = served.env_config(mcp_pkg, {"base_url": mcp_server})
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script([json.dumps({"tool": "add", "arguments": {"a": 40, "b": 2}})]))
    with (
        serve_app(model) as model_url,
        served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
    ):
        episodes = served.play(server.address, str(model_url), tasks * 2)
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
    assert '"add"' in served.first_observation(model.requests[0])


def _serve_wordle_with(custom: str, wordle_server: str, tmp_path: Path) -> tuple[list[Any], ScriptedChatModel]:
    """The wordle package generated with `custom` as its custom.py, served by one worker on the
    elastic pool; its episodes of "crane" and "plumb" (the model guesses slate, then crane,
    repeating its last reply), and the model."""
    package = generate_from_server("wordle", wordle_server, tmp_path / "pkgs")
    module = package.removesuffix("-openenv").replace("-", "_") + "_openenv"
    (tmp_path / "pkgs" / package.removesuffix("-openenv").replace("-", "_") / module / "custom.py").write_text(custom)
    config = served.env_config(
        package, {"base_url": wordle_server, "resets": [{"secret": "crane"}, {"secret": "plumb"}]}
    )
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script(["[slate]", "[crane]"]))
    with (
        serve_app(model) as model_url,
        served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
    ):
        return served.play(server.address, str(model_url), tasks), model


CUSTOM_REWARD = """\
import verifiers.v1 as vf


@vf.reward(weight=0.5)
async def short_replies(trace) -> float:
    replies = [m.content or "" for m in trace.messages if m.role == "assistant"]
    return 1.0 if replies and all(len(r) <= 7 for r in replies) else 0.0
"""


@pytest.mark.rollout
def test_a_custom_py_reward_is_scored_in_the_worker(wordle_server: str, tmp_path: Path) -> None:
    """The package's `custom.py` reward, loaded by each worker from the package it imports,
    scores the episodes beside the env's reward."""
    episodes, _ = _serve_wordle_with(CUSTOM_REWARD, wordle_server, tmp_path)
    rewards = {
        e.traces[0].task.data.reset["secret"]: {k: (v.score, v.weight) for k, v in e.traces[0].rewards.items()}
        for e in episodes
    }
    assert rewards == {
        "crane": {"openenv_reward": (1.0, 1.0), "short_replies": (1.0, 0.5)},
        "plumb": {"openenv_reward": (0.0, 1.0), "short_replies": (1.0, 0.5)},
    }


CUSTOM_TYPED = """\
import verifiers.v1 as vf

from .models import WordGuessObservation


def render_observation(observation: WordGuessObservation) -> str:
    return f"prompt: {observation.prompt}\\nfeedback: {observation.feedback or '-'}"


@vf.reward(weight=0.5)
async def solved(observation: WordGuessObservation) -> float:
    return float(observation.feedback == "G G G G G")


@vf.metric
async def guesses(observations: list[WordGuessObservation]) -> float:
    return float(len(observations) - 1)  # the reset observation first
"""


@pytest.mark.rollout
def test_typed_hooks_render_and_score_in_the_worker(wordle_server: str, tmp_path: Path) -> None:
    """Typed hooks, as training runs them: each worker renders through the typed renderer and
    scores the typed reward and metric from the observations its episode recorded."""
    episodes, model = _serve_wordle_with(CUSTOM_TYPED, wordle_server, tmp_path)
    scores = {
        e.traces[0].task.data.reset["secret"]: (
            {k: (v.score, v.weight) for k, v in e.traces[0].rewards.items()},
            e.traces[0].metrics["guesses"],
        )
        for e in episodes
    }
    assert scores == {
        "crane": ({"openenv_reward": (1.0, 1.0), "solved": (1.0, 0.5)}, 2.0),
        # The script's last reply repeats: all six guesses.
        "plumb": ({"openenv_reward": (0.0, 1.0), "solved": (0.0, 0.5)}, 6.0),
    }
    # The model read the typed renderer's lines, never the default JSON.
    users = [
        m["content"]
        for c in model.conversations().values()
        for body in c
        for m in body["messages"]
        if m["role"] == "user"
    ]
    assert users and all("prompt: " in str(u) and '"prompt"' not in str(u) for u in users), users


# --- launch modes and lifecycle under a worker pool --------------------------------------------


@pytest.mark.rollout
def test_uv_launch_split_and_max_servers_per_worker(count_pkg: str, tmp_path: Path) -> None:
    """UV launch mode with a Task API split. The client's `load()` reads the split from a server
    it launches and stops (none left in the client process). Then each of 2 workers launches its
    own pool: `max_servers = 1` is per worker, so 2 servers, one under each worker. When the
    broker's worker is stopped (SIGTERM) its server goes with it; the other worker's stays
    until the env server stops."""
    marker = f"served-{uuid.uuid4().hex}"
    config = served.env_config(
        count_pkg,
        {
            "provider_kwargs": {
                "project_path": str(UV_TASK_FIXTURE_PROJECT),
                "app": UV_TASK_FIXTURE_APP,
                "env_vars": {"OPENENVGEN_TEST_MARKER": marker},
            },
            "split": "test",
            "split_range": ":3",
            "max_servers": 1,
            "startup_timeout": 300,
        },
    )
    tasks = served.client_tasks(config)
    assert len(tasks) == 3
    assert wait_for(lambda: marked_processes(marker) == [], timeout=30), "load() left its split server running"
    model = ScriptedChatModel(counting_reply)
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), tasks * 4, timeout=600)
        workers = server.workers()
        launched = served.launched_servers(marked_processes(marker))
        assert sorted(launched.values()) == sorted(workers), (launched, workers)
        doomed, survivor = workers
        os.kill(doomed, signal.SIGTERM)
        assert wait_for(
            lambda: list(served.launched_servers(marked_processes(marker)).values()) == [survivor], timeout=60
        ), served.launched_servers(marked_processes(marker))
    assert [served.outcome(e)[:2] for e in episodes] == [(True, "env_done")] * 12
    assert wait_for(lambda: marked_processes(marker) == [], timeout=60), marked_processes(marker)


@pytest.mark.rollout
@pytest.mark.parametrize(
    ("target", "sig"),
    [
        ("env-server", signal.SIGINT),
        ("env-server", signal.SIGTERM),
        ("env-server", signal.SIGKILL),
        ("worker", signal.SIGKILL),
    ],
    ids=["env-server-SIGINT", "env-server-SIGTERM", "env-server-SIGKILL", "worker-SIGKILL"],
)
def test_no_server_left_when_the_env_server_or_a_worker_is_signalled(
    guess_pkg: str, tmp_path: Path, target: str, sig: signal.Signals
) -> None:
    """UV launch on a static pool of 2 workers (one server each). Whatever ends the env-server
    process (SIGINT, SIGTERM, SIGKILL: its workers see the broker's death pipe close), or a
    worker's SIGKILL (its servers die with it), no server process of ours is left."""
    marker = f"served-{uuid.uuid4().hex}"
    config = served.env_config(guess_pkg, uv_taskset(marker, max_servers=1))
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script(['{"guess": 3}', "7"]))
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), tasks * 2, timeout=600)
        assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2
        workers = server.workers()
        assert sorted(served.launched_servers(marked_processes(marker)).values()) == sorted(workers)
        os.kill(workers[0] if target == "worker" else server.pid, sig)
        if target == "worker":
            assert wait_for(
                lambda: list(served.launched_servers(marked_processes(marker)).values()) == [workers[1]], timeout=60
            )
        else:
            server.process.join(120)
            assert not server.process.is_alive(), f"the env server outlived {sig.name}"
        assert wait_for(lambda: target == "worker" or marked_processes(marker) == [], timeout=60), marked_processes(
            marker
        )
    assert wait_for(lambda: marked_processes(marker) == [], timeout=60), marked_processes(marker)
    # A worker's interpreter can spend tens of seconds in its final garbage collection on a
    # busy machine (seen: 9-31 s) before it exits.
    assert wait_for(lambda: not any(served.children(w) or Path(f"/proc/{w}").exists() for w in workers), timeout=120)


async def healthy(address: str) -> None:
    client = EnvClient(address)
    try:
        await client.wait_for_server_startup(timeout=120)
    finally:
        await client.close()


def test_the_env_server_stops_on_sigint_when_started_with_sigint_ignored(
    count_pkg: str, task_server: str, tmp_path: Path
) -> None:
    """A test run that is a background job of a non-interactive shell (`make test &` in a
    script) starts with SIGINT ignored, and so does every process it spawns; verifiers 0.4.0's
    `serve_env` arms only SIGTERM, so its env server would ignore SIGINT and stay up. The
    harness's env server re-arms SIGINT (`served.serve_env_interruptible`): SIGINT stops it
    and its workers."""
    config = served.env_config(count_pkg, {"base_url": task_server})
    with contextlib.ExitStack() as stack:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # what the spawned server inherits
        try:
            server = stack.enter_context(served.env_server(config, tmp_path / "env-server.log"))
        finally:
            signal.signal(signal.SIGINT, previous)
        asyncio.run(healthy(server.address))
        assert wait_for(lambda: len(server.workers()) == 2, timeout=60), server.workers()
        workers = server.workers()
        server.signal(signal.SIGINT)
        server.process.join(120)
        assert not server.process.is_alive(), "the env server ignored SIGINT"
    assert wait_for(lambda: not any(Path(f"/proc/{w}").exists() for w in workers), timeout=30)


@pytest.mark.rollout
def test_a_worker_that_dies_mid_episode_leaves_its_episodes_unanswered(
    wordle_pkg: str, wordle_server: str, tmp_path: Path
) -> None:
    """verifiers 0.4.0: the broker neither notices a dead worker nor answers the requests it
    held, and starts no replacement; the client waits until its own timeout (docs/training.md).
    The other worker's episodes finish."""
    config = served.env_config(wordle_pkg, {"base_url": wordle_server})
    tasks = served.client_tasks(config)
    killed: list[int] = []
    workers: list[int] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        turns = sum(m["role"] == "assistant" for m in messages)
        if workers and not killed:
            killed.append(workers[0])
            os.kill(workers[0], signal.SIGKILL)
        return "[slate]" if turns == 0 else "[crane]"

    model = ScriptedChatModel(reply)
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        warm = served.play(server.address, str(model_url), tasks * 2, timeout=600)  # both workers up
        assert [served.outcome(e) for e in warm] == [(True, "env_done", 1.0)] * 2
        workers.extend(server.workers())
        results = served.play(server.address, str(model_url), tasks * 4, timeout=HANG)
        assert server.process.is_alive() and server.workers() == workers[1:]
    kinds = Counter("no answer" if isinstance(r, TimeoutError) else served.outcome(r) for r in results)
    assert killed and kinds == {"no answer": 2, (True, "env_done", 1.0): 2}, kinds


@pytest.mark.rollout
@pytest.mark.parametrize("failure", ["provider-option", "unreachable-base-url"])
def test_a_worker_that_cannot_start_logs_one_line_and_fails_each_episode(
    guess_pkg: str, tmp_path: Path, failure: str
) -> None:
    """A failure only a worker meets (a fleet it cannot reach), or a config check a host skipped
    (it never ran the client's `load()`): the worker logs the one-line reason once and stays up,
    and every episode sent to it fails with that reason, which the client sees (verifiers 0.4.0
    would leave a dead worker's episodes unanswered). One worker start, no respawn."""
    marker = f"served-{uuid.uuid4().hex}"
    tasks = served.client_tasks(served.env_config(guess_pkg, uv_taskset(marker)))
    if failure == "provider-option":
        taskset = uv_taskset(marker)
        taskset["provider_kwargs"]["image_name"] = "guess"
        reason = "provider_kwargs not understood by the uv launch mode: ['image_name']"
        with pytest.raises(LaunchError, match=re.escape(reason)):
            served.client_tasks(served.env_config(guess_pkg, taskset))
    else:
        url = f"http://127.0.0.1:{free_port()}"
        taskset = {"base_url": url}
        reason = f"{url}: cannot read the env's /schema"
        assert served.client_tasks(served.env_config(guess_pkg, taskset))  # nothing to see client-side
    config = served.env_config(guess_pkg, taskset)
    model = ScriptedChatModel(Script(["7"]))
    with (
        serve_app(model) as model_url,
        served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
    ):
        results = served.play(server.address, str(model_url), tasks * 3, timeout=300)
        workers = server.workers()
        log = server.log()
    assert len(workers) == 1
    for result in results:
        assert not isinstance(result, BaseException), result
        assert not result.ok and reason in result.errors[0].message, result.errors
    failed = [line for line in log.splitlines() if "the env cannot start in this worker" in line]
    assert len(failed) == 1 and reason in failed[0] and failed[0].startswith(str(workers[0])), failed
    assert log.count("EnvServer up") == 1 and "Env server failed" not in log
    assert not model.requests and marked_processes(marker) == []


# --- Docker and Swarm ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def image() -> str:
    # Only docker/swarm tests ask for it; without a daemon tests/conftest.py has skipped them
    # (or, under OPENENVGEN_REQUIRE_DOCKER=1, failed them) already.
    return docker_images.env_image()


@pytest.mark.rollout
@pytest.mark.docker
def test_docker_workers_each_run_their_own_containers_none_left_after_sigkill(
    image: str, guess_pkg: str, token: str, tmp_path: Path
) -> None:
    """Docker launch on a static pool of 2 workers, `max_servers = 1`: one container per worker;
    after the env server is SIGKILLed (its workers stop on the closed death pipe) none is left."""
    config = served.env_config(
        guess_pkg,
        {
            "env": "test/guess-env",
            "use_docker": True,
            "max_servers": 1,
            "startup_timeout": 300,
            "provider_kwargs": {"image": image, "labels": {docker_images.TEST_LABEL: token}},
        },
    )
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script(['{"guess": 3}', "7"]))
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), tasks * 4, timeout=900)
        running = docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}")
        server.signal(signal.SIGKILL)
        server.process.join(60)
        assert wait_for(lambda: docker_images.labelled(token) == [], timeout=180), docker_images.labelled(token)
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    assert len(running) == 2, running


@pytest.mark.rollout
@pytest.mark.swarm
def test_a_swarm_service_per_worker_is_removed_when_the_env_server_stops(
    image: str, guess_pkg: str, token: str, tmp_path: Path
) -> None:
    """Swarm launch on the elastic pool: the worker's service of 2 replicas plays the episodes;
    SIGTERM to the env server (a host's normal stop) removes the service and its containers."""
    config = served.env_config(
        guess_pkg,
        {
            "env": "test/guess-env",
            "use_swarm": True,
            "replicas": 2,
            "startup_timeout": 300,
            "provider_kwargs": {"image": image, "labels": {docker_images.TEST_LABEL: token}},
        },
    )
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script(['{"guess": 3}', "7"]))
    with (
        docker_images.single_node_swarm(),
        serve_app(model) as model_url,
        served.env_server(config, tmp_path / "env-server.log", pool=served.ELASTIC) as server,
    ):
        episodes = served.play(server.address, str(model_url), tasks * 4, timeout=900)
        services = docker_images.ours("service", f"{docker_images.TEST_LABEL}={token}")
        server.signal(signal.SIGTERM)
        server.process.join(120)
        assert wait_for(lambda: docker_images.labelled(token) == [], timeout=180), docker_images.labelled(token)
    assert [served.outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 4
    assert len(services) == 1, services


@pytest.mark.rollout
@pytest.mark.docker
def test_a_sandboxed_package_on_served_workers(
    token: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The training path with the sandbox: a code-executing package (sandboxed by default
    under Docker) on verifiers' served workers, its tasks shipped as wire data. The model's
    code, run in each worker's container, runs as nobody, sees none of the trainer's
    variables (the workers inherit them) and reaches no listener on the host; nothing is left."""
    secret_name, secret = "SOME_TRAINER_SECRET", f"trainer-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv(secret_name, secret)
    image = docker_images.code_env_image()
    package = generate_code_env_package(tmp_path_factory.mktemp("pkgs"))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    probe = (
        "import json, os, socket\n"
        f"found = {{'uid': os.getuid(), 'secret': os.environ.get({secret_name!r})}}\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=3).close()\n"
        "    found['host'] = 'connected'\n"
        "except OSError as e:\n"
        "    found['host'] = type(e).__name__\n"
        "print('probe', json.dumps(found), 'done')"
    )
    config = served.env_config(
        package,
        {
            "env": "test/code-env",
            "use_docker": True,
            "max_servers": 1,
            "startup_timeout": 300,
            "sandbox_memory": "256m",
            "sandbox_cpus": 0.5,
            "provider_kwargs": {"image": image, "labels": {docker_images.TEST_LABEL: token}},
        },
    )
    tasks = served.client_tasks(config)
    model = ScriptedChatModel(Script([json.dumps({"code": probe}), json.dumps({"code": "print('later')"})]))
    try:
        with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
            episodes = served.play(server.address, str(model_url), tasks * 2, timeout=900)
        with contextlib.suppress(TimeoutError):
            listener.accept()
            pytest.fail("the model's code reached a listener on the host")
    finally:
        listener.close()
    assert [served.outcome(e)[0] for e in episodes] == [True, True]
    texts = [json.dumps(e, default=str) if not hasattr(e, "model_dump_json") else e.model_dump_json() for e in episodes]
    found = [json.loads(t.split("probe ")[-1].split(" done")[0].replace('\\"', '"')) for t in texts if "probe {" in t]
    assert found and all(f["uid"] == 65534 and f["secret"] is None and f["host"] != "connected" for f in found), found
    log = (tmp_path / "env-server.log").read_text(errors="replace")
    assert "sandboxed on" in log, log[-2000:]
    assert secret not in "\n".join([*texts, log])
    assert wait_for(lambda: docker_images.labelled(token) == [], timeout=180), docker_images.labelled(token)

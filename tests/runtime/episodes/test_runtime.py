"""The shared runtime, driven through verifiers' own Env API with real servers on loopback:
stop conditions, invalid-action feedback, MCP tools, shared pools, and lost sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openenvgen_testsupport.adapters import generate_from_server, load_env, outcome, run_all
from openenvgen_testsupport.fixture_envs import make_grid_app, make_wordle_app
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

pytestmark = pytest.mark.rollout

GRID_WIN = json.dumps({"direction": "right", "steps": 2, "target": {"x": 2, "y": 0}})


def _user_texts(model: ScriptedChatModel) -> list[str]:
    texts = []
    for body in model.requests:
        last = body["messages"][-1]
        texts.append(last["content"] if isinstance(last["content"], str) else json.dumps(last["content"]))
    return texts


@pytest.fixture(scope="module")
def grid_pkg(tmp_path_factory: pytest.TempPathFactory) -> str:
    with serve_app(make_grid_app(), ready_path="/health") as url:
        return generate_from_server("grid", str(url), tmp_path_factory.mktemp("pkgs"))


def _run(pkg: str, script, servers: list[str] | str, repeat: int = 1, concurrency: int = 8, player=None, **taskset):
    model = ScriptedChatModel(script)
    with serve_app(model) as model_url:
        env = load_env(pkg, {"base_url": servers, **taskset}, player)
        episodes = asyncio.run(run_all(env, str(model_url), repeat=repeat, concurrency=concurrency))
    return episodes, model


def test_invalid_replies_get_feedback_then_the_episode_goes_on(grid_pkg: str, grid_server: str) -> None:
    script = Script(["move right please", json.dumps({"direction": "sideways", "target": {"x": 2, "y": 0}}), GRID_WIN])
    (episode,), model = _run(grid_pkg, script, grid_server)
    assert outcome(episode) == (True, "env_done", 1.0)
    texts = _user_texts(model)
    assert "not a valid action" in texts[1] and "reply with one JSON object" in texts[1]
    assert "not a valid action" in texts[2] and "direction" in texts[2]
    assert episode.traces[0].metrics["invalid_actions"] == 2


def test_too_many_invalid_replies_stop_the_episode(grid_pkg: str, grid_server: str) -> None:
    (episode,), model = _run(grid_pkg, Script(["nope"]), grid_server, max_invalid_actions=2)
    assert outcome(episode) == (True, "invalid_action", 0.0)
    assert len(model.requests) == 3  # the first reply and two retries


def test_empty_reply_stops_the_episode(wordle_pkg: str, wordle_server: str) -> None:
    (episode,), _ = _run(wordle_pkg, Script([""]), wordle_server)
    assert outcome(episode)[1] == "empty_action"


def test_turn_limit_is_honoured(wordle_pkg: str, wordle_server: str) -> None:
    (episode,), model = _run(wordle_pkg, Script(["[slate]"]), wordle_server, player={"max_turns": 2})
    assert outcome(episode) == (True, "max_turns", 0.0)
    assert len(model.requests) == 2


def test_both_env_and_base_url_is_a_config_error(wordle_pkg: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="set `env` or `base_url`, not both: drop `env`"):
        load_env(wordle_pkg, {"env": "openenv/wordle", "base_url": "http://127.0.0.1:1"})


def test_package_default_env_does_not_block_base_url(wordle_pkg: str) -> None:
    env = load_env(wordle_pkg, {"base_url": "http://127.0.0.1:1"})
    assert env.taskset.config.env and env.taskset.config.base_urls == ["http://127.0.0.1:1"]


def test_thirty_two_episodes_over_four_single_session_servers(grid_pkg: str) -> None:
    """A single-session env behind a fleet of four servers: every episode completes, the
    pool learns each server's capacity from CAPACITY_REACHED, and none is reported failed."""
    from contextlib import ExitStack

    from openenvgen_testsupport.adapters import model_context

    model = ScriptedChatModel(Script([GRID_WIN]))
    with ExitStack() as stack:
        urls = [str(stack.enter_context(serve_app(make_grid_app(), ready_path="/health"))) for _ in range(4)]
        model_url = str(stack.enter_context(serve_app(model)))
        env = load_env(grid_pkg, {"base_url": urls})

        async def main() -> tuple[list, list]:
            gate = asyncio.Semaphore(16)
            ctx = model_context(model_url)

            async def one(task) -> object:
                async with gate:
                    return await env.run_episode(task, ctx)

            async with env.serving():
                episodes = await asyncio.gather(*(one(t) for t in list(env.taskset) * 32))
                return episodes, [(s.url, s.capacity, s.down) for s in env.pool.servers]

        episodes, servers = asyncio.run(main())
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 32
    # Sixteen at once on four one-session servers: each one's capacity was learnt as 1.
    assert sorted(servers) == sorted((url, 1, None) for url in urls), servers


def test_killing_a_server_mid_episode_ends_only_its_episode(wordle_pkg: str, tmp_path: Path) -> None:
    """Two servers; one is killed while its episode waits for the model. That episode ends
    as env_lost (failed, not silently reconnected to a fresh env); the other wins."""
    with (
        serve_app_subprocess(
            "openenvgen_testsupport.fixture_envs:make_tagged_wordle_app",
            env={"WORDLE_FIXTURE_TAG": "doomed"},
            factory=True,
            ready_path="/health",
        ) as doomed,
        serve_app(make_wordle_app(), ready_path="/health") as healthy,
    ):
        killed = []

        def reply(messages: list[dict]) -> str:
            assistant_turns = sum(m["role"] == "assistant" for m in messages)
            if assistant_turns == 1 and not killed and "(server doomed)" in str(messages):
                killed.append(True)
                doomed.kill()
            return "[slate]" if assistant_turns == 0 else "[crane]"

        episodes, _ = _run(wordle_pkg, reply, [str(doomed), str(healthy)], repeat=2, concurrency=2, max_servers=2)
    outcomes = sorted(outcome(e)[:2] for e in episodes)
    assert outcomes == [(False, "env_lost"), (True, "env_done")]


def test_mcp_tools_are_typed_shown_and_their_errors_returned(mcp_pkg: str, mcp_server: str) -> None:
    script = Script(
        [
            json.dumps({"tool": "teleport", "arguments": {}}),  # unknown tool: feedback, no step
            json.dumps({"tool": "add", "arguments": {"a": "forty", "b": 2}}),  # typed args refuse it
            json.dumps({"tool": "fail", "arguments": {}}),  # a real tool error, from the env
            json.dumps(
                {"type": "call_tool", "tool_name": "add", "arguments": {"a": 40, "b": 2}}
            ),  # CallToolAction form
        ]
    )
    (episode,), model = _run(mcp_pkg, script, mcp_server)
    assert outcome(episode) == (True, "env_done", 1.0)
    texts = _user_texts(model)
    assert "Tools:" in texts[0] and '"add"' in texts[0] and '"echo_message"' in texts[0] and '"b"' in texts[0]
    assert "unknown tool 'teleport'" in texts[1]
    assert "arguments for 'add'" in texts[2] and "a:" in texts[2]
    assert "Observation:" in texts[3] and "error" in texts[3].split("Tools:")[0]
    assert episode.traces[0].metrics["env_steps"] == 2


@pytest.mark.parametrize(
    "value",
    ['["http://127.0.0.1:8001", "http://127.0.0.1:8002/"]', "http://127.0.0.1:8001, http://127.0.0.1:8002"],
)
def test_a_fleet_can_be_given_as_one_command_line_string(wordle_pkg: str, value: str) -> None:
    env = load_env(wordle_pkg, {"base_url": value})
    assert env.taskset.config.base_urls == ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]

"""A generated package as a typed client (`connect`): real servers on loopback, real sessions."""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from openenvgen_runtime import InvalidAction
from openenvgen_runtime.hooks.typed_observations import checked_observation
from openenvgen_testsupport.adapters import load_env, marked_processes, uv_taskset, wait_for


def _package(package_id: str) -> Any:
    return importlib.import_module(package_id.replace("-", "_"))


def test_connect_resets_and_steps_with_the_generated_models(wordle_pkg: str, wordle_server: str) -> None:
    package = _package(wordle_pkg)
    taskset = next(getattr(package, n) for n in package.__all__ if n.endswith("Taskset"))

    async def play() -> None:
        async with package.connect(base_url=wordle_server) as env:
            first = await env.reset(seed=0)
            assert isinstance(first, taskset.RESET_OBSERVATION_MODEL)
            assert "Guess the secret" in first.prompt and first.done is False
            result = await env.step(taskset.ACTION_MODEL(message="[slate]"))
            assert isinstance(result.observation, taskset.OBSERVATION_MODEL)
            assert result.observation.feedback.count(" ") == 4 and result.done is False
            # A dict action is validated first: an invalid one raises and is never sent.
            with pytest.raises(ValidationError):
                await env.step({"guess": "crane"})
            state = await env.state()
            assert state["step_count"] == 1
            assert (await env.step({"message": "[pouch]"})).observation.feedback

    asyncio.run(play())


def test_the_sync_form_works_where_an_event_loop_is_running(wordle_pkg: str, wordle_server: str) -> None:
    package = _package(wordle_pkg)

    def play() -> str:
        with package.connect(base_url=wordle_server) as env:
            env.reset(seed=1)
            return str(env.step({"message": "[slate]"}).observation.feedback)

    async def inside_a_loop() -> str:  # as in a notebook: a loop is already running here
        return play()

    assert play().count(" ") == 4
    assert asyncio.run(inside_a_loop()).count(" ") == 4


def test_mcp_tools_are_listed_and_their_arguments_checked(mcp_pkg: str, mcp_server: str) -> None:
    package = _package(mcp_pkg)
    with package.connect(base_url=mcp_server) as env:
        assert {t["name"] for t in env.tools} >= {"add", "echo_message"}
        env.reset()
        with pytest.raises(InvalidAction, match="arguments for 'add'"):
            env.call_tool("add", a="one", b=2)
        result = env.call_tool("add", a=2, b=3)
        assert "5" in str(result.observation.model_dump())


def test_without_base_url_it_launches_like_the_taskset_and_stops_on_exit(guess_pkg: str) -> None:
    package = _package(guess_pkg)
    config = uv_taskset("client-launch")
    with package.connect(**config) as env:
        env.reset(seed=0)
        assert marked_processes("client-launch"), "no server was launched"
    assert wait_for(lambda: not marked_processes("client-launch")), "the launched server outlived the connection"


def test_connect_leaves_how_verifiers_loads_the_package_unchanged(wordle_pkg: str) -> None:
    package = _package(wordle_pkg)
    assert "connect" in package.__all__
    env = load_env(wordle_pkg)
    assert type(env.taskset).__name__.endswith("Taskset")


class _Board(BaseModel):
    board: list[list[int]]
    legal: list[int] = []
    done: bool = False


def test_an_observation_that_does_not_validate_is_kept_and_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="openenvgen_runtime")
    bad = {"board": [[0, "x"]], "legal": [1, 2], "done": True, "added_by_the_env": 7}
    first, first_valid = checked_observation(_Board, bad, owner="board_pkg")
    second, _ = checked_observation(_Board, bad, owner="board_pkg")
    assert first_valid is False
    assert isinstance(first, _Board)
    assert first.board == [[0, "x"]] and first.legal == [1, 2] and first.done is True
    assert first.added_by_the_env == 7  # type: ignore[attr-defined]
    assert second.board == first.board
    warnings = [r.getMessage() for r in caplog.records if "does not match" in r.getMessage()]
    assert len(warnings) == 1
    assert "board_pkg" in warnings[0] and "_Board at board.0.1" in warnings[0]


def test_a_connection_that_cannot_start_is_one_line_uncaught(tmp_path: Any) -> None:
    """A user's script whose `connect()` cannot reach its server ends with the error's one
    line, as a run does, not a traceback."""
    import subprocess
    import sys

    from openenvgen_servers.ports import free_port

    url = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    script = (
        "from wordle_openenv import connect\n"
        f"with connect(base_url={url!r}, startup_timeout=2, unavailable_timeout=2) as env:\n"
        "    pass\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"error: {url}: cannot read the env's /schema"), line

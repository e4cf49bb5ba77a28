"""The in-process player seat and tool-call actions, with real servers on loopback: the
seat is every package's default, it plays exactly like verifiers' `null` harness (same
conversation, rewards, metrics, stop condition and usage), reports an unreachable model
like it, and plays typed and MCP envs through streamed native tool calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.adapters import load_env, outcome, run_all
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel, ToolCalls
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout

PACKAGE = "wordle-openenv"
NULL_SEAT = {"max_turns": 12, "harness": {"id": "null"}}


def _comparable(trace: dict[str, Any]) -> dict[str, Any]:
    """What a seat decides, without ids, timings or the seat's own name."""
    messages = [
        {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id")}
        for node in trace["nodes"]
        for message in [node["message"]]
    ]
    return {
        "messages": messages,
        "rewards": {k: v["score"] for k, v in trace["rewards"].items()},
        "metrics": trace["metrics"],
        "stop": trace["stop_condition"],
        "model_calls": len(trace["calls"]),
    }


def _usage(trace: dict[str, Any]) -> tuple[int, int]:
    return trace["num_input_tokens"], trace["num_output_tokens"]


def test_the_default_seat_plays_like_null(tmp_path: Path, wordle_server: str) -> None:
    """Same scripted model, same env: equal traces from the in-process seat and `null`."""
    script = ["[slate]", "not a word", '{"message": "[crane]"}']
    resets = [{"secret": "crane"}, {"secret": "plumb", "max_guesses": 3}]
    runs = {}
    for seat, player in (("in-process", None), ("null", NULL_SEAT)):
        model = ScriptedChatModel(Script(script))
        with serve_app(model) as model_url:
            run = run_eval(
                PACKAGE,
                model_url=str(model_url),
                out_dir=tmp_path / seat,
                taskset={"base_url": wordle_server, "resets": resets},
                player=player,
            )
        assert run.returncode == 0, run.stderr[-4000:]
        runs[seat] = {t["task"]["data"]["idx"]: t for e in run.episodes for t in [e["traces"][0]]}
    fast, null = runs["in-process"], runs["null"]
    assert sorted(fast) == sorted(null) == [0, 1]
    for idx in fast:
        assert _comparable(fast[idx]) == _comparable(null[idx])
        assert _usage(fast[idx]) == _usage(null[idx]) and _usage(fast[idx])[0] > 0
    assert fast[0]["stop_condition"] == "env_done" and fast[0]["rewards"]["openenv_reward"]["score"] == 1.0
    assert fast[1]["metrics"]["invalid_actions"] == 0 and fast[1]["metrics"]["env_steps"] == 3
    # The default seat is the package's own harness; `null` is verifiers'.
    assert fast[0]["agent"]["config"]["harness"]["id"] == PACKAGE
    assert null[0]["agent"]["config"]["harness"]["id"] == "null"


def test_an_unreachable_model_fails_the_episode_like_null(tmp_path: Path, wordle_server: str) -> None:
    errors = {}
    for seat, player in (("in-process", None), ("null", NULL_SEAT)):
        run = run_eval(
            PACKAGE,
            model_url="http://127.0.0.1:9",  # nothing listens on the discard port
            out_dir=tmp_path / seat,
            taskset={"base_url": wordle_server},
            player=player,
        )
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        assert len(run.traces) == 1, run.stderr[-3000:]
        (trace,) = run.traces
        assert trace["ok"] is False
        errors[seat] = ([(e["type"], e["message"]) for e in trace["errors"]], trace["stop_condition"])
    assert errors["in-process"] == errors["null"]
    assert errors["in-process"][0] == [("ProviderError", "All connection attempts failed")]


def test_typed_env_plays_through_streamed_tool_calls(wordle_pkg: str, wordle_server: str) -> None:
    script = Script(
        [
            ToolCalls((("act", '{"message": 5}'),)),  # invalid: the model's own error comes back
            ToolCalls((("guess", '{"message": "[slate]"}'),)),  # unknown tool
            ToolCalls((("act", '["[slate]"]'),)),  # not an object
            ToolCalls((("act", '{"message": "[slate]"}'), ("act", '{"message": "[crane]"}'))),  # two calls
            ToolCalls((("act", '{"message": "[slate]"}'),)),
            '{"message": "[crane]"}',  # a plain-text reply is still an action
        ]
    )
    model = ScriptedChatModel(script)
    with serve_app(model) as model_url:
        env = load_env(
            wordle_pkg,
            {
                "base_url": wordle_server,
                "resets": [{"secret": "crane"}],
                "action_format": "tools",
                "max_invalid_actions": 4,
            },
        )
        (episode,) = asyncio.run(run_all(env, str(model_url)))
    assert outcome(episode) == (True, "env_done", 1.0)
    trace = episode.traces[0]
    assert trace.metrics["invalid_actions"] == 4 and trace.metrics["env_steps"] == 2
    first = model.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["act"]
    assert first["tools"][0]["function"]["parameters"]["properties"]["message"]["type"] == "string"
    assert "metadata" not in first["tools"][0]["function"]["parameters"]["properties"]
    assert "Action schema:" not in first["messages"][-1]["content"]
    # Every call got its tool result, carrying the error or the next observation.
    results = [[m for m in body["messages"] if m["role"] == "tool"] for body in model.requests]
    assert "message: Input should be a valid string" in results[1][-1]["content"]
    assert "unknown tool 'guess'; call one of: act" in results[2][-1]["content"]
    assert "must be a JSON object, not list" in results[3][-1]["content"]
    assert len(results[4]) == 5 and all("exactly one tool per turn, not 2" in m["content"] for m in results[4][-2:])
    assert "Observation:" in results[5][-1]["content"]
    tool_ids = {
        c["id"]
        for body in model.requests
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    }
    assert {m["tool_call_id"] for m in results[5]} == tool_ids


def test_mcp_env_offers_one_function_per_tool(mcp_pkg: str, mcp_server: str) -> None:
    script = Script(
        [
            ToolCalls((("add", '{"a": "forty", "b": 2}'),)),  # typed args refuse it
            ToolCalls((("add", '{"a": 40, "b": 2}'),)),
        ]
    )
    model = ScriptedChatModel(script)
    with serve_app(model) as model_url:
        env = load_env(mcp_pkg, {"base_url": mcp_server, "action_format": "tools"})
        (episode,) = asyncio.run(run_all(env, str(model_url)))
    assert outcome(episode) == (True, "env_done", 1.0)
    tools = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert sorted(tools) == ["add", "echo_message", "fail"]
    assert tools["add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert tools["fail"]["description"] == "Always raises a tool error."
    tool_result = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "arguments for 'add'" in tool_result["content"]


def test_tool_actions_with_the_null_seat_fail_before_the_first_episode(tmp_path: Path, wordle_server: str) -> None:
    model = ScriptedChatModel(Script(["[crane]"]))
    with serve_app(model) as model_url:
        run = run_eval(
            PACKAGE,
            model_url=str(model_url),
            out_dir=tmp_path,
            taskset={"base_url": wordle_server, "action_format": "tools"},
            player=NULL_SEAT,
        )
    assert run.returncode != 0
    assert "action_format \"tools\" needs the package's in-process seat, not harness 'null'" in run.stderr
    assert model.requests == []

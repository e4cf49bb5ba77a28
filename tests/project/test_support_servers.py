"""Prove the test-support servers work against real clients over loopback.

pytest-asyncio is not installed in the project venv, so async code runs via
``asyncio.run`` inside ordinary sync tests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI
from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from openenvgen_testsupport.fixture_envs import (
    extract_guess,
    make_grid_app,
    make_mcp_app,
    make_wordle_app,
    wordle_feedback,
)
from openenvgen_testsupport.scripted_model import (
    Script,
    ScriptedChatModel,
    conversation_key,
)
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess


def http() -> httpx.Client:
    return httpx.Client(trust_env=False, timeout=10.0)


# ---------------------------------------------------------------------------
# Wordle fixture
# ---------------------------------------------------------------------------


def test_wordle_rules() -> None:
    assert extract_guess("I think it is [Slate] or [crane]") == "slate"
    assert extract_guess("  CRANE \n") == "crane"
    assert wordle_feedback("crane", "crane") == "G G G G G"
    assert wordle_feedback("slate", "crane") == "X X G X G"
    # Repeated letters earn only as many Y marks as unmatched copies remain.
    assert wordle_feedback("eerie", "there") == "Y X Y X G"
    assert wordle_feedback("speed", "abide") == "X X Y X Y"


@pytest.fixture(scope="module")
def wordle_url() -> Any:
    with serve_app(make_wordle_app()) as url:
        yield url


def test_wordle_losing_and_winning_games_over_ws(wordle_url: str) -> None:
    async def play() -> None:
        async with GenericEnvClient(base_url=wordle_url) as env:
            # Losing game: two wrong guesses exhaust max_guesses=2.
            r = await env.reset(secret="crane", max_guesses=2)
            assert r.done is False
            assert "[crane]" in r.observation["prompt"]
            assert r.observation["feedback"] == ""

            r = await env.step({"message": "my first guess: [slate]"})
            assert (r.reward, r.done) == (0.0, False)
            assert r.observation["feedback"] == "X X G X G"

            r = await env.step({"message": "[adieu]"})
            assert (r.reward, r.done) == (0.0, True)
            assert "Out of guesses" in r.observation["prompt"]

            state = await env.state()
            assert state["guesses"] == ["slate", "adieu"]
            assert state["step_count"] == 2

            # Winning game on the same session after a reset; no brackets works too.
            r = await env.reset(secret="crane")
            r = await env.step({"message": "[trace]"})
            assert (r.reward, r.done) == (0.0, False)
            r = await env.step({"message": "crane"})
            assert (r.reward, r.done) == (1.0, True)
            assert r.observation["feedback"] == "G G G G G"

            # A wrongly shaped action is a server-side validation error.
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.step({"guess": "crane"})

    asyncio.run(play())


def test_wordle_concurrent_sessions_are_isolated(wordle_url: str) -> None:
    async def play(secret: str, guesses: list[str]) -> list[tuple[float | None, bool]]:
        async with GenericEnvClient(base_url=wordle_url) as env:
            await env.reset(secret=secret)
            results = []
            for guess in guesses:
                r = await env.step({"message": f"[{guess}]"})
                results.append((r.reward, r.done))
                await asyncio.sleep(0)  # interleave with the other session
            return results

    async def main() -> None:
        a, b = await asyncio.gather(play("crane", ["slate", "crane"]), play("slate", ["crane", "slate"]))
        assert a == [(0.0, False), (1.0, True)]
        assert b == [(0.0, False), (1.0, True)]

    asyncio.run(main())


def test_wordle_http_endpoints_are_stateless(wordle_url: str) -> None:
    with http() as client:
        assert client.get(f"{wordle_url}/health").json()["status"] == "healthy"
        reset = client.post(f"{wordle_url}/reset", json={"secret": "slate"}).json()
        assert reset["done"] is False and "prompt" in reset["observation"]
        # HTTP /step builds a fresh env per request: the default secret applies.
        step = client.post(f"{wordle_url}/step", json={"action": {"message": "[crane]"}}).json()
        assert (step["reward"], step["done"]) == (1.0, True)
        bad = client.post(f"{wordle_url}/step", json={"action": {"message": 5}})
        assert bad.status_code == 422


# ---------------------------------------------------------------------------
# /schema of every fixture
# ---------------------------------------------------------------------------


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    name = ref.rsplit("/", 1)[-1]
    return schema["$defs"][name]


def test_schemas() -> None:
    with (
        serve_app(make_wordle_app()) as w,
        serve_app(make_grid_app()) as g,
        serve_app(make_mcp_app()) as m,
        http() as client,
    ):
        wordle = client.get(f"{w}/schema").json()
        assert set(wordle) == {"action", "observation", "state"}
        action = wordle["action"]
        assert set(action["properties"]) == {"message", "metadata"}  # metadata: openenv base
        assert action["properties"]["message"]["type"] == "string"
        assert action["required"] == ["message"]
        assert {"prompt", "feedback", "done", "reward"} <= set(wordle["observation"]["properties"])

        grid = client.get(f"{g}/schema").json()["action"]
        props = grid["properties"]
        assert set(props) == {"direction", "steps", "note", "target", "mode", "metadata"}
        assert set(grid["required"]) == {"direction", "target"}
        assert props["direction"]["enum"] == ["up", "down", "left", "right"]
        assert (props["steps"]["minimum"], props["steps"]["maximum"], props["steps"]["default"]) == (1, 3, 1)
        note_str = next(s for s in props["note"]["anyOf"] if s.get("type") == "string")
        assert note_str["maxLength"] == 20
        target = _resolve(grid, props["target"])
        assert set(target["required"]) == {"x", "y"}
        assert (target["properties"]["x"]["minimum"], target["properties"]["x"]["maximum"]) == (0, 4)
        mode = _resolve(grid, props["mode"])
        assert mode["enum"] == ["walk", "run"]
        assert props["mode"]["default"] == "walk"

        mcp = client.get(f"{m}/schema").json()
        assert {"type", "tool_name", "arguments"} <= set(mcp["action"]["properties"])
        assert {"tool_name", "result", "error"} <= set(mcp["observation"]["properties"])


# ---------------------------------------------------------------------------
# GridMove fixture
# ---------------------------------------------------------------------------


def test_grid_episode_validation_and_single_session_capacity() -> None:
    target = {"x": 2, "y": 0}

    async def play(url: str) -> None:
        async with GenericEnvClient(base_url=url) as env:
            r = await env.reset()
            assert r.observation["position"] == [0, 0]
            r = await env.step({"direction": "right", "target": target, "note": "go"})
            assert r.observation["position"] == [1, 0]
            assert (r.reward, r.done) == (0.0, False)
            assert "note: go" in r.observation["message"]

            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.step({"direction": "right", "steps": 4, "target": target})
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.step({"direction": "diagonal", "target": target})

            # Default max_concurrent_envs is 1: a second session is refused. The
            # server sends the error right after accepting and then closes, so
            # read it on a raw socket (a client that sends first may instead see
            # the connection closed, depending on timing).
            async with ws_connect(url.replace("http://", "ws://") + "/ws") as raw:
                refusal = json.loads(await raw.recv())
            assert refusal["type"] == "error"
            assert refusal["data"]["code"] == "CAPACITY_REACHED"

            # running doubles the distance; clamped at the grid edge
            r = await env.step({"direction": "up", "steps": 3, "mode": "run", "target": target})
            assert r.observation["position"] == [1, 4]
            r = await env.reset(start=[0, 0])
            r = await env.step({"direction": "right", "steps": 1, "mode": "run", "target": target})
            assert r.observation["position"] == [2, 0]
            assert (r.reward, r.done) == (1.0, True)

    with serve_app(make_grid_app()) as url:
        asyncio.run(play(url))


# ---------------------------------------------------------------------------
# MCP fixture
# ---------------------------------------------------------------------------


def test_mcp_tools_over_http_jsonrpc() -> None:
    with serve_app(make_mcp_app()) as url, http() as client:
        listed = client.post(
            f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        ).json()
        assert listed["id"] == 1
        tools = {t["name"]: t for t in listed["result"]["tools"]}
        assert set(tools) == {"echo_message", "add", "fail"}
        # openenv 0.4.1 model_dump()s the MCP SDK's Tool, so with mcp 2.x the key is
        # snake_case "input_schema" rather than the MCP spec's "inputSchema".
        add_schema = tools["add"].get("input_schema") or tools["add"].get("inputSchema")
        assert add_schema["required"] == ["a", "b"]

        called = client.post(
            f"{url}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 40, "b": 2}},
            },
        ).json()
        # /mcp bypasses step(): a raw FastMCP CallToolResult, no reward/done.
        assert called["result"]["data"] == 42
        assert called["result"]["structured_content"] == {"result": 42}

        failed = client.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fail"}},
        ).json()
        assert failed["error"]["code"] == -32603
        assert "always fails" in failed["error"]["message"]


def test_mcp_list_and_call_tool_steps_over_ws() -> None:
    async def play(url: str) -> None:
        async with GenericEnvClient(base_url=url) as env:
            r = await env.reset()
            assert r.metadata is not None and r.metadata["status"] == "ready"

            r = await env.step({"type": "list_tools"})
            names = [t["name"] for t in r.observation["tools"]]
            assert names == ["echo_message", "add", "fail"]
            assert r.done is False

            r = await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}})
            assert r.observation["error"] is None
            assert r.observation["result"]["data"] == "hi"
            assert (r.reward, r.done) == (0.0, False)

            r = await env.step({"type": "call_tool", "tool_name": "fail", "arguments": {}})
            assert r.observation["error"]["error_type"] == "execution_error"
            assert "always fails" in r.observation["error"]["message"]
            assert (r.reward, r.done) == (0.0, False)

            r = await env.step({"type": "call_tool", "tool_name": "add", "arguments": {"a": 1, "b": 2}})
            assert r.observation["result"]["data"] == 3
            assert (r.reward, r.done) == (0.0, False)

            r = await env.step({"type": "call_tool", "tool_name": "add", "arguments": {"a": 40, "b": 2}})
            assert (r.reward, r.done) == (1.0, True)

    with serve_app(make_mcp_app()) as url:
        asyncio.run(play(url))


# ---------------------------------------------------------------------------
# Scripted OpenAI-compatible model
# ---------------------------------------------------------------------------


def test_scripted_model_with_openai_client_two_concurrent_conversations() -> None:
    model = ScriptedChatModel(Script(["[slate]", "[crane]"]))

    async def converse(client: AsyncOpenAI, first: str, stream: bool) -> list[str]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You play word games."},
            {"role": "user", "content": first},
        ]
        replies = []
        for turn in range(3):
            if stream:
                chunks = await client.chat.completions.create(
                    model="m",
                    messages=messages,
                    stream=True,
                    stream_options={"include_usage": True},
                )
                text, finish, usage = "", None, None
                async for chunk in chunks:
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices:
                        text += choice.delta.content or ""
                        finish = choice.finish_reason or finish
                assert finish == "stop"
                assert usage is not None and usage.total_tokens > 0
            else:
                completion = await client.chat.completions.create(model="m", messages=messages)
                assert completion.choices[0].finish_reason == "stop"
                assert completion.usage is not None and completion.usage.prompt_tokens > 0
                text = completion.choices[0].message.content or ""
            replies.append(text)
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"feedback {turn}"},
            ]
            await asyncio.sleep(0)  # let the other conversation interleave
        return replies

    async def main(url: str) -> None:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        try:
            models = await client.models.list()
            assert [m.id for m in models.data] == ["scripted-model"]
            a, b = await asyncio.gather(
                converse(client, "game A", stream=False), converse(client, "game B", stream=True)
            )
        finally:
            await client.close()
        # Script order per conversation; the last reply repeats when exhausted.
        assert a == b == ["[slate]", "[crane]", "[crane]"]

    with serve_app(model) as url:
        asyncio.run(main(url))

    assert len(model.requests) == 6
    assert set(model.conversations()) == {"game A", "game B"}
    assert [len(body["messages"]) for body in model.requests_for("game B")] == [2, 4, 6]
    assert all(body.get("stream") for body in model.requests_for("game B"))
    assert model.replies.count("[slate]") == 2


def test_scripted_model_sse_wire_format_and_reply_fn() -> None:
    def reply_fn(messages: list[dict[str, Any]]) -> str:
        return f"turn {sum(m['role'] == 'assistant' for m in messages)}: {conversation_key(messages)}"

    model = ScriptedChatModel(reply_fn, by_conversation={"special": ["sp1", "sp2"]})
    with serve_app(model) as url, http() as client:
        body = {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            # list-of-parts content is normalised to text for the conversation key
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        }
        with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert text == "turn 0: hello"
        assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0

        special = client.post(
            f"{url}/v1/chat/completions",
            json={
                "model": "m",
                "messages": [
                    {"role": "user", "content": "a special one"},
                    {"role": "assistant", "content": "sp1"},
                    {"role": "user", "content": "more"},
                ],
            },
        ).json()
        assert special["choices"][0]["message"]["content"] == "sp2"

        bad = client.post(f"{url}/v1/chat/completions", json={"model": "m"})
        assert bad.status_code == 400 and "messages" in bad.json()["error"]["message"]
    assert len(model.requests) == 3


# ---------------------------------------------------------------------------
# Server helpers
# ---------------------------------------------------------------------------


def test_serve_app_subprocess_can_be_killed_mid_episode() -> None:
    async def play(url: Any) -> None:
        env = GenericEnvClient(base_url=url, message_timeout_s=5.0)
        try:
            r = await env.reset(secret="crane")
            r = await env.step({"message": "[slate]"})
            assert r.done is False
            url.kill()  # the server dies mid-episode
            assert not url.alive
            with pytest.raises(ConnectionClosed):  # the session's socket died with the server
                await env.step({"message": "[crane]"})
        finally:
            await env.close()

    with serve_app_subprocess("openenvgen_testsupport.fixture_envs:wordle_app") as url:
        assert url.startswith("http://127.0.0.1:")
        with http() as client:
            assert client.get(f"{url}/health").status_code == 200
        asyncio.run(play(url))

    # --factory builds a fresh app from a zero-argument factory.
    with (
        serve_app_subprocess("openenvgen_testsupport.fixture_envs:make_grid_app", factory=True) as url,
        http() as client,
    ):
        assert "direction" in client.get(f"{url}/schema").json()["action"]["properties"]
    assert not url.alive

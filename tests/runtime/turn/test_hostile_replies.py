"""Whatever a model replies, `ActionSpace` answers with an action or a one-line reason, fast.

Property-based: hypothesis draws replies that have broken parsers before (nesting deeper
than Python's JSON parser follows, megabytes, lone surrogates, NaN and Infinity, huge
integers, many code fences) and plain JSON of every shape, as text replies and as tool-call
arguments, against the action spaces of real generated packages: a one-string-field action
(Wordle), a typed object action (Connect4), a union action (agent_world_model) and MCP tools
(echo). The time limit is CPU time of this thread, so other processes on the machine do
not count against it.
"""

from __future__ import annotations

import gc
import importlib
import json
import time
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenvgen_runtime.turn.actions import MAX_REPLY_CHARS, ActionSpace, InvalidAction, ToolCallRequest

JUDGED_WITHIN_S = 0.050
PACKAGES = {
    "wordle": "wordle_openenv.taskset:WordleTaskset",
    "connect4": "connect4_openenv.taskset:Connect4Taskset",
    "union": "agent_world_model_openenv.taskset:AgentWorldModelTaskset",
    "mcp": "echo_openenv.taskset:EchoTaskset",
}


def space_of(target: str) -> ActionSpace:
    module, name = target.split(":")
    taskset = getattr(importlib.import_module(module), name)
    # agent_world_model's union is MCP too, but its tools come with each episode: parsed here
    # as the union it is, so the union's parser is covered.
    tool_arguments = (
        getattr(taskset, "TOOL_ARGUMENTS", None) if taskset.IS_MCP and not taskset.TOOLS_PER_EPISODE else None
    )
    tools = [
        {"name": tool, "description": "", "input_schema": model.model_json_schema()}
        for tool, model in (tool_arguments or {}).items()
    ]
    return ActionSpace(
        action_model=taskset.ACTION_MODEL,
        action_schema=taskset.ACTION_MODEL.model_json_schema(),
        tool_arguments=tool_arguments,
        tools=tools or None,
    )


@pytest.fixture(scope="module", params=sorted(PACKAGES))
def space(request: pytest.FixtureRequest) -> ActionSpace:
    return space_of(PACKAGES[request.param])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@st.composite
def hostile_replies(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["deep", "huge", "surrogate", "nan", "bigint", "fences", "json", "text", "near_cap"]))
    depth = draw(st.integers(min_value=900, max_value=60_000))
    if kind == "deep":
        opener = draw(
            st.sampled_from(['{"a":', "[", '{"message":', '{"column":', '{"tool": "echo_message", "arguments":'])
        )
        return opener * depth
    if kind == "huge":
        return draw(st.sampled_from(["x", "[", '"', "{", "`"])) * draw(
            st.integers(MAX_REPLY_CHARS + 1, 4 * MAX_REPLY_CHARS)
        )
    if kind == "near_cap":
        return json.dumps({"message": "a" * (MAX_REPLY_CHARS - 20)})
    if kind == "surrogate":
        return draw(st.sampled_from(['{"message": "\ud800"}', "\udfff", '{"column": 1, "x": "\udc00"}']))
    if kind == "nan":
        return draw(st.sampled_from(['{"column": NaN}', "NaN", "Infinity", '{"message": -Infinity}', "[NaN]"]))
    if kind == "bigint":
        return '{"column": ' + "9" * draw(st.integers(1, 20_000)) + "}"
    if kind == "fences":
        return "```json\n" * draw(st.integers(1, 5_000)) + draw(st.text(max_size=50))
    if kind == "json":
        return json.dumps(draw(json_values))
    return draw(st.text(max_size=200))


def judged(call: Any) -> tuple[Any, float]:
    """What `call` gave (an action, or the InvalidAction it raised) and its CPU time, the best
    of three: the collector is off while it runs, so garbage other tests left in this process
    is not charged to the parser."""
    times = []
    for _ in range(3):
        gc.disable()
        started = time.thread_time()
        try:
            result: Any = call()
        except InvalidAction as e:
            result = e
        finally:
            elapsed = time.thread_time() - started
            gc.enable()
        times.append(elapsed)
        if elapsed <= JUDGED_WITHIN_S:
            break
    return result, min(times)


def assert_judged(result: Any, elapsed: float) -> None:
    if isinstance(result, InvalidAction):
        message = str(result)
        assert message and "\n" not in message and len(message) < 2_000, message[:300]
    else:
        assert isinstance(result, dict)
        json.dumps(result)  # what is sent must be JSON
    assert elapsed <= JUDGED_WITHIN_S, f"judged in {elapsed * 1000:.1f} ms of CPU"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(reply=hostile_replies())
def test_every_text_reply_is_an_action_or_a_one_line_reason(space: ActionSpace, reply: str) -> None:
    assert_judged(*judged(lambda: space.parse(reply)))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(arguments=hostile_replies())
def test_every_tool_call_is_an_action_or_a_one_line_reason(space: ActionSpace, arguments: str) -> None:
    names = [tool["function"]["name"] for tool in space.function_tools]
    for name in (names[0], "no_such_tool" * 20):
        call = ToolCallRequest(id="1", name=name, arguments=arguments)
        assert_judged(*judged(partial(space.parse_tool_calls, [call])))


def test_a_reply_nested_deeper_than_the_json_parser_follows_is_invalid_not_an_error() -> None:
    space = space_of(PACKAGES["connect4"])
    with pytest.raises(InvalidAction, match="nested too deeply"):
        space.parse('{"a":' * 50_000)


def test_a_reply_over_the_cap_is_refused_unparsed() -> None:
    space = space_of(PACKAGES["wordle"])
    with pytest.raises(InvalidAction, match=f"at most {MAX_REPLY_CHARS:,}"):
        space.parse("[" + "a" * MAX_REPLY_CHARS + "]")
    assert space.parse("[crane]") == {"message": "[crane]"}


def test_nan_and_lone_surrogates_are_refused_with_their_reason() -> None:
    space = space_of(PACKAGES["connect4"])
    with pytest.raises(InvalidAction, match="NaN, which JSON has no number for"):
        space.parse('{"column": NaN}')
    with pytest.raises(InvalidAction, match="lone surrogate"):
        space.parse('{"column": 1, "note": "\ud800"}')
    assert space.parse('{"column": 3}') == {"column": 3}

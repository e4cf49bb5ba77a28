"""`replies.judge`: the contract of one reply's data, judged on plain dicts (no server here;
the hostile server's replies are played in tests/runtime/client and tests/e2e)."""

from __future__ import annotations

import json

import pytest

from openenvgen_runtime.turn.replies import EnvProtocolError, ReplyLimits, judge, protocol_failure


def reply(observation: object, reward: object = 0.5, done: object = False) -> dict[str, object]:
    return {"observation": observation, "reward": reward, "done": done}


def test_a_reply_that_keeps_the_contract_comes_back_as_it_was() -> None:
    data = reply({"text": "héllo ✓", "board": [[1, 2], [3, None]], "score": 3, "ok": True, "metadata": {}})
    assert judge(json.loads(json.dumps(data))) == data
    assert judge(reply({}, reward=None))["reward"] is None
    assert judge(reply({}, reward=2))["reward"] == 2.0 and type(judge(reply({}, reward=2))["reward"]) is float
    assert judge({"observation": {}})["observation"] == {}  # reward and done absent: null and False


@pytest.mark.parametrize(
    ("data", "field", "kind"),
    [
        ([1], "data", "a list of 1 items"),
        (reply({}, reward=float("nan")), "reward", "NaN"),
        (reply({}, reward=10**400), "reward", "an integer past a float's range"),
        (reply({}, reward=True), "reward", "a boolean"),
        (reply({}, done=1), "done", "an integer"),
        (reply({}, done=None), "done", "null"),
        (reply("text"), "observation", "a string of 4 characters"),
        ({"obs": {}}, "observation", "missing"),
        (reply({"stats": {"mean": float("inf")}}), "observation.stats", "Infinity"),
        (reply({"n": -(10**400)}), "observation.n", "an integer past a float's range"),
        (reply({"log": ["ok", "bad \udc80"]}), "observation.log", "lone surrogate"),
        # The same faults in a flat observation (one loop reads those; it hands these over).
        (reply({"score": float("-inf"), "text": "ok"}), "observation.score", "-Infinity"),
        (reply({"text": "bad \ud800", "n": 1}), "observation.text", "lone surrogate"),
        (reply({"ok": True, "k" * 70_000: 1}), "observation.<key>", "keys over max_observation_chars"),
    ],
)
def test_a_reply_that_breaks_it_names_the_field_and_the_kind(data: object, field: str, kind: str) -> None:
    with pytest.raises(EnvProtocolError) as raised:
        judge(data)
    assert raised.value.field == field and kind in str(raised.value)


def test_depth_is_bounded_without_recursion() -> None:
    nested: object = "leaf"
    for _ in range(5000):
        nested = [nested]
    with pytest.raises(EnvProtocolError, match=r"observation\.tree: nested deeper than 64 levels"):
        judge(reply({"tree": nested}))
    judge(reply({"tree": [[["fine"]]]}), ReplyLimits(max_depth=4))
    with pytest.raises(EnvProtocolError):
        judge(reply({"tree": [[["too deep"]]]}), ReplyLimits(max_depth=3))


def test_text_over_the_bound_is_cut_with_a_marker_or_refused() -> None:
    limits = ReplyLimits(max_observation_chars=100)
    data = judge(reply({"a": "x" * 60, "b": "y" * 60, "image_base64": "A" * 1000}), limits)
    cut = data["observation"]
    assert cut["a"] == "x" * 60 and cut["b"].startswith("y" * 40 + " [… 20 of 60 characters cut")
    assert cut["image_base64"] == "A" * 1000  # media: bounded by max_media_bytes instead
    with pytest.raises(EnvProtocolError, match=r"observation\.b: a string of 60 characters, over"):
        judge(reply({"a": "x" * 60, "b": "y" * 60}), ReplyLimits(100, "refuse"))


def test_frames_the_client_could_not_read_are_the_same_error() -> None:
    failures = []
    for frame in ("{not json", "[" * 100_000, '{"r": ' + "9" * 5000 + "}", b"\x89\xff\xfe"):
        try:
            json.loads(frame)
        except Exception as error:  # what OpenEnv's client raises on it
            failures.append(protocol_failure(error))
    assert [f.field if f else None for f in failures] == ["frame"] * 4
    assert protocol_failure(KeyError("x")) is None and protocol_failure(ValueError("other")) is None

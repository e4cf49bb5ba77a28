"""The hostile env server really puts each bad reply on the wire, as `hostile_faults` says,
and serves benign sessions beside hostile ones to OpenEnv's own client.

Read with a raw `websockets` client (a parsing client would hide what was sent), on a real
uvicorn on 127.0.0.1, every wait bounded.
"""

from __future__ import annotations

import base64
import json
import math
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from websockets.sync.client import ClientConnection, connect

from openenvgen_testsupport.hostile_env import (
    FAULTS_ENV_VAR,
    MAX_STEPS,
    make_hostile_app,
    parse_fault_map,
    target_word,
)
from openenvgen_testsupport.hostile_faults import (
    DEEP_NESTING,
    FAULTS,
    HANGS,
    HUGE_OBSERVATION_BYTES,
    MANY_DIGITS,
    Fault,
)
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

WAIT = 20.0
"""Seconds any one frame may take (the 60 MB one included, on a loaded machine)."""
SEED_FAULTS = {11: Fault.REWARD_NAN, 12: Fault.STEP_HANGS}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_app(make_hostile_app(SEED_FAULTS), ready_path="/health") as base:
        yield base


def session(url: str) -> ClientConnection:
    return connect(url.replace("http://", "ws://") + "/ws", max_size=None, open_timeout=WAIT, ping_interval=None)


def ask(ws: ClientConnection, kind: str, data: dict[str, Any], timeout: float = WAIT) -> str | bytes:
    ws.send(json.dumps({"type": kind, "data": data}))
    return ws.recv(timeout=timeout)


def reply_to_step(url: str, reset: dict[str, Any]) -> str | bytes:
    with session(url) as ws:
        first = ask(ws, "reset", reset)
        assert isinstance(first, str) and json.loads(first)["type"] == "observation"
        return ask(ws, "step", {"message": "hello"})


def text(frame: str | bytes) -> str:
    assert isinstance(frame, str), f"a binary frame where a text frame was expected: {frame!r:.80}"
    return frame


def reward_literal(frame: str) -> str:
    found = re.search(r'"reward": (-?[A-Za-z0-9"]+)', frame)
    assert found is not None, frame[:300]
    return found.group(1)


def check_nan(frame: str) -> None:
    assert reward_literal(frame) == "NaN"
    assert math.isnan(json.loads(frame)["data"]["reward"])


def check_infinity(frame: str) -> None:
    assert reward_literal(frame) == "Infinity" and json.loads(frame)["data"]["reward"] == math.inf


def check_negative_infinity(frame: str) -> None:
    assert reward_literal(frame) == "-Infinity" and json.loads(frame)["data"]["reward"] == -math.inf


def check_string(frame: str) -> None:
    assert json.loads(frame)["data"]["reward"] == "high"


def check_boolean(frame: str) -> None:
    assert json.loads(frame)["data"]["reward"] is True


def check_huge_integer(frame: str) -> None:
    assert reward_literal(frame) == "1" + "0" * 400
    with pytest.raises(OverflowError):
        float(json.loads(frame)["data"]["reward"])


def check_many_digits(frame: str) -> None:
    assert reward_literal(frame) == "9" * MANY_DIGITS
    with pytest.raises(ValueError, match="digits"):  # CPython's int-digits limit, in the parser
        json.loads(frame)


def check_done_string(frame: str) -> None:
    assert '"done": "false"' in frame and json.loads(frame)["data"]["done"] == "false"


def check_deep(frame: str) -> None:
    assert "[" * DEEP_NESTING + "]" * DEEP_NESTING in frame and "[" * (DEEP_NESTING + 1) not in frame
    with pytest.raises(RecursionError):
        json.loads(frame)


def check_lone_surrogate(frame: str) -> None:
    assert "\\ud800" in frame and "\\udc" not in frame  # escaped, and not half of a pair
    observed = json.loads(frame)["data"]["observation"]["text"]
    assert "\ud800" in observed
    with pytest.raises(UnicodeEncodeError):
        observed.encode("utf-8")


def check_huge(frame: str) -> None:
    assert len(frame) > HUGE_OBSERVATION_BYTES
    assert len(json.loads(frame)["data"]["observation"]["text"]) == HUGE_OBSERVATION_BYTES


def check_not_object(frame: str) -> None:
    assert json.loads(frame)["data"]["observation"] == ["not", "an", "object"]


def check_image(frame: str) -> None:
    observation = json.loads(frame)["data"]["observation"]
    png = base64.b64decode(observation["image"]["data"], validate=True)
    assert observation["text"] == "data:image/png;base64," + observation["image"]["data"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    idat = png.index(b"IDAT")
    length = int.from_bytes(png[idat - 4 : idat], "big")
    assert len(zlib.decompress(png[idat + 4 : idat + 4 + length])) == 32 * (1 + 32 * 3)


def check_not_json(frame: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(frame)


def check_extra(frame: str) -> None:
    data = json.loads(frame)["data"]
    assert {"observation", "reward", "done", "info", "truncated"} <= data.keys()
    assert "debug" in data["observation"] and isinstance(data["reward"], float) and data["done"] in (True, False)


def check_renamed(frame: str) -> None:
    data = json.loads(frame)["data"]
    assert set(data) == {"obs", "rew", "finished"} and "text" in data["obs"]


TEXT_CHECKS: dict[Fault, Callable[[str], None]] = {
    Fault.REWARD_NAN: check_nan,
    Fault.REWARD_INFINITY: check_infinity,
    Fault.REWARD_NEGATIVE_INFINITY: check_negative_infinity,
    Fault.REWARD_STRING: check_string,
    Fault.REWARD_BOOLEAN: check_boolean,
    Fault.REWARD_HUGE_INTEGER: check_huge_integer,
    Fault.REWARD_MANY_DIGITS: check_many_digits,
    Fault.DONE_STRING: check_done_string,
    Fault.OBSERVATION_DEEP: check_deep,
    Fault.OBSERVATION_LONE_SURROGATE: check_lone_surrogate,
    Fault.OBSERVATION_HUGE: check_huge,
    Fault.OBSERVATION_NOT_OBJECT: check_not_object,
    Fault.OBSERVATION_IMAGE: check_image,
    Fault.FRAME_NOT_JSON: check_not_json,
    Fault.EXTRA_FIELDS: check_extra,
    Fault.RENAMED_FIELDS: check_renamed,
}


def test_every_fault_is_documented_and_checked_here() -> None:
    assert set(FAULTS) == set(Fault)
    assert set(TEXT_CHECKS) | HANGS | {Fault.FRAME_BINARY} == set(Fault)
    assert all(FAULTS[hang].outcome == "env_lost" for hang in HANGS)


@pytest.mark.parametrize("fault", sorted(TEXT_CHECKS))
def test_each_fault_is_on_the_wire_as_documented(url: str, fault: Fault) -> None:
    TEXT_CHECKS[fault](text(reply_to_step(url, {"seed": 1, "fault": fault.value})))


def test_a_binary_frame_is_a_binary_frame_of_bytes_that_are_not_utf8(url: str) -> None:
    frame = reply_to_step(url, {"fault": "frame_binary"})
    assert isinstance(frame, bytes)
    with pytest.raises(UnicodeDecodeError):
        frame.decode("utf-8")


def test_a_fault_on_reset_is_in_the_reset_reply_and_the_seed_chooses_too(url: str) -> None:
    with session(url) as ws:
        check_nan(text(ask(ws, "reset", {"fault": "reward_nan", "fault_on": "reset"})))
    with session(url) as ws:  # seed 11 is mapped to reward_nan: its reset is benign, its step not
        assert json.loads(ask(ws, "reset", {"seed": 11}))["data"]["reward"] is None
        check_nan(text(ask(ws, "step", {"message": "x"})))
    benign = json.loads(text(reply_to_step(url, {"seed": 10})))["data"]
    assert benign["reward"] == 0.0 and benign["done"] is False


def test_a_hung_reset_and_a_hung_step_never_answer_but_the_server_serves_others(url: str) -> None:
    with session(url) as hung_reset, session(url) as hung_step:
        hung_reset.send(json.dumps({"type": "reset", "data": {"fault": "reset_hangs"}}))
        assert json.loads(ask(hung_step, "reset", {"seed": 12}))["type"] == "observation"  # seed 12: step_hangs
        hung_step.send(json.dumps({"type": "step", "data": {"message": "x"}}))
        for ws in (hung_reset, hung_step):
            with pytest.raises(TimeoutError):
                ws.recv(timeout=1.5)
        benign = json.loads(text(reply_to_step(url, {"seed": 2})))  # while both hang
        assert benign["data"]["done"] is False


def test_a_benign_session_plays_with_openenvs_own_client_beside_hostile_ones(url: str) -> None:
    hostile: list[Any] = []

    def hostile_sessions() -> None:  # a huge reply and a hang in flight at the same time
        hostile.append(reply_to_step(url, {"fault": "observation_huge"}))

    side = threading.Thread(target=hostile_sessions, daemon=True)
    side.start()
    with session(url) as hung:
        hung.send(json.dumps({"type": "reset", "data": {"fault": "reset_hangs"}}))
        client = GenericEnvClient(base_url=url, message_timeout_s=WAIT, connect_timeout_s=WAIT).sync()
        with client:
            first = client.reset(seed=3)
            assert first.observation["text"] == f"Say the word {target_word(3)!r}."
            assert first.reward is None and first.done is False
            miss = client.step({"message": "nope"})
            assert (miss.reward, miss.done) == (0.0, False)
            hit = client.step({"message": target_word(3)})
            assert (hit.reward, hit.done) == (1.0, True) and hit.observation["text"] == "Right."
            assert client.state()["step_count"] == 2
    side.join(WAIT)
    assert len(text(hostile[0])) > HUGE_OBSERVATION_BYTES


def test_an_episode_ends_after_max_steps_and_bad_actions_get_openenvs_errors(url: str) -> None:
    with session(url) as ws:
        ask(ws, "reset", {"seed": 0})
        replies = [json.loads(ask(ws, "step", {"message": "no"}))["data"] for _ in range(MAX_STEPS)]
        assert [reply["done"] for reply in replies] == [False] * (MAX_STEPS - 1) + [True]
        refused = json.loads(ask(ws, "step", {"words": 3}))
        assert refused["type"] == "error" and refused["data"]["code"] == "VALIDATION_ERROR"
        assert json.loads(ask(ws, "dance", {}))["data"]["code"] == "UNKNOWN_TYPE"


def test_the_http_side_is_openenvs_own(url: str) -> None:
    with httpx.Client(trust_env=False, timeout=WAIT) as http:
        assert http.get(f"{url}/health").json()["status"] == "healthy"
        schema = http.get(f"{url}/schema").json()
        assert "message" in schema["action"]["properties"] and "text" in schema["observation"]["properties"]
        reset = http.post(f"{url}/reset", json={"seed": 1}).json()
        assert reset["observation"]["text"] == f"Say the word {target_word(1)!r}."


def test_the_fault_map_parses_and_refuses_what_it_does_not_know() -> None:
    assert parse_fault_map(" 1=reward_nan, 3=step_hangs ,") == {1: Fault.REWARD_NAN, 3: Fault.STEP_HANGS}
    assert parse_fault_map("") == {}
    with pytest.raises(ValueError, match="not SEED=FAULT"):
        parse_fault_map("reward_nan")
    with pytest.raises(ValueError, match="reward_nope"):
        parse_fault_map("1=reward_nope")


def test_a_subprocess_server_reads_its_fault_map_from_the_environment() -> None:
    with serve_app_subprocess(
        "openenvgen_testsupport.hostile_env:make_hostile_app",
        env={FAULTS_ENV_VAR: "7=done_string"},
        factory=True,
        ready_path="/health",
    ) as base:
        check_done_string(text(reply_to_step(base, {"seed": 7})))
        assert json.loads(text(reply_to_step(base, {"seed": 8})))["data"]["done"] is False

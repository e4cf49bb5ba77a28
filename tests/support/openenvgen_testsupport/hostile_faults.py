"""The classes of bad reply the hostile env server (`hostile_env`) can answer a session with,
what the runtime must make of each, and how each reply is written on the wire.

OpenEnv's contract for a reply to `reset` or `step` (`{"type": "observation", "data": {...}}`
on `/ws`, where `data` is `serialize_observation`'s `{"observation", "reward", "done"}`): a
reward is a finite number or null, `done` a boolean, the observation a JSON object within a
depth and size bound, every frame a text frame holding one JSON object, and every request
answered. Each `Fault` breaks exactly one of these (or, for `extra_fields` and
`observation_image`, none: the runtime must take those in its stride). `Fault.outcome` is
what the runtime must end such an episode with (issue #40):

* `env_protocol_error`: the episode ends as that distinct, counted error, with one line
  naming `Fault.field` and the value's kind; no NaN/inf reaches a score, a group or a metric;
  the typed client raises its one documented exception; every other episode goes on.
* `env_lost`: the bounded, configurable wait for the server ran out; the episode ends as lost
  (retried elsewhere when retries are on) and the run still finishes.
* `bounded`: the observation is over the configurable size bound; it is cut with a visible
  marker or refused (`env_protocol_error`), as configured; traces and memory stay bounded.
* `ok`: the reply keeps the contract; the episode goes on normally.

The reply-level faults are written as raw JSON text (`frame`), not through a JSON encoder,
because several of them (`NaN`, a 5,000-digit integer, 100,000 levels of nesting) are what
an encoder refuses or a strict one never writes. All of this is pure: no server here.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "DEEP_NESTING",
    "FAULTS",
    "HUGE_OBSERVATION_BYTES",
    "Fault",
    "FaultClass",
    "frame",
    "png_bytes",
]

DEEP_NESTING = 100_000
"""Levels of nested arrays in `observation_deep`'s observation (CPython's json recursion
limit is about 1,000; a recursive parser or validator fails long before this)."""
HUGE_OBSERVATION_BYTES = 60 * 1024 * 1024
"""Size of `observation_huge`'s text field: 60 MB, under OpenEnv's client default frame
limit (100 MB), so a client that trusts the server takes it whole."""
MANY_DIGITS = 5_000
"""Digits of `reward_many_digits`: past CPython's default int-to-str limit (4,300 digits)."""


class Fault(StrEnum):
    """One class of bad reply; chosen per session by the reset's `fault` option or its seed."""

    REWARD_NAN = "reward_nan"
    REWARD_INFINITY = "reward_infinity"
    REWARD_NEGATIVE_INFINITY = "reward_negative_infinity"
    REWARD_STRING = "reward_string"
    REWARD_BOOLEAN = "reward_boolean"
    REWARD_HUGE_INTEGER = "reward_huge_integer"
    REWARD_MANY_DIGITS = "reward_many_digits"
    DONE_STRING = "done_string"
    OBSERVATION_DEEP = "observation_deep"
    OBSERVATION_LONE_SURROGATE = "observation_lone_surrogate"
    OBSERVATION_HUGE = "observation_huge"
    OBSERVATION_NOT_OBJECT = "observation_not_object"
    OBSERVATION_IMAGE = "observation_image"
    RESET_HANGS = "reset_hangs"
    STEP_HANGS = "step_hangs"
    FRAME_NOT_JSON = "frame_not_json"
    FRAME_BINARY = "frame_binary"
    EXTRA_FIELDS = "extra_fields"
    RENAMED_FIELDS = "renamed_fields"


Outcome = Literal["env_protocol_error", "env_lost", "bounded", "ok"]


@dataclass(frozen=True)
class FaultClass:
    """What a fault puts on the wire (`wire`), the reply field it breaks (`field`, `""` for a
    whole frame), and what the runtime must end the episode with (`outcome`)."""

    fault: Fault
    outcome: Outcome
    field: str
    wire: str


FAULTS: dict[Fault, FaultClass] = {
    fault.fault: fault
    for fault in (
        FaultClass(Fault.REWARD_NAN, "env_protocol_error", "reward", '"reward": NaN (a non-standard JSON token)'),
        FaultClass(Fault.REWARD_INFINITY, "env_protocol_error", "reward", '"reward": Infinity'),
        FaultClass(Fault.REWARD_NEGATIVE_INFINITY, "env_protocol_error", "reward", '"reward": -Infinity'),
        FaultClass(Fault.REWARD_STRING, "env_protocol_error", "reward", '"reward": "high"'),
        FaultClass(Fault.REWARD_BOOLEAN, "env_protocol_error", "reward", '"reward": true (a bool is no number)'),
        FaultClass(
            Fault.REWARD_HUGE_INTEGER,
            "env_protocol_error",
            "reward",
            '"reward": 10**400 as an integer literal (1e400: overflows a float to inf)',
        ),
        FaultClass(
            Fault.REWARD_MANY_DIGITS,
            "env_protocol_error",
            "reward",
            f'"reward": an integer literal of {MANY_DIGITS:,} digits (past the int-digits limit)',
        ),
        FaultClass(Fault.DONE_STRING, "env_protocol_error", "done", '"done": "false" (a string, truthy)'),
        FaultClass(
            Fault.OBSERVATION_DEEP,
            "env_protocol_error",
            "observation",
            f'"observation": {{"text": ..., "nested": [[[...]]]}} {DEEP_NESTING:,} arrays deep',
        ),
        FaultClass(
            Fault.OBSERVATION_LONE_SURROGATE,
            "env_protocol_error",
            "observation.text",
            '"text": "...\\ud800..." (a lone surrogate escape: valid JSON, not valid Unicode)',
        ),
        FaultClass(
            Fault.OBSERVATION_HUGE,
            "bounded",
            "observation.text",
            f'"text": {HUGE_OBSERVATION_BYTES // 2**20} MB of ASCII in one frame',
        ),
        FaultClass(
            Fault.OBSERVATION_NOT_OBJECT,
            "env_protocol_error",
            "observation",
            '"observation": ["not", "an", "object"]',
        ),
        FaultClass(
            Fault.OBSERVATION_IMAGE,
            "ok",
            "observation",
            '"text": a PNG data URL, "image": {"mime_type": "image/png", "data": BASE64} '
            "(an image where the schema promises text: never pasted into a prompt past the size bound)",
        ),
        FaultClass(Fault.RESET_HANGS, "env_lost", "", "the reset is read and never answered"),
        FaultClass(Fault.STEP_HANGS, "env_lost", "", "every step is read and never answered"),
        FaultClass(Fault.FRAME_NOT_JSON, "env_protocol_error", "", "a text frame that is not JSON"),
        FaultClass(
            Fault.FRAME_BINARY,
            "env_protocol_error",
            "",
            "a binary frame (OpenEnv sends text frames only) of bytes that are not UTF-8",
        ),
        FaultClass(
            Fault.EXTRA_FIELDS,
            "ok",
            "",
            'unknown keys beside the known ones ("info", "truncated", and in the observation "debug")',
        ),
        FaultClass(
            Fault.RENAMED_FIELDS,
            "env_protocol_error",
            "observation",
            '"obs", "rew", "finished" in place of "observation", "reward", "done" (no "observation" key)',
        ),
    )
}
"""Every fault class, documented; the keys are every `Fault`."""

HANGS = frozenset({Fault.RESET_HANGS, Fault.STEP_HANGS})

_PLACEHOLDER = "__openenvgen_hostile_value__"
_REWARD_TOKENS = {
    Fault.REWARD_NAN: "NaN",
    Fault.REWARD_INFINITY: "Infinity",
    Fault.REWARD_NEGATIVE_INFINITY: "-Infinity",
    Fault.REWARD_STRING: '"high"',
    Fault.REWARD_BOOLEAN: "true",
    Fault.REWARD_HUGE_INTEGER: "1" + "0" * 400,
    Fault.REWARD_MANY_DIGITS: "9" * MANY_DIGITS,
}


def png_bytes(width: int = 32, height: int = 32) -> bytes:
    """A real, decodable PNG (a red-to-blue gradient), made here so no file is needed."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(
        b"\x00" + b"".join(bytes((255 * x // width, 0, 255 * y // height)) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _with_raw(envelope: dict[str, Any], raw: str) -> str:
    """`envelope` as JSON with the one string `_PLACEHOLDER` replaced by raw JSON text."""
    text = json.dumps(envelope)
    quoted = json.dumps(_PLACEHOLDER)
    assert text.count(quoted) == 1
    return text.replace(quoted, raw)


def frame(fault: Fault | None, data: dict[str, Any]) -> str | bytes:
    """The frame that answers with `data` (a benign `{"observation", "reward", "done"}`) under
    `fault`: a `str` for a text frame, `bytes` for a binary one. A hang has no frame (the
    server never calls this for one)."""
    envelope: dict[str, Any] = {"type": "observation", "data": dict(data)}
    body: dict[str, Any] = envelope["data"]
    observation = dict(body["observation"])
    body["observation"] = observation
    if fault is None:
        return json.dumps(envelope)
    if fault in _REWARD_TOKENS:
        body["reward"] = _PLACEHOLDER
        return _with_raw(envelope, _REWARD_TOKENS[fault])
    match fault:
        case Fault.DONE_STRING:
            body["done"] = "false"
        case Fault.OBSERVATION_DEEP:
            observation["nested"] = _PLACEHOLDER
            return _with_raw(envelope, "[" * DEEP_NESTING + "]" * DEEP_NESTING)
        case Fault.OBSERVATION_LONE_SURROGATE:
            observation["text"] = f"{observation.get('text', '')} \ud800 (a lone high surrogate)"
        case Fault.OBSERVATION_HUGE:
            line = "The quick brown fox jumps over the lazy dog. "
            observation["text"] = (line * (HUGE_OBSERVATION_BYTES // len(line) + 1))[:HUGE_OBSERVATION_BYTES]
        case Fault.OBSERVATION_NOT_OBJECT:
            body["observation"] = ["not", "an", "object"]
        case Fault.OBSERVATION_IMAGE:
            encoded = base64.b64encode(png_bytes()).decode("ascii")
            observation["text"] = f"data:image/png;base64,{encoded}"
            observation["image"] = {"mime_type": "image/png", "data": encoded}
        case Fault.FRAME_NOT_JSON:
            return "<html><body>502 Bad Gateway</body></html> {not json"
        case Fault.FRAME_BINARY:
            return b"\x89\xff\xfe binary \x00\x80 frame"
        case Fault.EXTRA_FIELDS:
            body["info"] = {"server": "hostile", "latency_ms": 3}
            body["truncated"] = False
            observation["debug"] = {"trace_id": "abc123", "tags": ["x", "y"]}
        case Fault.RENAMED_FIELDS:
            envelope["data"] = {"obs": body["observation"], "rew": body["reward"], "finished": body["done"]}
        case _:
            raise ValueError(f"{fault} has no reply frame")
    # ensure_ascii (json's default) writes the lone surrogate as the escape `\ud800`.
    return json.dumps(envelope)

"""Every reply of an env server judged at the boundary, before anything reads it.

OpenEnv's contract for the reply to a `reset` or a `step` (the `data` of an `observation`
frame on `/ws`): `reward` a finite number or null, `done` a boolean, `observation` a JSON
object. This module holds the runtime to it, the same in the episode loop, the typed
client and the served path (all three open their sessions with `judged_client_class`):

- `judge` reads the parsed reply's three fields (OpenEnv's `EnvClient._parse_result`, the
  hook its env clients implement, calls it): a reward that is NaN, ±Infinity, a string, a
  boolean or an integer past a float's range, a `done` that is not a boolean, a missing or
  non-object observation, an observation nested deeper than `MAX_DEPTH`, holding a
  non-finite number or a string with a lone surrogate, is an `EnvProtocolError`. A lone
  surrogate is refused, not replaced: it is no Unicode text, and whatever the server meant
  by it is lost either way; replacing it would hand the model text the env never sent.
- `protocol_failure` reads what OpenEnv's client raises on a frame it cannot parse (not
  JSON, a binary frame that is not UTF-8 text, nesting past the JSON parser's recursion, an
  integer past Python's int-digits limit, a frame over `max_reply_mb`) as the same error.
- An observation over `max_observation_chars` characters of text is cut with a visible
  marker (`overflow="truncate"`) or refused (`"refuse"`). Media fields (`...base64`) are
  not text the model reads: they are bounded by `max_media_bytes` when rendered.

The error is one line naming the field and the value's kind, never the value itself. The
check is cheap: the three fields by exact type, then one loop over a flat observation's
fields, or one iterative pass over a nested one's containers (a few dozen nodes for a usual
observation), strings measured by `len` and checked for surrogates only when not ASCII.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from websockets.exceptions import ConnectionClosed

from openenvgen_runtime.turn.media import BASE64_SUFFIX, media_source

MAX_DEPTH = 64
"""Deepest nesting of lists and objects an observation may have (the observation itself is
level 1); deeper is a protocol error."""
DEFAULT_MAX_OBSERVATION_CHARS = 65_536
"""Default `max_observation_chars`: characters of text in one observation, well under a
model's context."""
_FLOAT_MAX = 1.7976931348623157e308
_MESSAGE_TOO_BIG = 1009  # the WebSocket close code for a frame over the receiver's bound
_SHORT = 256  # a string at most this long is never a media payload worth exempting

Overflow = Literal["truncate", "refuse"]


class EnvLost(RuntimeError):
    """The environment's session broke or stopped answering (past `reply_timeout`): the
    episode ends as `env_lost`."""


class EnvProtocolError(RuntimeError):
    """A reply of the env server broke OpenEnv's wire contract; the episode ends as
    `env_protocol_error`. `field` names the part of the reply (`reward`, `done`,
    `observation.text`, `frame` for a frame that could not be read at all)."""

    def __init__(self, field: str, problem: str, where: str = "") -> None:
        self.field, self.problem = field, problem
        super().__init__(f"env protocol error{where}: {field}: {problem}")

    def on(self, where: str) -> EnvProtocolError:
        """The same error, naming where it happened (`" on URL"`)."""
        return EnvProtocolError(self.field, self.problem, where)


@dataclass(frozen=True)
class ReplyLimits:
    """The bounds a reply is held to (the taskset config's keys of the same names)."""

    max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS
    overflow: Overflow = "truncate"
    max_depth: int = MAX_DEPTH


DEFAULT_LIMITS = ReplyLimits()


def kind(value: Any) -> str:
    """What a value is, in a few words (never the value itself, which may be huge)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) else "a number"
    if isinstance(value, int):
        return "an integer past a float's range" if not -_FLOAT_MAX <= value <= _FLOAT_MAX else "an integer"
    if isinstance(value, str):
        return f"a string of {len(value):,} characters"
    if isinstance(value, list):
        return f"a list of {len(value):,} items"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def judge(payload: Any, limits: ReplyLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """`payload` (a reply's `data`) once it keeps the contract: the reward a float or None,
    the observation within the limits (cut in place when over the size and truncating);
    else `EnvProtocolError`."""
    if type(payload) is not dict:
        raise EnvProtocolError("data", f"{kind(payload)}, not a JSON object")
    reward = payload.get("reward")
    if reward is not None and type(reward) is not float:
        if type(reward) is not int or not -_FLOAT_MAX <= reward <= _FLOAT_MAX:
            raise EnvProtocolError("reward", f"{kind(reward)}; a reward is a finite number or null")
        payload["reward"] = float(reward)
    elif reward is not None and not math.isfinite(reward):
        raise EnvProtocolError("reward", f"{kind(reward)}; a reward is a finite number or null")
    done = payload.get("done", False)  # absent: OpenEnv's client reads it as False too
    if type(done) is not bool:
        raise EnvProtocolError("done", f"{kind(done)}; done is a boolean")
    if "observation" not in payload:
        keys = ", ".join(sorted(map(str, payload))[:5]) or "none"
        raise EnvProtocolError("observation", f"missing (the reply's keys: {keys})")
    observation = payload["observation"]
    if type(observation) is not dict:
        raise EnvProtocolError("observation", f"{kind(observation)}, not a JSON object")
    _check_observation(observation, limits)
    return payload


def _check_observation(observation: dict[str, Any], limits: ReplyLimits) -> None:
    """A flat observation (ASCII text within the size bound, finite numbers, booleans, nulls,
    empty containers: most replies) is passed in one loop over its fields; anything else (a
    nested value, text to cut or to check for surrogates, a suspect number, a long key) takes
    `_check_nested` from the start. The loop changes nothing, so the two always agree; it
    exists because this runs on every reply, between two socket round trips."""
    budget = limits.max_observation_chars
    for key, value in observation.items():
        cls = type(value)
        if cls is str:
            budget -= len(value)
            if budget < 0 or not value.isascii():
                break
        elif cls is float:
            if value - value != 0.0:  # NaN or ±Infinity, without a call
                break
        elif cls is dict or cls is list:
            if value:
                break
        elif cls is int and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            break
        if len(key) > _SHORT:
            break
    else:
        return
    _check_nested(observation, limits)


def _check_nested(observation: dict[str, Any], limits: ReplyLimits) -> None:
    """One iterative pass (no recursion: depth is what is being bounded) over the
    observation's containers; its strings' lengths count against the size bound."""
    budget = limits.max_observation_chars
    max_depth = limits.max_depth
    stack: list[tuple[Any, int, str]] = [(observation, 1, "")]
    while stack:
        node, depth, top = stack.pop()
        if depth > max_depth:
            raise EnvProtocolError(f"observation.{top}", f"nested deeper than {max_depth} levels")
        for key, value in node.items() if type(node) is dict else enumerate(node):
            cls = type(value)
            if cls is str:
                if len(value) > budget:
                    if len(value) > _SHORT and type(key) is str and media_source(key) == BASE64_SUFFIX:
                        continue  # media: bounded by max_media_bytes when rendered
                    node[key] = value = _overflow(value, budget, limits, top or str(key))
                budget -= len(value)
                if not value.isascii():
                    _check_unicode(value, top or str(key))
            elif cls is dict or cls is list:
                stack.append((value, depth + 1, top or str(key)))
            elif cls is float:
                if value - value != 0.0:  # NaN or ±Infinity, without a call
                    raise EnvProtocolError(f"observation.{top or key}", f"{kind(value)}, not a JSON number")
            elif cls is int and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
                raise EnvProtocolError(f"observation.{top or key}", kind(value))
            if type(key) is str and len(key) > _SHORT:
                budget -= len(key)
                if budget < 0:
                    raise EnvProtocolError(f"observation.{top or '<key>'}", "keys over max_observation_chars")


def _overflow(text: str, budget: int, limits: ReplyLimits, field: str) -> str:
    """`text` cut to `budget` characters with a marker, or `EnvProtocolError` when refusing."""
    limit = limits.max_observation_chars
    if limits.overflow == "refuse":
        raise EnvProtocolError(
            f"observation.{field}", f"{kind(text)}, over max_observation_chars ({limit:,}); observation_overflow=refuse"
        )
    keep = max(0, budget)
    marker = f" [… {len(text) - keep:,} of {len(text):,} characters cut: over max_observation_chars ({limit:,})]"
    return text[:keep] + marker


def _check_unicode(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise EnvProtocolError(f"observation.{field}", "a string with a lone surrogate (not Unicode text)") from None


def protocol_failure(error: BaseException) -> EnvProtocolError | None:
    """What a failed request's error means for the contract: an `EnvProtocolError` when it is
    one, or when OpenEnv's client could not read the reply's frame; None otherwise."""
    if isinstance(error, EnvProtocolError):
        return error
    if isinstance(error, RecursionError):
        return EnvProtocolError("frame", "nested deeper than the JSON parser follows")
    if isinstance(error, UnicodeDecodeError):
        return EnvProtocolError("frame", "a binary frame that is not UTF-8 text (OpenEnv sends text frames)")
    if isinstance(error, ValueError) and "digits" in str(error):
        return EnvProtocolError("frame", "an integer literal past Python's int-digits limit")
    if isinstance(error, ValueError) and type(error).__name__ == "JSONDecodeError":
        return EnvProtocolError("frame", "not JSON")
    if isinstance(error, OverflowError):
        return EnvProtocolError("frame", "a number past a float's range")
    if isinstance(error, (AttributeError, TypeError)) and "'get'" in str(error):
        return EnvProtocolError("frame", "a JSON value that is not an object")
    if isinstance(error, ConnectionClosed) and error.sent is not None and error.sent.code == _MESSAGE_TOO_BIG:
        return EnvProtocolError("frame", "over max_reply_mb (the client closed the session)")
    return None


@cache
def judged_client_class(base: type[Any]) -> type[Any]:
    """OpenEnv's `GenericEnvClient` (`base`, imported lazily by the caller) whose replies are
    judged: `JudgedEnvClient(base_url=..., limits=ReplyLimits(...), **openenv_options)`."""

    parse = base._parse_result  # the base's own, taken once: no super() object per reply

    class JudgedEnvClient(base):  # type: ignore[misc]
        def __init__(self, *, limits: ReplyLimits = DEFAULT_LIMITS, **options: Any) -> None:
            super().__init__(**options)
            self.reply_limits = limits

        def _parse_result(self, payload: dict[str, Any]) -> Any:
            return parse(self, judge(payload, self.reply_limits))

    JudgedEnvClient.__qualname__ = JudgedEnvClient.__name__ = f"Judged{base.__name__}"
    return JudgedEnvClient

"""The doctor's episodes: a policy plays tasks on one server, and every reply is measured.

`play_episode` resets a session with a task's kwargs and steps it with the policy's actions
until the env says `done`, `max_steps` pass, or the session fails; it records each request's
latency, each reward as the server sent it, the actions the server refused (with its
message), and each observation checked against the package's generated model (the reset
observation's model for the reset). The actions it sent are kept, so `replay` can play the
same seed and actions again and `first_difference` find where the two plays part.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from openenvgen_runtime.doctor.policy import NoValidAction, Policy
from openenvgen_runtime.doctor.sessions import Lost, Refused, Reply, Session
from openenvgen_schemas.doctor_report import InvalidObservation, Mismatch, RefusedAction

MAX_REFUSALS = 3
"""Refused actions in a row before an episode is given up (the server takes none)."""
KEPT = 20
"""Refused actions and invalid observations kept in the report (each kind); the rest counted."""
SHOWN = 200
"""Characters of a value shown in a mismatch or a refused action."""


@dataclass
class Play:
    """One episode as played: its task, its replies (the reset's first) and the actions sent."""

    task: str
    reset: dict[str, Any]
    replies: list[Reply] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    reward: float | None = 0.0
    """Per-step rewards summed (as the runtime scores an episode); None: one was not a finite number."""
    done: bool = False
    error: str | None = None


@dataclass
class Measured:
    """Everything the episodes measured, across all of them."""

    reset_ms: list[float] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    plays: list[Play] = field(default_factory=list)
    actions_sent: int = 0
    refused: list[RefusedAction] = field(default_factory=list)
    refused_count: int = 0
    observations_checked: int = 0
    invalid: list[InvalidObservation] = field(default_factory=list)
    invalid_count: int = 0


@dataclass(frozen=True)
class Models:
    reset: type[BaseModel] | None
    step: type[BaseModel] | None


def shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def finite_reward(value: Any) -> float | None:
    """A reward as a finite float; None for null; NaN for anything else (counted as non-finite)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _check(measured: Measured, model: type[BaseModel] | None, reply: Reply) -> None:
    if model is None or not isinstance(reply.observation, dict):
        return
    measured.observations_checked += 1
    try:
        model.model_validate({**reply.observation, "reward": reply.reward, "done": reply.done})
    except ValidationError as e:
        measured.invalid_count += 1
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if len(measured.invalid) < KEPT:
            measured.invalid.append(InvalidObservation(field=f"observation.{where}", message=first["msg"]))


async def play_episode(
    session: Session,
    play: Play,
    policy: Policy,
    rng: random.Random,
    *,
    models: Models,
    max_steps: int,
    measured: Measured,
    script: list[dict[str, Any]] | None = None,
) -> Play:
    """Play `play`'s task to its end; with `script`, send exactly those actions instead of the policy's."""
    try:
        reply = await session.reset(**play.reset)
        measured.reset_ms.append(reply.ms)
        play.replies.append(reply)
        _check(measured, models.reset or models.step, reply)
        refusals = 0
        while not _is_done(reply.done) and len(play.actions) < (len(script) if script is not None else max_steps):
            if script is not None:
                action = script[len(play.actions)]
            else:
                action = policy.first(rng) if not play.actions and not refusals else policy.next(rng)
            measured.actions_sent += 1
            try:
                reply = await session.step(action)
            except Refused as e:
                measured.refused_count += 1
                if len(measured.refused) < KEPT:
                    measured.refused.append(RefusedAction(action=shown(action), message=str(e)[:SHOWN]))
                refusals += 1
                if refusals >= MAX_REFUSALS or script is not None:
                    play.error = f"the server refused {refusals} valid action(s) in a row: {e}"
                    break
                continue
            refusals = 0
            measured.step_ms.append(reply.ms)
            play.actions.append(action)
            play.replies.append(reply)
            _check(measured, models.step, reply)
            reward = finite_reward(reply.reward)
            if reward is not None and play.reward is not None:
                play.reward = None if math.isnan(reward) else play.reward + reward
        play.done = _is_done(reply.done)
    except Lost as e:
        play.error = f"session lost: {e}"
    except NoValidAction as e:
        play.error = str(e)
    return play


def _is_done(done: Any) -> bool:
    return done is True


def first_difference(first: Any, second: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """Where two replies differ first, as (dotted path, one value, the other), or None."""
    if isinstance(first, dict) and isinstance(second, dict):
        for key in sorted(set(first) | set(second), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in first or key not in second:
                return where, first.get(key), second.get(key)
            found = first_difference(first[key], second[key], where)
            if found is not None:
                return found
        return None
    if isinstance(first, list) and isinstance(second, list):
        for index, (a, b) in enumerate(zip(first, second, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        if len(first) != len(second):
            return f"{path}.length", len(first), len(second)
        return None
    both_nan = isinstance(first, float) and isinstance(second, float) and math.isnan(first) and math.isnan(second)
    return None if first == second or both_nan else (path, first, second)


def compare(original: Play, again: Play) -> Mismatch | None:
    """The first difference between two plays of one seed and one action list."""
    seed = original.reset.get("seed")
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
    for step, (a, b) in enumerate(zip(original.replies, again.replies, strict=False)):
        found = first_difference(a.as_dict(), b.as_dict())
        if found is not None:
            where, one, other = found
            return Mismatch(seed=seed, step=step, field=where, first=shown(one), second=shown(other))
    if len(original.replies) != len(again.replies):
        step = min(len(original.replies), len(again.replies))
        return Mismatch(
            seed=seed,
            step=step,
            field="replies",
            first=f"{len(original.replies)} replies",
            second=f"{len(again.replies)} replies" + (f" ({again.error})" if again.error else ""),
        )
    return None

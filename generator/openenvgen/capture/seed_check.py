"""Does an env honour `seed`? Measured on its running server by `openenv-gen capture`.

Execution model: five WebSocket sessions, one after the other, on the env's `/ws` (one
session at a time: `max_concurrent_envs` defaults to 1). Each resets with the catalog's
reset kwargs and a seed, then steps the recorded episode's actions, asking for `/state`
(the WS `state` message) after the reset and after every step. Sessions A, B and B' use
the same seed, C and C' two others. What each point answered (observation, reward, done,
state, or the error) is compared:

- A ≠ B or B': **not_reproducible**: the same seed does not give the same episode (the env
  ignores `seed`, or has randomness it does not seed); rollouts of one task start from
  different states. A difference seen is certain.
- A = B = B' ≠ C or C': **reproducible**: the seed decides the episode.
- all five equal: **deterministic**: three seeds gave the same episode (no randomness seen).

The last two rest on differences not seen: an env that draws from few outcomes (a ball in
one of five columns) can match by chance, which three same-seed sessions make unlikely.
- no session could be compared (the reset answered an error, or an observation whose
  `error` field, or its metadata's, is set; or a session broke off): **unmeasured**.

The evidence keeps where the sessions differed (paths such as `step 1.observation.board`),
never the values: states can hold answers (Wordle's secret word). The episode id a server
draws for each session, and times the env measures (`execution_time`), are left out of the
comparison.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from openenvgen.capture.ws_session import WSSession

if TYPE_CHECKING:  # `typing.TypeIs` is 3.13+; typing_extensions is pydantic's, only for the checker here
    from typing_extensions import TypeIs

VERDICTS = ("reproducible", "deterministic", "not_reproducible", "unmeasured")
"""Every verdict `measure_seed` gives; only `not_reproducible` makes a repeated task unfair."""
VOLATILE_KEYS = frozenset({"episode_id"})
"""Keys that name a session rather than describe it."""
VOLATILE_NAME = re.compile(r"(^|_)(time|timestamp|elapsed|duration|latency)(s|_ms|_s)?($|_)", re.IGNORECASE)
"""Keys that measure the run (`execution_time`, `elapsed_s`): they differ between any two
runs, seeded or not, so they say nothing about the seed."""
MAX_PATHS = 12
"""Differing paths kept as evidence per comparison."""
REPLY_TIMEOUT_S = 120.0
"""Seconds one reply of a seed session may take."""

Trace = list[tuple[str, Any]]


def measure_seed(url: str, reset: dict[str, Any], actions: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the env at `url` honours `seed`: the verdict and its evidence from five
    sessions of the episode (`reset` kwargs, then `actions`), as the module doc says."""
    seed = reset.get("seed", 0)
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
    other = seed + 1
    traces = []
    try:
        for s in (seed, seed, seed, other, other + 1):
            with WSSession(url, timeout=REPLY_TIMEOUT_S) as session:
                traces.append(session_trace(session, {**reset, "seed": s}, actions))
    except Exception as e:  # a session that breaks off cannot be compared
        from websockets.exceptions import ConnectionClosed

        why = "the server closed it" if isinstance(e, ConnectionClosed) else f"{type(e).__name__}: {str(e)[:200]}"
        return {"verdict": "unmeasured", "evidence": {"reason": f"session {len(traces) + 1} broke off ({why})"}}
    return verdict(traces[0], traces[1:3], traces[3:], seed=seed, other_seed=other)


def session_trace(session: WSSession, reset: dict[str, Any], actions: list[dict[str, Any]]) -> Trace:
    """(label, reply) per point of one session: the reset, then each step, each followed
    by the env's state. Stops after an error or a done."""
    trace: Trace = []

    def point(label: str, message: dict[str, Any]) -> bool:
        reply = session.send(message)
        trace.append((label, _reply_data(reply)))
        trace.append((f"{label}.state", _reply_data(session.send({"type": "state"}))))
        data = reply.get("data") if isinstance(reply, dict) else None
        return reply.get("type") != "error" and not (isinstance(data, dict) and data.get("done"))

    if point("reset", {"type": "reset", "data": reset}):
        for n, action in enumerate(actions, start=1):
            if not point(f"step {n}", {"type": "step", "data": action}):
                break
    return trace


def _reply_data(reply: Any) -> Any:
    if isinstance(reply, dict) and reply.get("type") == "error":
        data = reply.get("data") or {}
        return {"error": data.get("code") if isinstance(data, dict) else "error"}
    return reply.get("data") if isinstance(reply, dict) else reply


def differences(a: list[tuple[str, Any]], b: list[tuple[str, Any]]) -> list[str]:
    """The paths where two traces differ (a point only one trace reached counts whole)."""
    found: list[str] = []
    by_label = dict(b)
    for label, value in a:
        if label not in by_label:
            found.append(label)
        else:
            _diff(value, by_label[label], label, found)
    found.extend(label for label, _ in b if label not in dict(a))
    return found


def _diff(a: Any, b: Any, path: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key in VOLATILE_KEYS or (isinstance(key, str) and VOLATILE_NAME.search(key)):
                continue
            if key not in a or key not in b:
                found.append(f"{path}.{key}")
            else:
                _diff(a[key], b[key], f"{path}.{key}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        if any(_canonical(x) != _canonical(y) for x, y in zip(a, b, strict=True)):
            found.append(path)
    elif _canonical(a) != _canonical(b):
        found.append(path)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def verdict(
    same: Trace, again: Trace | list[Trace], other: Trace | list[Trace], *, seed: int, other_seed: int
) -> dict[str, Any]:
    """The verdict and its evidence from session A, the sessions reset with A's seed
    (`again`) and those reset with others (`other`, the first with `other_seed`)."""
    agains = again if _several(again) else [again]
    others = other if _several(other) else [other]
    compared = sum(1 for label, _ in same if not label.endswith(".state"))
    sessions = [1 + len(agains), len(others)]
    evidence: dict[str, Any] = {"seed": seed, "other_seed": other_seed, "points": compared, "sessions": sessions}
    reason = _reset_failure(same)
    if reason:
        return {"verdict": "unmeasured", "evidence": {**evidence, "reason": reason}}
    same_seed = _union(differences(same, b) for b in agains)
    other_seed_diff = _union(differences(same, c) for c in others)
    evidence["same_seed_differs_at"] = same_seed[:MAX_PATHS]
    evidence["other_seed_differs_at"] = other_seed_diff[:MAX_PATHS]
    if same_seed:
        name = "not_reproducible"
    elif other_seed_diff:
        name = "reproducible"
    else:
        name = "deterministic"
    return {"verdict": name, "evidence": evidence}


def _several(traces: Trace | list[Trace]) -> TypeIs[list[Trace]]:
    """Whether `traces` is a list of traces, not one trace (whose items are tuples)."""
    return bool(traces) and isinstance(traces[0], list)


def _union(found: Any) -> list[str]:
    """Paths in order of first appearance, each once."""
    return list(dict.fromkeys(path for paths in found for path in paths))


def _reset_failure(trace: list[tuple[str, Any]]) -> str:
    """Why the session's reset did not start an episode ("" if it did): an error reply, or
    an observation whose `error` field (or its metadata's) says so (a missing required
    reset kwarg, a sandbox key that is not set)."""
    if not trace:
        return "no reset reply"
    reply = trace[0][1]
    if isinstance(reply, dict) and "error" in reply and "observation" not in reply:
        return f"the reset answered {reply['error']}"
    observation = reply.get("observation") if isinstance(reply, dict) else None
    if not isinstance(observation, dict):
        return ""
    metadata = observation.get("metadata")
    error = observation.get("error") or (metadata.get("error") if isinstance(metadata, dict) else None)
    if error:
        return f"the reset's observation reports an error: {str(error)[:160]}"
    return ""


def summary(result: dict[str, Any]) -> str:
    """One line for people on what the verdict rests on."""
    evidence = result.get("evidence", {})
    name = result.get("verdict", "unmeasured")
    if name == "unmeasured":
        return str(evidence.get("reason", "no session"))
    steps = max(0, evidence.get("points", 1) - 1)
    played = f"the reset and {steps} step{'' if steps == 1 else 's'}" if steps else "the reset"
    seed, other = evidence.get("seed"), evidence.get("other_seed")
    same_n, other_n = evidence.get("sessions", [2, 1])
    if other_n == 1:
        seeds = f"seed {other}"
    else:
        seeds = f"seeds {other} and {other + 1}" if other_n == 2 else f"seeds {other} to {other + other_n - 1}"
    if name == "not_reproducible":
        where = ", ".join(evidence.get("same_seed_differs_at", [])[:3])
        return f"{same_n} sessions reset with seed {seed} differed over {played}, at {where}"
    if name == "reproducible":
        return f"{same_n} sessions reset with seed {seed} matched over {played}; {seeds} gave other episodes"
    return f"{same_n} sessions reset with seed {seed} and {other_n} with {seeds} played the same episode over {played}"

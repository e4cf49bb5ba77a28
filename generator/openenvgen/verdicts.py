"""What a real env server accepts: actions sampled from its action schema, and its verdicts.

`openenv-gen capture` draws actions from the captured action schema (hypothesis-jsonschema:
valid ones, and near misses: a required field dropped, an unknown field added, a field or a
nested value of the wrong type, a non-object) and sends each to the running server's HTTP
`POST /step`. openenv validates the action against the env's own model before it creates an
env to step: a validation error answers 422 with pydantic's errors, anything else means the
model accepted it (the step itself may still fail, e.g. on an env that cannot run here;
that is the env's business, not validation's). tests/test_validation_equivalence.py
replays every verdict against the generated models: they must accept exactly what the
server accepted.

Sampling is derandomised (hypothesis' `derandomize`), so a recapture of an unchanged
schema sends the same actions. Only the capture samples; the tests read the verdicts.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

import httpx

VALID = 24
"""Valid actions drawn per env."""
NEAR_MISSES = 24
"""Near-miss actions drawn per env (each a valid one changed in one way)."""
STEP_TIMEOUT_S = 30.0
"""An accepted action is stepped on a fresh env: a slow env may take this long."""
MAX_TIMEOUTS = 2
"""Actions left unanswered before the env's sampling stops."""
WRONG_VALUES = (None, "", "x", "3", 1.5, -1, 0, 10**9, True, [], {}, [1], {"a": 1})
NOT_OBJECTS = (None, "x", 3, [], [{"a": 1}])
_SAMPLING = threading.Lock()
"""hypothesis is not thread-safe: `capture --jobs N` samples one env at a time."""


def sample_actions(schema: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """Distinct actions to send (valid ones first), and notes on what could not be drawn."""
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
        from hypothesis_jsonschema import from_schema
    except ImportError as e:  # a capture dependency, in the test extra
        raise RuntimeError(f"recording validation verdicts needs hypothesis-jsonschema ({e}): pip install 'openenv-gen[test]'") from None
    from openenvgen_schemas.normalise import inline_refs

    notes: list[str] = []
    try:
        valid = from_schema(inline_refs(schema))
    except Exception as e:  # a schema hypothesis-jsonschema cannot draw from
        return list(NOT_OBJECTS), [f"no valid action could be drawn from the schema ({type(e).__name__}: {str(e)[:120]})"]

    def draw(strategy: Any, count: int) -> list[Any]:
        found: dict[str, Any] = {}

        @settings(max_examples=count * 4, derandomize=True, database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(strategy)
        def collect(value: Any) -> None:
            if len(found) < count:
                found.setdefault(json.dumps(value, sort_keys=True), value)

        try:
            collect()
        except Exception as e:  # an unsatisfiable or unsupported schema
            notes.append(f"sampling stopped: {type(e).__name__}: {str(e)[:120]}")
        return list(found.values())

    @st.composite
    def near_miss(draw_: st.DrawFn) -> Any:
        payload = draw_(valid)
        if not isinstance(payload, dict):
            return draw_(st.sampled_from(NOT_OBJECTS))
        payload = dict(payload)
        how = draw_(st.sampled_from(["drop", "extra", "retype", "nested", "not_object"]))
        if how == "drop" and payload:
            payload.pop(draw_(st.sampled_from(sorted(payload))))
        elif how == "extra":
            payload[draw_(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8))] = draw_(st.sampled_from(WRONG_VALUES))
        elif how == "retype" and payload:
            payload[draw_(st.sampled_from(sorted(payload)))] = draw_(st.sampled_from(WRONG_VALUES))
        elif how == "nested":
            nested = sorted(k for k, v in payload.items() if isinstance(v, dict) and v)
            if nested:
                key = draw_(st.sampled_from(nested))
                inner = dict(payload[key])
                inner[draw_(st.sampled_from(sorted(inner)))] = draw_(st.sampled_from(WRONG_VALUES))
                payload[key] = inner
        elif how == "not_object":
            return draw_(st.sampled_from(NOT_OBJECTS))
        return payload

    actions: dict[str, Any] = {}
    for value in [*draw(valid, VALID), *draw(near_miss(), NEAR_MISSES)]:
        actions.setdefault(json.dumps(value, sort_keys=True), value)
    return list(actions.values()), notes


def server_verdict(client: httpx.Client, action: Any) -> dict[str, Any]:
    """What the server did with one action: accepted, or its validation errors."""
    try:
        reply = client.post("/step", json={"action": action}, timeout=STEP_TIMEOUT_S)
    except httpx.TimeoutException:
        # Probably stepping (validation answers at once), but a blocked event loop looks
        # the same from here: no verdict.
        return {"action": action, "accepted": None, "status": f"no answer within {STEP_TIMEOUT_S:g}s"}
    if reply.status_code == 422:
        try:
            detail = reply.json().get("detail")
        except ValueError:
            detail = reply.text[:300]
        return {"action": action, "accepted": False, "errors": _errors(detail)}
    return {"action": action, "accepted": True, "status": reply.status_code}


def _errors(detail: Any) -> list[dict[str, Any]]:
    """pydantic's errors, reduced to what says why (type, location, message)."""
    if not isinstance(detail, list):
        return [{"msg": str(detail)[:300]}]
    return [
        {"type": e.get("type"), "loc": e.get("loc"), "msg": str(e.get("msg", ""))[:200]}
        for e in detail[:5]
        if isinstance(e, dict)
    ]


def record_verdicts(url: str, schema: dict[str, Any], *, echo: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Sample actions from `schema`, send each to the server at `url`, return the record."""
    with _SAMPLING:
        actions, notes = sample_actions(schema)
    cases = []
    with httpx.Client(base_url=url, timeout=STEP_TIMEOUT_S) as client:
        for action in actions:
            case = server_verdict(client, action)
            cases.append(case)
            if case["accepted"] is None and sum(1 for c in cases if c["accepted"] is None) >= MAX_TIMEOUTS:
                notes.append(f"stopped after {MAX_TIMEOUTS} actions got no answer within {STEP_TIMEOUT_S:g}s")
                break
    accepted = sum(1 for c in cases if c["accepted"] is True)
    rejected = sum(1 for c in cases if c["accepted"] is False)
    echo(f"{len(cases)} actions, {accepted} accepted, {rejected} rejected")
    return {"endpoint": "POST /step", "accepted": accepted, "rejected": rejected, "notes": notes, "cases": cases}

"""What a real env server accepts: actions sampled from its action schema, and its rulings.

A ruling is what the server did with one action: accepted it, or rejected it with its
validation errors (not to be confused with a seed verdict, `seed_check`). The capture
keeps an env's rulings in its `validation.json`.

`openenv-gen capture` draws actions from the captured action schema (hypothesis-jsonschema:
valid ones, and near misses: a required field dropped, an unknown field added, a field or a
nested value of the wrong type, a non-object) and sends each to the running server's HTTP
`POST /step`. openenv validates the action against the env's own model before it creates an
env to step: a validation error answers 422 with pydantic's errors, anything else means the
model accepted it (the step itself may still fail, e.g. on an env that cannot run here;
that is the env's business, not validation's). An env that turns HTTP stepping off (its
`/step` answers e.g. 400) is asked over one `/ws` session instead: a step message answered
`VALIDATION_ERROR` is a rejection. A step that does not answer in time (an env waiting on a
service that is not there) was accepted if the server still answers `/health`: openenv
validates on its event loop before it steps in a worker thread.
tests/generator/capture/test_validation_equivalence.py replays every ruling against the
generated models: they must accept exactly what the server accepted.

Sampling is derandomised (hypothesis' `derandomize`), so a recapture of an unchanged
schema sends the same actions. Only the capture samples; the tests read the rulings.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from openenvgen.capture.ws_session import WSSession
from openenvgen_servers.wire import health

VALID = 24
"""Valid actions drawn per env."""
NEAR_MISSES = 24
"""Near-miss actions drawn per env (each a valid one changed in one way)."""
STEP_TIMEOUT_S = 30.0
"""An accepted action is stepped on a fresh env: a slow env may take this long."""
SLOW_STEP_TIMEOUT_S = 10.0
"""Once one step has outlasted STEP_TIMEOUT_S, the wait for the next: a rejection answers
at once, so ten seconds tell a rejection from a step as well as thirty."""
MAX_TIMEOUTS = 2
"""Actions left without a ruling (unanswered) before the env's sampling stops."""
WRONG_VALUES: tuple[Any, ...] = (None, "", "x", "3", 1.5, -1, 0, 10**9, True, [], {}, [1], {"a": 1})
NOT_OBJECTS: tuple[Any, ...] = (None, "x", 3, [], [{"a": 1}])
_SAMPLING = threading.Lock()
"""hypothesis is not thread-safe: `capture --jobs N` samples one env at a time."""


def sample_actions(schema: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """Distinct actions to send (near misses first), and notes on what could not be drawn."""
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
        from hypothesis_jsonschema import from_schema
    except ImportError as e:  # a capture dependency, in the test extra
        needs = f"recording validation rulings needs hypothesis-jsonschema ({e})"
        raise RuntimeError(f"{needs}: pip install 'openenv-gen[test]'") from None
    from openenvgen_schemas.normalise import inline_refs

    notes: list[str] = []
    try:
        valid = from_schema(inline_refs(schema))
    except Exception as e:  # a schema hypothesis-jsonschema cannot draw from
        why = f"{type(e).__name__}: {str(e)[:120]}"
        return list(NOT_OBJECTS), [f"no valid action could be drawn from the schema ({why})"]

    def draw(strategy: Any, count: int) -> list[Any]:
        found: dict[str, Any] = {}

        @settings(
            max_examples=count * 4,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
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
            value = draw_(st.sampled_from(WRONG_VALUES))  # drawn before the key, as the capture always did
            payload[draw_(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8))] = value
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

    # Near misses first: most are answered at once, so an env whose accepted steps hang
    # (waiting on a service that is not there) still gets its rejections recorded.
    actions: dict[str, Any] = {}
    for value in [*draw(near_miss(), NEAR_MISSES), *draw(valid, VALID)]:
        actions.setdefault(json.dumps(value, sort_keys=True), value)
    return list(actions.values()), notes


def server_ruling(
    client: httpx.Client, action: Any, *, timeout: float = STEP_TIMEOUT_S, log: ServerLog | None = None
) -> dict[str, Any]:
    """What the server did with one action: accepted, or its validation errors."""
    try:
        try:
            reply = client.post("/step", json={"action": action}, timeout=timeout)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            # uvicorn closes the connection after a step that raised (a 500): once more, on a new one.
            reply = client.post("/step", json={"action": action}, timeout=timeout)
    except httpx.TimeoutException:
        # openenv validates on its event loop before it creates an env and steps it in a
        # thread: if the loop still answers /health, validation is behind this action and
        # it is stepping (an env waiting on a service that is not there). Else no ruling.
        if health(client, str(client.base_url).rstrip("/")) is None:
            status = f"still stepping after {timeout:g}s (the server answered /health)"
            return {"action": action, "accepted": True, "status": status}
        return {"action": action, "accepted": None, "status": f"no answer within {timeout:g}s, and none on /health"}
    except httpx.TransportError as e:  # the server went away (an env that crashes on a step)
        return {"action": action, "accepted": None, "status": f"{type(e).__name__}: {str(e)[:120]}"}
    if reply.status_code == 422:
        try:
            detail = reply.json().get("detail")
        except ValueError:
            detail = reply.text[:300]
        return {"action": action, "accepted": False, "errors": _errors(detail)}
    if reply.status_code == 500 and log is not None:
        # A 500 says only that something raised: a validator raising what pydantic does
        # not turn into a validation error (a TypeError), or the step. The server's log
        # says which: openenv's `deserialize_action` is on the traceback of the first.
        traceback = log.after_response()
        if VALIDATION_FRAME in traceback:
            raised = {"type": "raised", "loc": None, "msg": _last_line(traceback)}
            return {"action": action, "accepted": False, "errors": [raised]}
        return {"action": action, "accepted": True, "status": 500}
    return {"action": action, "accepted": True, "status": reply.status_code}


VALIDATION_FRAME = "in deserialize_action"
"""The traceback frame of openenv's action validation (`http_server.step_handler`)."""


class ServerLog:
    """The server's log file, read from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0

    def after_response(self, settle_s: float = 0.3, timeout_s: float = 5.0) -> str:
        """What the server logged since the last read, once it stopped growing (uvicorn
        logs a handler's traceback after it sent the 500)."""
        deadline = time.monotonic() + timeout_s
        size = -1
        while time.monotonic() < deadline:
            current = self.path.stat().st_size if self.path.is_file() else 0
            if current == size and current > self.offset:
                break
            size = current
            time.sleep(settle_s)
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            text = fh.read().decode("utf-8", "replace")
        self.offset += len(text.encode("utf-8", "replace"))
        return text


def _last_line(traceback: str) -> str:
    """The exception line a traceback ends with (the last line that is not an access log)."""
    logged = [line for line in traceback.splitlines() if line.strip()]
    lines = [line for line in logged if not line.startswith(("INFO:", "WARNING:", " "))]
    errors = [line for line in lines if not line.startswith(("ERROR:", "Traceback"))]
    return (errors[-1] if errors else "the server raised (see its log)")[:200]


def _errors(detail: Any) -> list[dict[str, Any]]:
    """pydantic's errors, reduced to what says why (type, location, message)."""
    if not isinstance(detail, list):
        return [{"msg": str(detail)[:300]}]
    return [
        {"type": e.get("type"), "loc": e.get("loc"), "msg": str(e.get("msg", ""))[:200]}
        for e in detail[:5]
        if isinstance(e, dict)
    ]


def ws_ruling(session: WSSession, action: Any) -> dict[str, Any]:
    """The same over the WebSocket, for an env that turns HTTP `/step` off: a step message
    answered VALIDATION_ERROR is a rejection, anything else (an observation, or the step's
    own EXECUTION_ERROR) got past validation."""
    try:
        reply = session.send({"type": "step", "data": action})
    except Exception as e:  # the session broke off: no ruling, a new session for the next
        session.close()
        return {"action": action, "accepted": None, "status": f"{type(e).__name__}: {str(e)[:120]}"}
    data = reply.get("data") if isinstance(reply, dict) else None
    error_reply = isinstance(reply, dict) and reply.get("type") == "error"
    if error_reply and isinstance(data, dict) and data.get("code") == "VALIDATION_ERROR":
        return {"action": action, "accepted": False, "errors": _errors(data.get("errors") or data.get("message"))}
    kind = reply.get("type") if isinstance(reply, dict) else "?"
    code = data.get("code") if isinstance(data, dict) else None
    return {"action": action, "accepted": True, "status": f"{kind} {code}" if code else kind}


HTTP_RULING_CODES = (200, 422, 500)
"""What openenv's own `/step` answers: stepped, invalid, or the step raised."""


def record_rulings(
    url: str, schema: dict[str, Any], *, log: Path | None = None, echo: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Sample actions from `schema`, send each to the server at `url`, return the record.

    HTTP `POST /step` first; an env whose `/step` answers something openenv's does not
    (e.g. 400: it turned HTTP stepping off for the WebSocket) is asked over `/ws` instead.
    `log`, the server's log file, tells a 500 from validation from a 500 from the step."""
    with _SAMPLING:
        actions, notes = sample_actions(schema)
    cases: list[dict[str, Any]] = []
    endpoint = "POST /step"
    server_log = ServerLog(log) if log is not None else None
    with httpx.Client(base_url=url, timeout=STEP_TIMEOUT_S) as client:
        session = WSSession(url, timeout=STEP_TIMEOUT_S)
        try:
            wait = STEP_TIMEOUT_S
            for action in actions:
                if endpoint == "POST /step":
                    case = server_ruling(client, action, timeout=wait, log=server_log)
                    if str(case.get("status", "")).startswith("still stepping"):
                        wait = SLOW_STEP_TIMEOUT_S
                    status = case.get("status")
                    if isinstance(status, int) and status not in HTTP_RULING_CODES:
                        notes.append(f"POST /step answered {status}: rulings come from WebSocket step messages")
                        endpoint = "WS step"
                        cases.clear()
                if endpoint == "WS step":
                    case = ws_ruling(session, action)
                cases.append(case)
                if case["accepted"] is None and sum(1 for c in cases if c["accepted"] is None) >= MAX_TIMEOUTS:
                    why = f"no answer within {STEP_TIMEOUT_S:g}s, or the server went away"
                    notes.append(f"stopped after {MAX_TIMEOUTS} actions got no ruling ({why})")
                    break
        finally:
            session.close()
    accepted = sum(1 for c in cases if c["accepted"] is True)
    rejected = sum(1 for c in cases if c["accepted"] is False)
    echo(f"{len(cases)} actions, {accepted} accepted, {rejected} rejected")
    return {"endpoint": endpoint, "accepted": accepted, "rejected": rejected, "notes": notes, "cases": cases}

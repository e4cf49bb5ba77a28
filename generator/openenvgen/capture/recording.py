"""Record one running env's replies into its capture folder.

A capture is the folder of one env's recorded replies, one JSON file per reply:

- `health.json`, `metadata.json`, `schema.json` (GET `/health`, `/metadata`, `/schema`);
- `mcp_tools_list.json` (POST `/mcp` tools/list) for MCP envs, else `mcp_probe.json`
  (the JSON-RPC error a non-MCP env returns);
- one WebSocket session on `/ws`: `reset_request.json`/`reset.json`, then for MCP envs
  `tools.json` (a `list_tools` step) and `ws_mcp_tools_list.json` (an `mcp` message), then
  the catalog's episode actions as `step_action.json`/`step.json`,
  `step_N_action.json`/`step_N.json` (N = 2, 3, ...);
- `seed.json`: whether the env honours `seed` (`seed_check`);
- `validation.json`: the server's rulings on actions sampled from its schema (`validation`);
- `source.json` (written by `capture`): the commit, the command, the env vars set, the
  versions installed, and notes on what the env could not do here.

The reset kwargs and the actions come from the env's catalog entry (`resets[0]`, then
`episode`, else `example_action`; none with `no_episode`), so the recording is exactly the
scripted episode the tests replay. An env without a catalog entry is recorded up to its
reset.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from openenvgen.capture.seed_check import measure_seed
from openenvgen.capture.validation import record_rulings
from openenvgen.capture.ws_session import WSSession
from openenvgen.catalog.reader import CATALOG_TOML, entry_captured_from
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_servers.wire import TOOLS_LIST, WireError, get_json

SEED_FILE = "seed.json"
RULINGS_FILE = "validation.json"
"""The server's rulings on sampled actions (`validation.record_rulings`)."""
SOURCE_FILE = "source.json"
INDEX_FILE = "capture.json"
"""In the folder of all captures: the source commit, what was captured, what failed and why."""
REQUEST_TIMEOUT_S = 120.0


class CaptureFailed(Exception):
    """One env could not be recorded; the message says why (one line plus log lines)."""


@dataclass(frozen=True)
class Plan:
    """What to send: the reset kwargs and the episode's actions (wire form)."""

    reset: dict[str, Any]
    actions: list[dict[str, Any]]


def wire_form(action: dict[str, Any], *, mcp: bool) -> dict[str, Any]:
    """A catalog action (`{tool, arguments}` for MCP envs) as the env receives it."""
    if mcp and "tool" in action:
        return {"type": "call_tool", "tool_name": action["tool"], "arguments": action.get("arguments", {})}
    return dict(action)


def plan_for(env_folder: str, *, mcp: bool, catalog_toml: Path = CATALOG_TOML) -> Plan:
    """The first reset and the `episode` (default: the example action) of the catalog
    entry captured from `env_folder`; nothing to send without an entry."""
    entry = entry_captured_from(env_folder, catalog_toml)
    if entry is None:
        return Plan(reset={}, actions=[])
    example = entry.get("example_action")
    episode = entry.get("episode") or ([example] if example else [])
    if entry.get("no_episode"):  # the env cannot play one here: the reason is in the catalog
        episode = []
    return Plan(reset=dict((entry.get("resets") or [{}])[0]), actions=[wire_form(a, mcp=mcp) for a in episode])


def write_json(folder: Path, name: str, value: Any) -> None:
    """One reply (or record) as the capture keeps it: indented, UTF-8, a final newline."""
    (folder / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", "utf-8")


def record(url: str, folder: Path, plan_of: Callable[[bool], Plan], *, log: Path | None = None) -> list[str]:
    """Record one running env into `folder`; returns the notes worth keeping.

    `/health` and `/schema` must answer (else CaptureFailed): they are what the catalog is
    made of. Past that, what the env cannot do here is noted, not fatal: a `/metadata`
    that fails (openenv builds an env instance to answer it, so the env cannot start a
    session here either), a reset that answers an error or ends the episode. `plan_of(mcp)`
    gives what to send, `log` is the server's log (see `validation.record_rulings`).
    """
    notes: list[str] = []
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        try:
            write_json(folder, "health.json", get_json(client, "GET", f"{url}/health"))
            schema = get_json(client, "GET", f"{url}/schema")
        except WireError as e:
            raise CaptureFailed(str(e)) from None
        write_json(folder, "schema.json", schema)
        action = schema.get("action") if isinstance(schema, dict) else None
        mcp = isinstance(action, dict) and is_mcp_action(action)
        metadata = client.get(f"{url}/metadata")
        if metadata.status_code != 200:
            why = f"GET /metadata answered {metadata.status_code}: the env cannot be created here"
            notes.append(f"{why}, no session recorded")
            write_json(folder, SEED_FILE, {"verdict": "unmeasured", "evidence": {"reason": why}})
            _record_rulings(url, folder, action, log)
            return notes
        write_json(folder, "metadata.json", metadata.json())
        listing = client.post(f"{url}/mcp", json=TOOLS_LIST)
        try:
            listing_json = listing.json()
        except ValueError:  # an openenv without /mcp
            listing_json = {"status_code": listing.status_code, "text": listing.text[:500]}
    write_json(folder, "mcp_tools_list.json" if mcp else "mcp_probe.json", listing_json)
    plan = plan_of(mcp)
    outcome = _record_session(url, folder, plan, mcp=mcp)
    if outcome:
        notes.append(outcome)
    elif not plan.actions:
        notes.append("no catalog episode for this env: recorded up to the reset")
    write_json(folder, SEED_FILE, measure_seed(url, plan.reset, plan.actions))
    _record_rulings(url, folder, action, log)
    return notes


def _record_rulings(url: str, folder: Path, action_schema: Any, log: Path | None) -> None:
    """The server's rulings on actions sampled from its schema; its log tells a validator
    that raised from a step that raised."""
    if isinstance(action_schema, dict):
        write_json(folder, RULINGS_FILE, record_rulings(url, action_schema, log=log))


def _record_session(url: str, folder: Path, plan: Plan, *, mcp: bool) -> str:
    """Record the WS session; returns why it stopped at the reset ("" if it did not)."""
    with WSSession(url, timeout=REQUEST_TIMEOUT_S) as session:
        request = {"type": "reset", "data": plan.reset}
        write_json(folder, "reset_request.json", request)
        reset = session.send(request)
        write_json(folder, "reset.json", reset)
        if reset.get("type") == "error":
            return f"the reset answered an error: {json.dumps(reset.get('data'))[:300]}"
        if mcp:
            write_json(folder, "tools.json", session.send({"type": "step", "data": {"type": "list_tools"}}))
            message = {**TOOLS_LIST, "id": 7}
            write_json(folder, "ws_mcp_tools_list.json", session.send({"type": "mcp", "data": message}))
        if reset.get("data", {}).get("done"):
            return "the reset ended the episode (done): no step sent"
        for n, action in enumerate(plan.actions, start=1):
            stem = "step" if n == 1 else f"step_{n}"
            write_json(folder, f"{stem}_action.json", action)
            reply = session.send({"type": "step", "data": action})
            write_json(folder, f"{stem}.json", reply)
            if reply.get("type") == "error":
                error = json.dumps(reply.get("data"))[:300]
                raise CaptureFailed(f"step {n} of the catalog episode answered an error: {error}")
    return ""

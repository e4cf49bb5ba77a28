"""The run-time drift guard: is each server the env the package was generated from?

At pool start, each server's live `/schema` (and, for MCP envs, its tool list) is
compared with the package's `snapshot.json` by the very model diff `openenv-gen check
--upstream` uses (`openenvgen_schemas.modeldiff`, with its normalisation: local `$ref`s
inlined, titles dropped, descriptions compared without whitespace noise, tool docstrings
reduced to their summary). Only what the model exchanges with the env counts: the action
kind, the action schema (a union member by member), the tools, the observation schema and
the reset observation's (`reset_observation`, where served); `/schema.state` and the env's
metadata do not. An MCP union (agent_world_model's `ListToolsAction | CallToolAction`) is
checked on what is known ahead, its members' schemas: the tools it lists may follow the task,
so they are not compared.

`on_drift` decides what a difference does:
- "warn" (default): one log line with the diff summary (impact, then each change's path
  and what changed, the first few of them), and the run goes on;
- "error": a `DriftError` (one line, the same summary) before any episode starts;
- "ignore": nothing is compared.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_schemas.modeldiff import RANK, Change, ModelDiff, diff_interfaces, is_mcp_action

logger = logging.getLogger(__name__)

OnDrift = Literal["warn", "error", "ignore"]
SHOWN_CHANGES = 3
"""Changes spelled out in the one-line summary; the rest are counted."""


class DriftError(LaunchError):
    """A server's live interface differs from the package's snapshot (`on_drift="error"`)."""


@dataclass(frozen=True)
class ToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class EnvInterface:
    """What the model exchanges with an env, from a snapshot or a live server."""

    action_schema: dict[str, Any]
    observation_schema: dict[str, Any]
    tools: tuple[ToolInfo, ...] | None = None
    reset_observation_schema: dict[str, Any] | None = None
    """None when reset returns a step observation (no `reset_observation` in `/schema`)."""
    is_mcp: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_mcp", is_mcp_action(self.action_schema))


def _tools(raw: Iterable[dict[str, Any]] | None) -> tuple[ToolInfo, ...] | None:
    if raw is None:
        return None
    # POST /mcp tools/list says inputSchema; snapshots (and the WebSocket list) input_schema.
    return tuple(
        ToolInfo(
            name=str(t.get("name")),
            description=t.get("description") or "",
            input_schema=t.get("input_schema", t.get("inputSchema", {"type": "object"})),
        )
        for t in raw
    )


def snapshot_interface(path: Path) -> EnvInterface:
    """The interface recorded in a package's `snapshot.json`."""
    data = json.loads(Path(path).read_text("utf-8"))
    return EnvInterface(
        data["action_schema"],
        data["observation_schema"],
        _tools(data.get("tools")),
        data.get("reset_observation_schema"),
    )


def live_interface(schema: dict[str, Any], tools: list[dict[str, Any]] | None) -> EnvInterface:
    """The interface a server reports: its `/schema` reply and its tool list (MCP envs)."""
    return EnvInterface(
        schema.get("action") or {}, schema.get("observation") or {}, _tools(tools), schema.get("reset_observation")
    )


def diff(snapshot: EnvInterface, live: EnvInterface) -> ModelDiff:
    return ModelDiff(tuple(diff_interfaces(snapshot, live)))


def summary(model_diff: ModelDiff) -> str:
    """`major: action.message: field removed; tools.add: tool added (+2 more)`, the
    largest impacts first."""
    changes: list[Change] = sorted(model_diff.changes, key=lambda c: -RANK[c.impact])
    shown = "; ".join(f"{c.path}: {c.what}" for c in changes[:SHOWN_CHANGES])
    more = f" (+{len(changes) - SHOWN_CHANGES} more)" if len(changes) > SHOWN_CHANGES else ""
    return f"{model_diff.impact}: {shown}{more}"


def check_drift(servers: Iterable[Any], snapshot_path: Path | None, mode: OnDrift = "warn") -> None:
    """Compare each server (`.url`, `.schema`, `.tools`, as the pool holds them) with the
    snapshot; log one warning line, raise `DriftError`, or do nothing, per `mode`."""
    if mode == "ignore" or snapshot_path is None:
        return
    try:
        snapshot = snapshot_interface(snapshot_path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        problem = f"cannot read the package's schema snapshot {snapshot_path}: {e}"
        if mode == "error":
            raise DriftError(f"on_drift=error: {problem}") from None
        logger.warning("drift check skipped: %s", problem)
        return
    checked = list(servers)
    # Tools are compared where the snapshot has them ahead: a plain MCP env's.
    drifted = [
        (s, d) for s in checked if (d := diff(snapshot, live_interface(s.schema, s.tools if snapshot.is_mcp else None)))
    ]
    if not drifted:
        return
    server, first = drifted[0]
    others = f" (and {len(drifted) - 1} more of {len(checked)} servers)" if len(drifted) > 1 else ""
    line = f"{server.shown}{others} differs from the package's schema snapshot, {summary(first)}"
    if mode == "error":
        raise DriftError(
            f"{line}. Regenerate the package (openenv-gen regen PACKAGE_DIR --from-upstream --base-url {server.shown}) "
            "or set on_drift=warn to run anyway"
        )
    logger.warning("%s (on_drift=warn: running anyway)", line)

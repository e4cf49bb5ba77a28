"""What the model reads: a system prompt on the action format, then one user turn per
observation carrying the observation and the live action schema."""

from __future__ import annotations

import json
from typing import Any

from openenvgen_runtime.actions import ActionSpace

SYSTEM_PROMPT = (
    "You are acting in an environment, one action per turn. Each user message holds the "
    "current observation and the schema of a valid action. Reply with exactly one action "
    "as a JSON object matching that schema and nothing else{single}."
)
MCP_SYSTEM_PROMPT = (
    "You are acting in an environment by calling its tools, one call per turn. Each user "
    "message holds the current observation and the tools with their argument schemas. "
    'Reply with exactly one JSON object, {"tool": NAME, "arguments": {...}}, and nothing else.'
)


def system_prompt(space: ActionSpace, hint: str = "") -> str:
    if space.is_mcp:
        text = MCP_SYSTEM_PROMPT
    else:
        required = space.action_schema.get("required") or []
        single = f" (or just the value of `{required[0]}`)" if len(required) == 1 else ""
        text = SYSTEM_PROMPT.format(single=single)
    return f"{text}\n\n{hint}".strip() if hint else text


def _observation(observation: dict[str, Any]) -> dict[str, Any]:
    # done/reward are reported beside the observation; repeating them only adds noise.
    return {k: v for k, v in observation.items() if k not in ("done", "reward")}


def turn(observation: dict[str, Any], space: ActionSpace, reward: float | None = None) -> str:
    parts = [f"Observation:\n{json.dumps(_observation(observation), ensure_ascii=False)}"]
    if reward is not None:
        parts.append(f"Reward for your last action: {reward:g}")
    label = "Tools" if space.is_mcp else "Action schema"
    parts.append(f"{label}:\n{space.prompt_schema_json}")
    return "\n\n".join(parts)


def invalid(reason: str, remaining: int) -> str:
    return (
        f"That reply is not a valid action: {reason}\n"
        f"Reply again with one valid action ({remaining} retr{'y' if remaining == 1 else 'ies'} left)."
    )


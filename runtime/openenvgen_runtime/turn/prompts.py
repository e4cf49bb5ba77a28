"""What the model reads: a system prompt on the action format, then one user turn per
observation carrying the observation and the live action schema."""

from __future__ import annotations

from openenvgen_runtime.turn.actions import ACTION_TOOL, ActionSpace

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

UNION_SYSTEM_PROMPT = (
    "You are acting in an environment, one action per turn. Each user message holds the "
    "current observation and the schema of a valid action, which is one of several kinds "
    "({names}). Reply with exactly one action as a JSON object matching one of them and "
    "nothing else."
)

TOOLS_SYSTEM_PROMPT = (
    "You are acting in an environment, one action per turn. Each user or tool message "
    "holds the current observation. Take each action by calling {which}: exactly one "
    "call per turn."
)


def system_prompt(space: ActionSpace, hint: str = "", *, tools: bool = False) -> str:
    if tools:
        text = TOOLS_SYSTEM_PROMPT.format(
            which="one of the tools" if space.several_tools else f"the `{ACTION_TOOL}` tool"
        )
    elif space.is_mcp:
        text = MCP_SYSTEM_PROMPT
    elif space.union is not None:
        text = UNION_SYSTEM_PROMPT.format(names=", ".join(m.name for m in space.union.members))
    else:
        required = space.action_schema.get("required") or []
        single = f" (or just the value of `{required[0]}`)" if len(required) == 1 else ""
        text = SYSTEM_PROMPT.format(single=single)
    return f"{text}\n\n{hint}".strip() if hint else text


def turn(observation_text: str, space: ActionSpace, reward: float | None = None, *, schema: bool = True) -> str:
    """One observation as the model reads it (its text rendered by `observations` or the
    package's renderer); `schema=False` when the action is offered as tools (their
    parameters already carry it)."""
    # One f-string, not a list joined nor the text grown part by part: this runs every step.
    reward_text = "" if reward is None else f"\n\nReward for your last action: {reward:g}"
    if not schema:
        return f"Observation:\n{observation_text}{reward_text}"
    label = "Tools" if space.is_mcp else "Action schema"
    return f"Observation:\n{observation_text}{reward_text}\n\n{label}:\n{space.prompt_schema_json}"


def invalid(reason: str, remaining: int) -> str:
    return (
        f"That reply is not a valid action: {reason}\n"
        f"Reply again with one valid action ({remaining} retr{'y' if remaining == 1 else 'ies'} left)."
    )

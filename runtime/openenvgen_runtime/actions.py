"""From the model's reply to a validated OpenEnv action, or an error the model can read."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)


ACTION_TOOL = "act"
"""The one function tool a typed-action env offers when actions are tool calls."""


class InvalidAction(ValueError):
    """The reply is not a valid action; the message is written for the model."""


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call as the model made it: `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class ActionSpace:
    """What a reply is validated against: a typed action, or MCP tools with typed arguments."""

    action_model: type[BaseModel]
    action_schema: dict[str, Any]
    tool_arguments: dict[str, type[BaseModel]] | None = None
    tools: list[dict[str, Any]] | None = None

    @property
    def is_mcp(self) -> bool:
        return self.tool_arguments is not None

    @functools.cached_property
    def _raw_string_field(self) -> str | None:
        """The one required field, when it is a string (then a bare reply is its value)."""
        if self.is_mcp:
            return None
        required = self.action_schema.get("required") or []
        props = self.action_schema.get("properties") or {}
        if len(required) == 1 and (props.get(required[0]) or {}).get("type") == "string":
            return required[0]
        return None

    @functools.cached_property
    def prompt_schema_json(self) -> str:
        """`prompt_schema()` as sent each turn; the same every step, so built once."""
        return json.dumps(self.prompt_schema(), ensure_ascii=False)

    def prompt_schema(self) -> Any:
        """What the model is shown: the action schema without the base `metadata` field,
        or the tools with their argument schemas."""
        if self.is_mcp:
            return [
                {"name": t.get("name"), "description": t.get("description", ""), "arguments": t.get("input_schema", t.get("inputSchema", {}))}
                for t in self.tools or []
            ]
        schema = dict(self.action_schema)
        props = {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}
        return {**schema, "properties": props}

    @functools.cached_property
    def function_tools(self) -> list[dict[str, Any]]:
        """The action as OpenAI function tools, parameters from the generated models (their
        schemas equal the server's): one `act` tool for a typed env, one per MCP tool."""
        if self.is_mcp:
            assert self.tool_arguments is not None
            described = {t.get("name"): t.get("description") or "" for t in self.tools or []}
            return [
                _function(name, described.get(name) or (model.__doc__ or "").strip(), _parameters(model))
                for name, model in sorted(self.tool_arguments.items())
            ]
        return [_function(ACTION_TOOL, "Take one action in the environment.", _parameters(self.action_model))]

    def parse_tool_calls(self, calls: list[ToolCallRequest]) -> dict[str, Any]:
        """The action one turn's tool calls stand for; exactly one call per turn."""
        if len(calls) != 1:
            raise InvalidAction(f"call exactly one tool per turn, not {len(calls)}; none of them was run")
        (call,) = calls
        names = sorted(self.tool_arguments) if self.is_mcp and self.tool_arguments is not None else [ACTION_TOOL]
        if call.name not in names:
            raise InvalidAction(f"unknown tool {call.name!r}; call one of: {', '.join(names)}")
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as e:
            raise InvalidAction(f"the arguments of {call.name!r} are not valid JSON ({e}); send a JSON object") from None
        if not isinstance(arguments, dict):
            raise InvalidAction(f"the arguments of {call.name!r} must be a JSON object, not {type(arguments).__name__}")
        if self.is_mcp:
            return self._tool_call({"tool": call.name, "arguments": arguments})
        return self._validated(arguments)

    def parse(self, reply: str) -> dict[str, Any]:
        """The action to send: validated by the typed model, dumped as the server expects."""
        if self._raw_string_field is not None:
            text = _unfence(reply.strip())
            # One required string field (Wordle's message): only an object or a JSON string
            # is worth parsing; anything else is the field's value as it stands.
            value: Any = _decode(reply) if text[:1] in ("{", '"') else {self._raw_string_field: text}
        else:
            value = _decode(reply)
        if self.is_mcp:
            return self._tool_call(value)
        if not isinstance(value, dict):
            value = self._single_field(value, reply)
        return self._validated(value)

    def _validated(self, value: dict[str, Any]) -> dict[str, Any]:
        try:
            model = self.action_model.model_validate(value)
        except ValidationError as e:
            raise InvalidAction(_describe(e)) from None
        # By alias: a field the server calls `class` is `class_` on the model.
        return model.model_dump(mode="json", exclude_unset=True, by_alias=True)

    def _single_field(self, value: Any, reply: str) -> dict[str, Any]:
        required = self.action_schema.get("required") or []
        if len(required) != 1:
            raise InvalidAction("reply with one JSON object matching the action schema")
        field = required[0]
        ftype = ((self.action_schema.get("properties") or {}).get(field) or {}).get("type")
        # "[crane]" decodes to a list and "42" to an int: a string field takes the raw text.
        raw = value if ftype != "string" or isinstance(value, str) else reply.strip()
        return {field: raw}

    def _tool_call(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise InvalidAction('reply with one JSON object: {"tool": NAME, "arguments": {...}}')
        name = value.get("tool", value.get("tool_name"))
        arguments = value.get("arguments", {})
        extra = set(value) - {"tool", "tool_name", "arguments", "type", "metadata"}
        if extra or not isinstance(name, str) or not isinstance(arguments, dict):
            raise InvalidAction('reply with one JSON object: {"tool": NAME, "arguments": {...}}')
        assert self.tool_arguments is not None
        model = self.tool_arguments.get(name)
        if model is None:
            raise InvalidAction(f"unknown tool {name!r}; tools: {', '.join(sorted(self.tool_arguments))}")
        try:
            args = model.model_validate(arguments).model_dump(mode="json", exclude_unset=True, by_alias=True)
        except ValidationError as e:
            raise InvalidAction(f"arguments for {name!r}: {_describe(e)}") from None
        return {"type": "call_tool", "tool_name": name, "arguments": args}


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _parameters(model: type[BaseModel]) -> dict[str, Any]:
    # `metadata` is the base Action's bookkeeping field, never the model's to fill.
    schema = model.model_json_schema()
    properties = {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}
    return {**schema, "properties": properties}


def _unfence(text: str) -> str:
    if "```" in text:
        fenced = _FENCE.search(text)
        if fenced:
            return fenced.group(1).strip()
    return text


def _decode(reply: str) -> Any:
    text = _unfence(reply.strip())
    # Only JSON-looking text is worth a parse attempt (a failed json.loads is the costly case).
    if not text or text[0] not in '{["-0123456789tfn':
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _describe(error: ValidationError) -> str:
    parts = []
    for err in error.errors(include_url=False)[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "action"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)

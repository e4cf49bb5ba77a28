"""From the model's reply to a validated OpenEnv action, or an error the model can read.

A union action (the generated model a `RootModel` over a union of object models, from a
`/schema` action that is a `oneOf`/`anyOf`) validates as the union does; a reply that
fits no member is described against the member it came closest to: the one its
discriminator value selects, else the one with the fewest validation errors. As tools,
each member is one function tool, named by its discriminator value (else its class name),
the discriminator itself implied by the tool.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, RootModel, ValidationError

from openenvgen_runtime.turn.passthrough import takes_any_string
from openenvgen_runtime.turn.unions import UnionAction, UnionMember, union_of
from openenvgen_schemas.interface import NonStandardJSON, strict_json
from openenvgen_schemas.normalise import union_branches

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")

MAX_REPLY_CHARS = 256 * 1024
"""A reply (or one tool call's arguments) longer than this is refused unparsed: no action is
that long, and parsing and validating anything shorter takes milliseconds."""
SHOWN_CHARS = 80
"""How much of a value the model sent is quoted back in an error."""


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
    tools_per_episode: bool = False
    """MCP tools that follow the task (an MCP union whose server lists none without a
    session): each episode lists them after its reset; this space holds those known ahead."""

    @property
    def is_mcp(self) -> bool:
        return self.tool_arguments is not None

    @functools.cached_property
    def union(self) -> UnionAction | None:
        """The members, when the action is a union of models."""
        return None if self.is_mcp else union_of(self.action_model)

    @property
    def several_tools(self) -> bool:
        """Whether actions as tools are several tools (MCP tools, union members), not one `act`."""
        return self.is_mcp or self.union is not None

    @functools.cached_property
    def _raw_string_field(self) -> str | None:
        """The one required field, when it is a string (then a bare reply is its value)."""
        if self.is_mcp:
            return None
        required: list[str] = self.action_schema.get("required") or []
        props = self.action_schema.get("properties") or {}
        if len(required) == 1 and (props.get(required[0]) or {}).get("type") == "string":
            return required[0]
        return None

    @functools.cached_property
    def _bare_reply_is_action(self) -> bool:
        """Whether a bare reply, as that field's value, is the action validated and dumped
        (the model takes any string there as it is), so validation is skipped."""
        field = self._raw_string_field
        return field is not None and self.union is None and takes_any_string(self.action_model, field)

    @functools.cached_property
    def prompt_schema_json(self) -> str:
        """`prompt_schema()` as sent each turn; the same every step, so built once."""
        return json.dumps(self.prompt_schema(), ensure_ascii=False)

    def prompt_schema(self) -> Any:
        """What the model is shown: the action schema without the base `metadata` field,
        or the tools with their argument schemas."""
        if self.is_mcp:
            return [
                {
                    "name": t.get("name"),
                    "description": t.get("description", ""),
                    "arguments": t.get("input_schema", t.get("inputSchema", {})),
                }
                for t in self.tools or []
            ]
        if union_branches(self.action_schema) is not None:
            return _union_without_metadata(self.action_schema)
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
        if self.union is not None:
            return [
                _function(
                    m.name,
                    inspect.cleandoc(m.model.__doc__ or "") or f"Take a {m.name} action.",
                    _parameters(m.model, implied=self.union.discriminator),
                )
                for m in self.union.members
            ]
        return [_function(ACTION_TOOL, "Take one action in the environment.", _parameters(self.action_model))]

    def parse_tool_calls(self, calls: list[ToolCallRequest]) -> dict[str, Any]:
        """The action one turn's tool calls stand for; exactly one call per turn."""
        if len(calls) != 1:
            raise InvalidAction(f"call exactly one tool per turn, not {len(calls)}; none of them was run")
        (call,) = calls
        _check_size(call.arguments or "", f"the arguments of tool {_shown(call.name)}")
        if self.is_mcp and self.tool_arguments is not None:
            names = sorted(self.tool_arguments)
        elif self.union is not None:
            names = [m.name for m in self.union.members]
        else:
            names = [ACTION_TOOL]
        if call.name not in names:
            raise InvalidAction(f"unknown tool {_shown(call.name)}; call one of: {', '.join(names)}")
        try:
            arguments = strict_json(call.arguments or "{}")
        except NonStandardJSON as e:
            raise InvalidAction(f"the arguments of {call.name!r} hold {e}, which JSON has no number for") from None
        except RecursionError:
            raise InvalidAction(
                f"the arguments of {call.name!r} are nested too deeply; send a flat JSON object"
            ) from None
        except ValueError as e:
            raise InvalidAction(
                f"the arguments of {call.name!r} are not valid JSON ({e}); send a JSON object"
            ) from None
        if not isinstance(arguments, dict):
            raise InvalidAction(f"the arguments of {call.name!r} must be a JSON object, not {type(arguments).__name__}")
        if self.is_mcp:
            return self._tool_call({"tool": call.name, "arguments": arguments})
        if self.union is not None:
            member = self.union.named(call.name)
            assert member is not None
            if self.union.discriminator is not None and member.tag is not None:
                # The tool names the member: its discriminator value goes with it.
                arguments = {**arguments, self.union.discriminator: member.tag}
            return self._member_validated(member, arguments)
        if self._bare_reply_is_action and len(arguments) == 1 and type(arguments.get(self._raw_string_field)) is str:
            return arguments  # as validating and dumping it gives (`_bare_reply_is_action`)
        return self._validated(arguments)

    def parse(self, reply: str) -> dict[str, Any]:
        """The action to send: validated by the typed model, dumped as the server expects.

        Any reply, however hostile, gives an action or an InvalidAction with a one-line reason."""
        _check_size(reply, "the reply")
        if self._raw_string_field is not None:
            text = _unfence(reply.strip())
            # One required string field (Wordle's message): only an object or a JSON string
            # is worth parsing; anything else is the field's value as it stands.
            if text[:1] in ("{", '"'):
                value: Any = _decode(reply)
            elif self._bare_reply_is_action:
                return {self._raw_string_field: text}
            else:
                value = {self._raw_string_field: text}
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
            if self.union is not None:
                raise InvalidAction(self._closest_member(value)) from None
            raise InvalidAction(_describe(e)) from None
        # By alias: a field the server calls `class` is `class_` on the model.
        dumped = model.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return self._tagged(model, dumped)

    def _member_validated(self, member: UnionMember, value: dict[str, Any]) -> dict[str, Any]:
        try:
            model = member.model.model_validate(value)
        except ValidationError as e:
            raise InvalidAction(f"not a valid {member.name} action: {_describe(e)}") from None
        return self._tagged(model, model.model_dump(mode="json", exclude_unset=True, by_alias=True))

    def _tagged(self, model: BaseModel, dumped: dict[str, Any]) -> dict[str, Any]:
        """A union member's dump always carries its discriminator value, defaulted or not:
        the server's union picks the member by it."""
        union = self.union
        if union is None or union.discriminator is None or not isinstance(dumped, dict):
            return dumped
        inner = model.root if isinstance(model, RootModel) else model
        member = next((m for m in union.members if type(inner) is m.model), None)
        if member is not None and member.tag is not None:
            dumped.setdefault(union.discriminator, member.tag)
        return dumped

    def _closest_member(self, value: Any) -> str:
        """Why `value` is no member of the union, told against the member it came closest to."""
        union = self.union
        assert union is not None
        names = ", ".join(m.name for m in union.members)
        if not isinstance(value, dict):
            return f"reply with one JSON object, one of these actions: {names}"
        disc = union.discriminator
        if disc is not None and disc in value:
            chosen = next((m for m in union.members if m.tag == value[disc]), None)
            if chosen is not None:
                errors = _errors(chosen.model, value)
                shown = _bounded(json.dumps(value[disc]))
                return f"closest to {chosen.name} ({disc} = {shown} selects it): {_describe_errors(errors)}"
        scored = [(len(_errors(m.model, value)), i, m) for i, m in enumerate(union.members)]
        _, _, best = min(scored, key=lambda t: (t[0], t[1]))
        errors = _errors(best.model, value)
        if not errors and disc is not None and best.tag is not None:
            return (
                f"not one of the actions {names}; closest to {best.name}: "
                f"add {json.dumps(disc)}: {json.dumps(best.tag)}"
            )
        if disc is not None and best.tag is not None and value.get(disc) != best.tag:
            shown = _bounded(json.dumps(value[disc])) if disc in value else "missing"
            why = f"{disc} is {shown}, not one of {', '.join(json.dumps(m.tag) for m in union.members)}"
        else:
            why = f"fewest errors of {names}"
        return f"not one of the actions {names}; closest to {best.name} ({why}): {_describe_errors(errors)}"

    def _single_field(self, value: Any, reply: str) -> dict[str, Any]:
        required = self.action_schema.get("required") or []
        if len(required) != 1:
            raise InvalidAction("reply with one JSON object matching the action schema")
        field = required[0]
        ftype = ((self.action_schema.get("properties") or {}).get(field) or {}).get("type")
        # "[crane]" decodes to a list and "42" to an int: a string field takes the raw text.
        raw = value if ftype != "string" or isinstance(value, str) else reply.strip()
        return {field: raw}

    def wire_action(self, action: BaseModel) -> dict[str, Any]:
        """An already validated action as the server takes it (a union member with its tag)."""
        return self._tagged(action, action.model_dump(mode="json", exclude_unset=True, by_alias=True))

    def tool_action(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """MCP envs: the call of tool `name`, its arguments checked against the tool's
        argument model (`InvalidAction` if they do not fit)."""
        return self._tool_call({"tool": name, "arguments": arguments})

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
            raise InvalidAction(f"unknown tool {_shown(name)}; tools: {', '.join(sorted(self.tool_arguments))}")
        try:
            args = model.model_validate(arguments).model_dump(mode="json", exclude_unset=True, by_alias=True)
        except ValidationError as e:
            raise InvalidAction(f"arguments for {name!r}: {_describe(e)}") from None
        return {"type": "call_tool", "tool_name": name, "arguments": args}


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _parameters(model: type[BaseModel], implied: str | None = None) -> dict[str, Any]:
    # `metadata` is the base Action's bookkeeping field, never the model's to fill; a union
    # member's discriminator is implied by the tool's name.
    schema = model.model_json_schema()
    dropped = {"metadata", implied}
    properties = {k: v for k, v in (schema.get("properties") or {}).items() if k not in dropped}
    out = {**schema, "properties": properties}
    if implied is not None and "required" in schema:
        out["required"] = [r for r in schema["required"] if r != implied]
    return out


def _union_without_metadata(schema: dict[str, Any]) -> dict[str, Any]:
    """A union action schema with the base `metadata` field left out of every member."""
    out = copy.deepcopy(schema)
    defs = out.get("$defs") or {}
    for branch in union_branches(out) or []:
        target = branch
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
            target = defs[ref.rsplit("/", 1)[-1]]
        if isinstance(target, dict) and isinstance(target.get("properties"), dict):
            target["properties"].pop("metadata", None)
    return out


def _errors(model: type[BaseModel], value: Any) -> list[Any]:
    try:
        model.model_validate(value)
    except ValidationError as e:
        return e.errors(include_url=False)
    return []


def _unfence(text: str) -> str:
    if "```" in text:
        fenced = _FENCE.search(text)
        if fenced:
            return fenced.group(1).strip()
    return text


def _check_size(text: str, what: str) -> None:
    """Refuse a reply too long to be an action, and text that is not valid Unicode."""
    if len(text) > MAX_REPLY_CHARS:
        raise InvalidAction(f"{what} is {len(text):,} characters; an action is at most {MAX_REPLY_CHARS:,}")
    lone = None if text.isascii() else _LONE_SURROGATE.search(text)
    if lone is not None:
        raise InvalidAction(f"{what} holds a lone surrogate (U+{ord(lone.group()):04X}), which is not valid Unicode")


def _bounded(text: str) -> str:
    """`text` cut to SHOWN_CHARS characters, for an error message."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _shown(value: str) -> str:
    """`value` quoted for an error message: one line, at most SHOWN_CHARS characters."""
    return repr(_bounded(value))


def _decode(reply: str) -> Any:
    text = _unfence(reply.strip())
    # Only JSON-looking text is worth a parse attempt (a failed json.loads is the costly case).
    if not text or text[0] not in '{["-0123456789tfnNI':
        return text
    try:
        return strict_json(text)
    except NonStandardJSON as e:
        raise InvalidAction(f"the reply holds {e}, which JSON has no number for; send finite numbers") from None
    except RecursionError:
        raise InvalidAction("the reply is nested too deeply to be an action; send one flat JSON object") from None
    except ValueError:
        return text


def _describe(error: ValidationError) -> str:
    return _describe_errors(error.errors(include_url=False))


def _describe_errors(errors: list[Any]) -> str:
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "action"
        # A location names keys the model sent: bounded and on one line like every message.
        parts.append(f"{_bounded(loc)}: {err['msg']}")
    return " ".join("; ".join(parts).split())

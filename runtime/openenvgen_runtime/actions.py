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
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, RootModel, ValidationError

from openenvgen_schemas.normalise import discriminator_property, tag_value, union_branches

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


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class UnionMember:
    """One model of a union action, as the model addresses it."""

    name: str
    """Its tool name: the discriminator value, else its class name in snake_case."""
    model: type[BaseModel]
    tag: Any = None
    """Its discriminator value (None when the union has no discriminator)."""


@dataclass(frozen=True)
class UnionAction:
    discriminator: str | None
    members: tuple[UnionMember, ...]

    def named(self, name: str) -> UnionMember | None:
        return next((m for m in self.members if m.name == name), None)


def union_of(model: type[BaseModel]) -> UnionAction | None:
    """The members of a generated union action model (a RootModel over a union of models)."""
    if not (isinstance(model, type) and issubclass(model, RootModel)):
        return None
    field = model.model_fields.get("root")
    if field is None:
        return None
    args = _union_args(field.annotation)
    if not args or not all(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
        return None
    schemas = [a.model_json_schema() for a in args]
    named = field.discriminator if isinstance(field.discriminator, str) else None
    discriminator = named or discriminator_property({}, schemas)
    members: list[UnionMember] = []
    taken: set[str] = set()
    for member, schema in zip(args, schemas):
        tag = tag_value((schema.get("properties") or {}).get(discriminator)) if discriminator else None
        name = tag if isinstance(tag, str) and _TOOL_NAME.match(tag) else _snake(member.__name__)
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        members.append(UnionMember(name=name, model=member, tag=tag))
    return UnionAction(discriminator, tuple(members))


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return ()


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()[:64]


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
                _function(m.name, inspect.cleandoc(m.model.__doc__ or "") or f"Take a {m.name} action.",
                          _parameters(m.model, implied=self.union.discriminator))
                for m in self.union.members
            ]
        return [_function(ACTION_TOOL, "Take one action in the environment.", _parameters(self.action_model))]

    def parse_tool_calls(self, calls: list[ToolCallRequest]) -> dict[str, Any]:
        """The action one turn's tool calls stand for; exactly one call per turn."""
        if len(calls) != 1:
            raise InvalidAction(f"call exactly one tool per turn, not {len(calls)}; none of them was run")
        (call,) = calls
        if self.is_mcp and self.tool_arguments is not None:
            names = sorted(self.tool_arguments)
        elif self.union is not None:
            names = [m.name for m in self.union.members]
        else:
            names = [ACTION_TOOL]
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
        if self.union is not None:
            member = self.union.named(call.name)
            assert member is not None
            if self.union.discriminator is not None and member.tag is not None:
                # The tool names the member: its discriminator value goes with it.
                arguments = {**arguments, self.union.discriminator: member.tag}
            return self._member_validated(member, arguments)
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

    def _tagged(self, model: BaseModel, dumped: Any) -> Any:
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
                return f"closest to {chosen.name} ({disc} = {json.dumps(value[disc])} selects it): {_describe_errors(errors)}"
        scored = [(len(_errors(m.model, value)), i, m) for i, m in enumerate(union.members)]
        _, _, best = min(scored, key=lambda t: (t[0], t[1]))
        errors = _errors(best.model, value)
        if not errors and disc is not None and best.tag is not None:
            return f"not one of the actions {names}; closest to {best.name}: add {json.dumps(disc)}: {json.dumps(best.tag)}"
        if disc is not None and best.tag is not None and value.get(disc) != best.tag:
            shown = json.dumps(value[disc]) if disc in value else "missing"
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
    return _describe_errors(error.errors(include_url=False))


def _describe_errors(errors: list[Any]) -> str:
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "action"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)

"""MCP tools that are not known ahead: typed argument models built from their input schemas,
and the tool list of an episode's session.

A generated MCP package carries an argument model per tool it was generated with
(`TOOL_ARGUMENTS`); a tool the runtime only learns of when it runs (a union env's tools,
which follow its reset, or a tool added since generation) gets its model here, built from
the input schema the server lists: each property a field of the JSON type it declares
(strict, as JSON Schema is: `"5"` is no integer), `enum`/`const` as literals, `anyOf`/`oneOf`
and type lists as unions, nested objects as models, local `$ref`s followed, and the numeric,
length and pattern bounds kept. What it cannot express is left unchecked (`Any`), never
refused; a schema that cannot be built at all leaves the arguments a JSON object. The
model's JSON schema is the input schema as the server gave it, so the model is shown
exactly what the server declares. Models are cached by tool name and schema.

An MCP union (agent_world_model's `ListToolsAction | CallToolAction`) lists its tools on a
session, after its reset: `session_tools` sends the `list_tools` action and reads the tool
list back.
"""

from __future__ import annotations

import copy
import functools
import json
import keyword
import math
import re
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, Strict, create_model

LIST_TOOLS = {"type": "list_tools"}
"""The action that lists an MCP env's tools (openenv's `ListToolsAction`)."""
_MAX_DEPTH = 24
"""Deeper schemas are not typed further (their values stay `Any`)."""
_SHOWN = 200
"""Characters of a server's error quoted in a `ToolListError`."""


class ToolListError(RuntimeError):
    """The env's session answered `list_tools` with no tool list; the message is one line."""


class ListedToolArguments(BaseModel):
    """The base of argument models built at run time; their JSON schema is the tool's
    input schema as the server listed it."""

    # Python's regex engine: JSON Schema patterns (ECMA 262) use lookarounds, which pydantic's
    # default engine has not.
    model_config = ConfigDict(extra="allow", regex_engine="python-re")
    input_schema: ClassVar[dict[str, Any] | None] = None
    """The tool's input schema (None on the nested models built for its properties)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if cls.input_schema is not None:
            return copy.deepcopy(cls.input_schema)
        return super().model_json_schema(*args, **kwargs)


class _ClosedArguments(ListedToolArguments):
    """For an object schema with `additionalProperties: false`."""

    model_config = ConfigDict(extra="forbid")


def argument_model(name: str, input_schema: Any, description: str = "") -> type[BaseModel]:
    """The typed argument model of tool `name` (cached by name, schema and description)."""
    schema = input_schema if isinstance(input_schema, dict) else {}
    return _cached_model(name, json.dumps(schema, sort_keys=True, default=str), description)


@functools.lru_cache(maxsize=1024)
def _cached_model(name: str, schema_json: str, description: str) -> type[BaseModel]:
    schema = json.loads(schema_json)
    class_name = _class_name(name)
    model: type[BaseModel]
    try:
        model = _Builder(schema, bounds=True).model(class_name, schema, 0)
    except Exception:
        try:
            # A bound pydantic cannot compile (a pattern in another regex dialect, say).
            model = _Builder(schema, bounds=False).model(class_name, schema, 0)
        except Exception:
            model = create_model(class_name, __base__=ListedToolArguments)
    model.__doc__ = description or f"The arguments of tool {name!r}."
    model.input_schema = schema
    return model


def _class_name(tool: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", tool) if w]
    stem = "".join(w[:1].upper() + w[1:] for w in words)
    if not stem or not stem[0].isalpha():
        stem = "T" + stem
    return f"{stem}Arguments"


class _Builder:
    """One input schema turned into pydantic types; `bounds` keeps its numeric, length and
    pattern constraints."""

    def __init__(self, root: dict[str, Any], *, bounds: bool) -> None:
        self.defs: dict[str, Any] = {}
        for key in ("$defs", "definitions"):
            if isinstance(root.get(key), dict):
                self.defs.update(root[key])
        self.bounds = bounds
        self.following: list[str] = []
        self.nested = 0

    def model(self, name: str, schema: dict[str, Any], depth: int) -> type[BaseModel]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
        fields: dict[str, Any] = {}
        taken: set[str] = set()
        for i, (prop, sub) in enumerate(properties.items()):
            field_name = prop if _usable(prop) and prop not in taken else _free(f"field_{i}", taken, properties)
            taken.add(field_name)
            annotation = self.type(sub, depth + 1)
            alias = None if field_name == prop else prop
            if prop in required:
                fields[field_name] = (annotation, Field(..., alias=alias))
            else:
                # Never sent unless the model sets it: the dump leaves unset fields out.
                fields[field_name] = (annotation, Field(None, alias=alias))
        closed = schema.get("additionalProperties") is False
        base = _ClosedArguments if closed else ListedToolArguments
        return create_model(name, __base__=base, __module__=__name__, **fields)

    def type(self, schema: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH or not isinstance(schema, dict):
            return Any
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None or ref in self.following:
                return Any  # not a local ref, or a recursive one
            self.following.append(ref)
            try:
                return self.type(target, depth + 1)
            finally:
                self.following.pop()
        if "const" in schema:
            return _literal([schema["const"]])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _literal(schema["enum"])
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return _union([self.type(b, depth + 1) for b in branches])
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.type(all_of[0], depth + 1)
        if isinstance(all_of, list) and all_of:
            return Any
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.type({**schema, "type": k}, depth + 1) for k in kind if isinstance(k, str)])
        typed = self._typed(kind, schema, depth)
        if schema.get("nullable") is True and typed is not Any:
            return typed | None
        return typed

    def _typed(self, kind: Any, schema: dict[str, Any], depth: int) -> Any:
        if kind == "string":
            return self._bounded(str, schema, _TEXT)
        if kind == "integer":
            return self._bounded(int, schema, _NUMERIC)
        if kind == "number":
            # A whole number goes out as the integer it was sent as (a float field holds 3 as 3.0).
            return Annotated[self._bounded(float, schema, _NUMERIC), PlainSerializer(_whole, when_used="json")]
        if kind == "boolean":
            return Annotated[bool, Strict()]
        if kind == "null":
            return None
        if kind == "array":
            items = schema.get("items")
            item = self.type(items, depth + 1) if isinstance(items, dict) else Any
            return self._bounded(list[item], schema, _ITEMS, strict=False)  # type: ignore[valid-type]
        if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
            if isinstance(schema.get("properties"), dict) and schema["properties"]:
                self.nested += 1
                return self.model(f"Nested{self.nested}", schema, depth + 1)
            extra = schema.get("additionalProperties")
            value = self.type(extra, depth + 1) if isinstance(extra, dict) else Any
            return dict[str, value]  # type: ignore[valid-type]
        return Any

    def _bounded(self, base: Any, schema: dict[str, Any], keys: dict[str, str], *, strict: bool = True) -> Any:
        """`base`, strict, with the schema's bounds that apply to it (those it declares)."""
        bounds: dict[str, Any] = {}
        if self.bounds:
            for option, key in keys.items():
                value = schema.get(key)
                if option == "pattern":
                    if isinstance(value, str) and _compiles(value):
                        bounds[option] = value
                elif _usable_bound(option, value):
                    bounds[option] = value
        extras: list[Any] = [Strict()] if strict else []
        if bounds:
            extras.append(Field(**bounds))
        return Annotated[base, *extras] if extras else base

    def _resolve(self, ref: str) -> Any:
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                return self.defs.get(ref[len(prefix) :])
        return None


_TEXT = {"min_length": "minLength", "max_length": "maxLength", "pattern": "pattern"}
_ITEMS = {"min_length": "minItems", "max_length": "maxItems"}
_NUMERIC = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
    "multiple_of": "multipleOf",
}


def _usable_bound(option: str, value: Any) -> bool:
    """A bound pydantic can apply: a finite number; a length at least 0; a step above 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    if option in ("min_length", "max_length"):
        return isinstance(value, int) and value >= 0
    return value > 0 if option == "multiple_of" else True


def _whole(value: float) -> float | int:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, RecursionError):
        return False
    return True


def _literal(values: list[Any]) -> Any:
    if all(v is None or isinstance(v, str | int | float | bool) for v in values):
        return Literal[tuple(values)]
    return Any


def _union(types: list[Any]) -> Any:
    if not types or any(t is Any for t in types):
        return Any
    unique: list[Any] = []
    for t in types:
        if not any(t is u or t == u for u in unique):
            unique.append(t)
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007 - built at run time


def _usable(prop: str) -> bool:
    """Whether a property name can be the field's own name (else it is the field's alias)."""
    return (
        prop.isidentifier()
        and not keyword.iskeyword(prop)
        and not prop.startswith("_")
        and not prop.startswith("model_")
        and not hasattr(ListedToolArguments, prop)
    )


def _free(stem: str, taken: set[str], properties: dict[str, Any]) -> str:
    name = stem
    while name in taken or name in properties:
        name += "_"
    return name


async def session_tools(client: Any) -> list[dict[str, Any]]:
    """The tools an MCP env lists on this session now (`name`, `description`,
    `input_schema`), asked with the `list_tools` action; a `ToolListError` when the answer
    holds no tool list. The listing is no step of the episode: its reward is not counted."""
    result = await client.step(dict(LIST_TOOLS))
    observation = result.observation if isinstance(result.observation, dict) else {}
    tools = observation.get("tools")
    error = observation.get("error")
    shown = " ".join(str(error).split())[:_SHOWN] if error else ""
    if not isinstance(tools, list) or (shown and not tools):
        raise ToolListError(f"list_tools answered no tool list{f': {shown}' if shown else ''}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or name in seen:
            continue
        seen.add(name)
        schema = tool.get("input_schema", tool.get("inputSchema"))
        out.append(
            {
                "name": name,
                "description": tool.get("description") or "",
                "input_schema": schema if isinstance(schema, dict) else {"type": "object"},
            }
        )
    return out

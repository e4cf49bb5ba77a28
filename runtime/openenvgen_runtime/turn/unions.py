"""A union action's members, as the model addresses them (one tool each, named by its tag).

A union action is a generated `RootModel` over a union of object models (from a `/schema`
action that is a `oneOf`/`anyOf`); each member is named by its discriminator value, else
by its class name in snake_case. A union with openenv's `CallToolAction` among its members
(agent_world_model's `ListToolsAction | CallToolAction`) is an MCP env's action
(`mcp_union_of`).
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, RootModel

from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_schemas.normalise import discriminator_property, tag_value

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
    """A union action's discriminator (None when it has none) and members."""

    discriminator: str | None
    members: tuple[UnionMember, ...]

    def named(self, name: str) -> UnionMember | None:
        """The member a tool name stands for."""
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
    for member, schema in zip(args, schemas, strict=True):
        tag = tag_value((schema.get("properties") or {}).get(discriminator)) if discriminator else None
        name = tag if isinstance(tag, str) and _TOOL_NAME.match(tag) else _snake(member.__name__)
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        members.append(UnionMember(name=name, model=member, tag=tag))
    return UnionAction(discriminator, tuple(members))


@dataclass(frozen=True)
class McpUnion:
    """A union action with an MCP member: what the runtime needs of it."""

    lists_tools: bool
    """Whether it has openenv's `ListToolsAction` (`type` const `list_tools`), so a session
    can be asked for its tools."""


def mcp_union_of(model: type[BaseModel]) -> McpUnion | None:
    """The MCP side of a union action model, when one of its members is openenv's
    `CallToolAction` (told by its `type` const `call_tool`, like a plain MCP action)."""
    union = union_of(model)
    if union is None:
        return None
    schemas = [m.model.model_json_schema() for m in union.members]
    if not any(is_mcp_action(s) for s in schemas):
        return None
    lists = any(((s.get("properties") or {}).get("type") or {}).get("const") == "list_tools" for s in schemas)
    return McpUnion(lists_tools=lists)


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return ()


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()[:64]

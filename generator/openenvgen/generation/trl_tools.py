"""The typed tool methods of a package's TRL class (`<module>/trl.py`), from the frozen spec. Pure.

TRL shows the model each public method of the class as a tool, its JSON schema read from the
signature and the Google-style docstring (`transformers.utils.get_json_schema`). So each
method here is one way to act, typed as `get_json_schema` can express it:

- a plain action model: one method named after the env (`wordle`), its parameters the
  model's fields (the base `metadata` left out);
- a union action: one method per member, named by the member's key (its tag);
- an MCP env: one method per listed (and unlisted) tool, typed from its input schema; an
  MCP env whose tools are listed per episode only (none known ahead): one `call_tool`.

Types: string, integer, number, boolean and null as `str`, `int`, `float`, `bool`, `None`;
arrays as `list[...]`; objects as `dict[str, Any]` (their keys named in the description);
an `enum` or `const` as `Literal[...]`; `anyOf`/`oneOf`/type lists as unions. What a type
cannot say (bounds, lengths, patterns, formats, an object's keys) is said in the
parameter's description and enforced when the call is validated by the action model.
A required field has no default; an optional one has the schema's default, or `MISSING`
(nothing sent) when the schema gives none or a list or object. Descriptions are summaries:
docstring sections (`Attributes:`, `Args:`, examples) are left out, as `regen` reads them.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass
from typing import Any

from openenvgen.generation.codegen import Models
from openenvgen.spec import EnvSpec, ToolSpec
from openenvgen_schemas.docstrings import tool_summary, with_documented_args
from openenvgen_schemas.modeldiff import is_mcp_action
from openenvgen_schemas.normalise import collapse_whitespace, union_members

RESERVED = frozenset({"reset", "get_reward", "self"})
"""Names a tool method or parameter cannot take: TRL's own methods of the class, the receiver."""
ANY_TOOL = "call_tool"
"""The one method of an MCP env whose tools are known only per episode."""
_SECTION = re.compile(r"\b(Args|Arguments|Returns|Raises|Yields|Examples?):")
# ASCII only: `\w` also matches characters no Python identifier may hold (e.g. U+109C0).
_NOT_WORD = re.compile(r"[^0-9A-Za-z_]+")
_BOUNDS = (
    ("minimum", "at least {}"),
    ("exclusiveMinimum", "greater than {}"),
    ("maximum", "at most {}"),
    ("exclusiveMaximum", "less than {}"),
    ("multipleOf", "a multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matching the pattern {}"),
    ("format", "in the {} format"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("uniqueItems", "items all different"),
    ("minProperties", "at least {} keys"),
    ("maxProperties", "at most {} keys"),
)


@dataclass(frozen=True)
class Param:
    name: str
    """The Python parameter's name."""
    annotation: str
    default: str | None
    """A Python expression, or None for a required parameter."""
    description: str
    wire: str
    """The field's name in the action (the parameter's, unless that is no Python name)."""


@dataclass(frozen=True)
class Tool:
    method: str
    target: str
    """What `tool(...)` gets: the action model (or member) class, an MCP tool's name as a
    literal, or `ANY_TOOL`."""
    description: str
    params: tuple[Param, ...]

    @property
    def renamed(self) -> dict[str, str]:
        """Parameter → field, where the two differ."""
        return {p.name: p.wire for p in self.params if p.name != p.wire}


def trl_tools(spec: EnvSpec, models: Models) -> list[Tool]:
    """The methods of the package's TRL class, in the order it lists them."""
    taken = set(RESERVED)
    if spec.tools is not None:
        tools = [*spec.tools, *(t for t in spec.defaults.unlisted_tools if t.name not in {s.name for s in spec.tools})]
        return [_mcp_tool(t, taken) for t in tools]
    members = union_members(spec.action_schema)
    if members is not None and any(is_mcp_action(m.schema) for m in members):
        # An MCP union whose tools are listed per episode (agent_world_model): the
        # observations list them, and one method calls any of them by name.
        return [_any_tool()]
    if members is not None:
        out = []
        for cls, member in zip(models.member_classes, members, strict=True):
            description = tool_summary(member.schema.get("description") or "") or f"Take a {member.key} action."
            skip = {"metadata", member.tag_property}
            out.append(
                Tool(
                    _method(member.key, taken, "act"),
                    cls,
                    _text(description),
                    _params(member.schema, skip),
                )
            )
        return out
    description = tool_summary(spec.action_schema.get("description") or "") or "Take one action in the environment."
    if spec.defaults.action_hint:
        description = f"{description} {spec.defaults.action_hint}"
    method = _method(spec.name, taken, "act")
    return [Tool(method, models.action_class, _text(description), _params(spec.action_schema, {"metadata"}))]


def _mcp_tool(tool: ToolSpec, taken: set[str]) -> Tool:
    # FastMCP may send a tool's whole docstring: its summary is the description, its `Args:`
    # entries describe the arguments the schema leaves undescribed (as `regen` reads them).
    description = tool_summary(tool.description) or f"Call the {tool.name} tool."
    schema = with_documented_args(tool.input_schema, tool.description)
    return Tool(_method(tool.name, taken, "tool"), _py_str(tool.name), _text(description), _params(schema, set()))


def _any_tool() -> Tool:
    text = "Call one of the environment's tools (listed with each observation) by name."
    params = (
        Param("tool_name", "str", None, "The name of the tool to call.", "tool_name"),
        Param("arguments", "dict[str, Any]", "MISSING", "The tool's arguments, as its input schema asks.", "arguments"),
    )
    return Tool(ANY_TOOL, "ANY_TOOL", text, params)


def _method(name: str, taken: set[str], fallback: str) -> str:
    """A Python method name for `name`, unused in the class (not reset/get_reward, no keyword,
    not private)."""
    method = _NOT_WORD.sub("_", name).strip("_") or fallback
    if method[0].isdigit() or keyword.iskeyword(method) or method in RESERVED:
        method = f"{fallback}_{method}"
    base, n = method, 2
    while method in taken:
        method, n = f"{base}_{n}", n + 1
    taken.add(method)
    return method


def _params(schema: dict[str, Any], skip: set[str | None]) -> tuple[Param, ...]:
    defs = schema.get("$defs") or {}
    required = set(schema.get("required") or [])
    taken = set(RESERVED)
    params = []
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in skip}
    # Required parameters first: Python takes no required parameter after a defaulted one.
    for field in sorted(props, key=lambda f: f not in required):
        prop = _resolved(props[field], defs)
        annotation = _annotation(prop, defs)
        if field in required:
            default = None
        elif "default" in prop and not isinstance(prop["default"], list | dict):
            default = _py(prop["default"])
        else:
            # No default, or a mutable one: the parameter is not sent unless given, and the
            # model (or the server) applies the schema's default.
            default = "MISSING"
        name = _method(field, taken, "field")
        params.append(Param(name, annotation, default, _describe(field, prop, defs), field))
    return tuple(params)


def _resolved(schema: Any, defs: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """`schema` with a `$ref` (or an `allOf` of one) replaced by its definition, its own keys kept."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if ref is None and isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        ref = (schema["allOf"][0] or {}).get("$ref")
    if isinstance(ref, str) and depth < 8:
        target = defs.get(ref.rsplit("/", 1)[-1])
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        return {**_resolved(target, defs, depth + 1), **rest}
    return schema


_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _annotation(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> str:
    """The Python type hint for a property schema, as `get_json_schema` reads it."""
    schema = _resolved(schema, defs)
    if depth > 8:
        return "Any"
    values = schema["enum"] if isinstance(schema.get("enum"), list) else None
    if "const" in schema:
        values = [schema["const"]]
    if values:
        literal = [v for v in values if v is not None and isinstance(v, str | int | float | bool)]
        if len(literal) == len([v for v in values if v is not None]) and literal:
            hint = f"Literal[{', '.join(_py(v) for v in literal)}]"
            return f"{hint} | None" if None in values else hint
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return _union([_annotation(b, defs, depth + 1) for b in branches])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_annotation({**schema, "type": k}, defs, depth + 1) for k in kind])
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{_annotation(items, defs, depth + 1)}]" if isinstance(items, dict) and items else "list[Any]"
    if kind == "object" or "properties" in schema:
        return "dict[str, Any]"
    return "Any"


def _union(hints: list[str]) -> str:
    unique = list(dict.fromkeys(hints))
    if "Any" in unique:
        return "Any"
    # None last, as a reader expects `X | None`.
    ordered = [h for h in unique if h != "None"] + (["None"] if "None" in unique else [])
    return " | ".join(ordered)


def _describe(field: str, schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """One line: the field's description (or title), then what its type hint cannot say."""
    text = schema.get("description") or schema.get("title") or f"The {field} field."
    notes = _constraints(schema, defs)
    return _text(f"{text.rstrip('. ')}{'; ' if notes else ''}{'; '.join(notes)}.", one_line=True)


def _constraints(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> list[str]:
    if depth > 4:
        return []
    schema = _resolved(schema, defs)
    notes = [template.format(_shown(schema[key])) for key, template in _BOUNDS if key in schema]
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        required = set(schema.get("required") or [])
        keys = ", ".join(f"{k}{'' if k in required else ' (optional)'}" for k in props)
        notes.append(f"an object with the keys {keys}")
    items = schema.get("items")
    if isinstance(items, dict):
        notes += [f"each item {n}" for n in _constraints(items, defs, depth + 1)]
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        notes += _constraints(branch, defs, depth + 1)
    return notes


def _shown(value: Any) -> str:
    return "" if value is True else json.dumps(value) if isinstance(value, str) else str(value)


def _text(text: str, *, one_line: bool = False) -> str:
    """Server text as docstring text: no Google-style section headers, no `(choices: ...)`
    that `get_json_schema` would read as an enum, one line for a parameter."""
    text = text.replace("(choices:", "(choices -")
    text = _SECTION.sub(lambda m: f"{m.group(1)} -", text)
    return collapse_whitespace(text) if one_line else "\n".join(line.rstrip() for line in text.strip().splitlines())


def _py(value: Any) -> str:
    """A Python literal for JSON data (on one line: the module is formatted after)."""
    if isinstance(value, str):
        return _py_str(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py_str(str(k))}: {_py(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _py_str(text: str) -> str:
    return json.dumps(text)

"""JSON-schema normalisation, for comparing a generated model's schema with the server's.

Two schemas are "equal after normalisation" when they match once
- every local `$ref` (`#/$defs/...`, `#/definitions/...`) is replaced by its target,
- every `title` keyword is dropped (class names are ours to choose), and
- a `default` the server's schema lacks is dropped from ours (the server field has a
  `default_factory`, which JSON schema cannot express), and
- a `description` is compared with every run of whitespace collapsed to one space: a
  model's description becomes its class docstring, which re-indents, expands tabs and
  trims (an empty one is no description),
- `additionalProperties: true` is dropped: it is JSON Schema's default,
- a one-value `enum` is written as the equivalent `const`; a `type` beside a `const`
  that is the one Pydantic writes for that value (`pydantic_type_keyword`: by Python type,
  so `1.0` is a "number"), and an empty `required`, are dropped (they add nothing); a closed
  object with no properties is written `maxProperties: 0` (both accept only `{}`) and an
  open one drops its empty `properties`, and
- in a `pattern`, a backslash before a quote character is dropped: datamodel-code-generator
  writes patterns as raw strings, where a quote must be escaped, and `\'` matches `'`, and
- a `oneOf` whose members are told apart by one property (each fixes it to a different
  `const`) is written `anyOf`: no value can match two of them, so the two keywords accept
  the same values (Pydantic writes a discriminated union `oneOf`, a plain one `anyOf`), and
- a `discriminator` keeps only its `propertyName`: its `mapping` names `$defs` entries,
  i.e. class names, which are ours to choose (JSON Schema validation ignores the keyword;
  which member a tag selects is the member's own `const` on that property).
Property *names* are never touched: a field called `title` stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def collapse_whitespace(text: str) -> str:
    """`text` with every run of whitespace made one space and none at either end."""
    return " ".join(text.split())


def inline_refs(schema: dict[str, Any], *, max_depth: int = 256) -> dict[str, Any]:
    """`schema` with local refs replaced by their targets and `$defs` removed."""
    # A recursive reference (a model that contains itself) stays a marker, `{"$recursive": NAME}`.
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def resolve(node: Any, depth: int, expanding: frozenset[str]) -> Any:
        if depth > max_depth:
            raise ValueError("schema nested too deeply to compare")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                name = ref.rsplit("/", 1)[-1]
                if name not in defs:
                    raise ValueError(f"unresolved $ref {ref}")
                if name in expanding:
                    return {"$recursive": name}
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**defs[name], **rest}, depth + 1, expanding | {name})
            return {k: resolve(v, depth + 1, expanding) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [resolve(v, depth + 1, expanding) for v in node]
        return node

    inlined: dict[str, Any] = resolve(schema, 0, frozenset())  # a dict resolves to a dict
    return inlined


def drop_titles(node: Any) -> Any:
    """`node` with every rule of this module's docstring except `$ref` inlining applied."""
    if not isinstance(node, dict):
        return node
    if node.get("properties") == {} and not node.get("required"):
        closed = node.get("additionalProperties") is False
        node = {k: v for k, v in node.items() if k not in ("additionalProperties", "properties", "required")}
        if closed:
            node["maxProperties"] = 0
    one_of = node.get("oneOf")
    if (
        isinstance(one_of, list)
        and "anyOf" not in node
        and all(isinstance(m, dict) for m in one_of)
        and discriminator_property({}, one_of) is not None
    ):
        node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) == 1 and "const" not in node:
        node = {**{k: v for k, v in node.items() if k != "enum"}, "const": enum[0]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "discriminator" and isinstance(value, dict) and "propertyName" in value:
            out[key] = {"propertyName": value["propertyName"]}
            continue
        if key == "description" and isinstance(value, str):
            cleaned = collapse_whitespace(value)
            if cleaned:  # an empty docstring is no docstring
                out[key] = cleaned
            continue
        if (key == "additionalProperties" and value is True) or (key == "required" and value == []):
            continue
        if key == "type" and "const" in node and value == pydantic_type_keyword(node["const"]):
            continue
        if key == "pattern" and isinstance(value, str):
            out[key] = re.sub(r"\\(['\"])", r"\1", value)
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: drop_titles(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [drop_titles(sub) for sub in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = drop_titles(value)
        else:
            out[key] = value
    return out


def pydantic_type_keyword(value: Any) -> str | None:
    """The `type` Pydantic writes beside a `const` of `value`: its Python type's, so `1.0` is "number"."""
    # Pydantic picks the keyword from the Python type (`Literal[1.0]` → `"type": "number"`), so
    # a `type` is recognised as the redundant one it wrote only when it is exactly this one.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}.get(type(value))


def _drop_factory_defaults(ours: Any, server: Any) -> Any:
    """`ours` without each `default` the server's schema lacks at the same place."""
    if not isinstance(ours, dict) or not isinstance(server, dict):
        return ours
    out: dict[str, Any] = {}
    for key, value in ours.items():
        if key == "default" and "default" not in server:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict) and isinstance(server.get(key), dict):
            out[key] = {n: _drop_factory_defaults(s, server[key].get(n)) for n, s in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list) and isinstance(server.get(key), list):
            pairs = zip(value, server[key], strict=False)  # ours may be longer: the rest is kept as is
            out[key] = [_drop_factory_defaults(s, t) for s, t in pairs] + value[len(server[key]) :]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _drop_factory_defaults(value, server.get(key))
        else:
            out[key] = value
    return out


UNION_KEYS = ("oneOf", "anyOf")


@dataclass(frozen=True)
class UnionMember:
    """One alternative of a union action, its `$ref`s resolved one level."""

    key: str
    """What identifies it across versions: its discriminator value (the `const` of the
    union's `discriminator.propertyName`, or of a property every member fixes), else its
    title, else its position (`#2`)."""
    title: str | None
    schema: dict[str, Any]
    """The member's schema, carrying the union's `$defs` so nested `$ref`s still resolve."""
    tag_property: str | None = None
    """The union's discriminating property, when it has one."""


def union_branches(schema: Any) -> list[Any] | None:
    """The branches of a schema whose root is a `oneOf`/`anyOf` (a union action), else None."""
    if not isinstance(schema, dict) or "properties" in schema:
        return None
    for key in UNION_KEYS:
        branches = schema.get(key)
        if isinstance(branches, list):
            return branches
    return None


def discriminator_property(schema: dict[str, Any], members: list[dict[str, Any]]) -> str | None:
    """The property telling a union's members apart: its `discriminator`, else one all fix to distinct consts."""
    # The latter is how a Pydantic tagged union tells them apart when no `discriminator` is written.
    named = schema.get("discriminator")
    named_property = named.get("propertyName") if isinstance(named, dict) else None
    if isinstance(named_property, str):
        return named_property
    common: set[str] | None = None
    for member in members:
        fixed = {name for name, prop in (member.get("properties") or {}).items() if tag_value(prop) is not None}
        common = fixed if common is None else common & fixed
    for name in sorted(common or ()):
        values = [tag_value(m["properties"][name]) for m in members]
        if len(set(map(repr, values))) == len(values):
            return name
    return None


def tag_value(prop: Any) -> Any:
    """The single value a property schema allows (`const`, or a one-value `enum`), else None."""
    if not isinstance(prop, dict):
        return None
    if "const" in prop:
        return prop["const"]
    enum = prop.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        return enum[0]
    return None


def union_members(schema: dict[str, Any]) -> list[UnionMember] | None:
    """The members of a union action schema, keyed so two versions pair up; None for no union."""
    # A member's `$ref` (chain) is followed to its target.
    branches = union_branches(schema)
    if branches is None:
        return None
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    resolved = []
    for branch in branches:
        seen: set[str] = set()
        node = branch
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen or name not in defs:
                break
            seen.add(name)
            node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        resolved.append(node if isinstance(node, dict) else {})
    tag = discriminator_property(schema, resolved)
    out = []
    for i, member in enumerate(resolved, 1):
        value = tag_value((member.get("properties") or {}).get(tag)) if tag else None
        title = member.get("title") if isinstance(member.get("title"), str) else None
        key = str(value) if value is not None else title or f"#{i}"
        body = {**member, "$defs": defs} if defs else dict(member)
        out.append(UnionMember(key=key, title=title, schema=body, tag_property=tag))
    return out


def normalise(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with local `$ref`s inlined and every other rule of this module's docstring applied."""
    normalised: dict[str, Any] = drop_titles(inline_refs(schema))  # a dict stays a dict
    return normalised


def equivalent(ours: dict[str, Any], server: dict[str, Any]) -> bool:
    """Whether a generated model's schema equals the server's after normalisation."""
    server_n = normalise(server)
    return bool(_drop_factory_defaults(normalise(ours), server_n) == server_n)

"""What a JSON schema lets through, as `compatibility` compares it: its JSON types (an
"integer" is a "number"), the values a `const`/`enum` lists, and a union's branches. Pure.
"""

from __future__ import annotations

import json
from typing import Any

JSON_TYPES = ("boolean", "integer", "number", "string", "array", "object", "null")


def narrowest_json_type(value: Any) -> str:
    """The narrowest JSON Schema type accepting the JSON value `value`: a whole `1.0` is an "integer"."""
    # JSON Schema types a number by its value, not its spelling, so `{"const": 1.0}` accepts
    # only an integer; "number" here would rate `integer` → `const 1.0` a widening.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def json_types(schema: Any) -> frozenset[str] | None:
    """The JSON types a schema accepts; None when unrestricted."""
    if not isinstance(schema, dict):
        return None if schema is not False else frozenset()
    found: frozenset[str] | None = None
    if "const" in schema:
        found = frozenset({narrowest_json_type(schema["const"])})
    elif isinstance(schema.get("enum"), list):
        found = frozenset(narrowest_json_type(v) for v in schema["enum"])
    elif isinstance(schema.get("type"), str):
        found = frozenset({schema["type"]})
    elif isinstance(schema.get("type"), list):
        found = frozenset(t for t in schema["type"] if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            union: set[str] = set()
            for branch in branches:
                sub = json_types(branch)
                if sub is None:
                    union = set(JSON_TYPES)
                    break
                union |= sub
            found = frozenset(union) if found is None else found & frozenset(union)
    return found


def covers(types: frozenset[str], t: str) -> bool:
    """Whether `types` accept type `t` (an "integer" is a "number")."""
    return t in types or (t == "integer" and "number" in types)


def subset(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Whether everything of types `a` is accepted by types `b`."""
    if b is None:
        return True
    if a is None:
        return False
    return all(covers(b, t) for t in a)


def show_types(types: frozenset[str] | None) -> str:
    """`string | null`, `any` or `nothing`; JSON's types in a fixed order, any others sorted."""
    if types is None:
        return "any"
    if not types:
        return "nothing"
    if types <= set(JSON_TYPES):
        return " | ".join(sorted(types, key=JSON_TYPES.index))
    return " | ".join(sorted(types))


def allowed_values(schema: dict[str, Any]) -> set[str] | None:
    """The values a `const`/`enum` allows, as JSON text (comparable as a set); None when unlisted."""
    if "const" in schema:
        return {json.dumps(schema["const"], sort_keys=True)}
    if isinstance(schema.get("enum"), list):
        return {json.dumps(v, sort_keys=True) for v in schema["enum"]}
    return None


def listed_values(schema: dict[str, Any]) -> list[Any] | None:
    """The values a `const`/`enum` allows, as listed; None when unlisted."""
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def union_branches(schema: dict[str, Any]) -> list[Any] | None:
    """The `anyOf`/`oneOf` alternatives of a schema; None when it has none."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            return branches
    return None


def branches_by_type(branches: list[Any]) -> dict[str, Any] | None:
    """Branches keyed by their single JSON type; None if any is untyped or shares a type."""
    out: dict[str, Any] = {}
    for branch in branches:
        types = json_types(branch)
        if types is None or len(types) != 1:
            return None
        (t,) = types
        if t in out:
            return None
        out[t] = branch
    return out

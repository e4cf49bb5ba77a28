"""Values a JSON schema allows, drawn at random within small bounds: the doctor's policy.

Pure: a `random.Random` in, a JSON value out (None when the schema asks for something this
drawer does not make, such as a string matching a `pattern` with no example to copy). A
drawn value is only a candidate: the package's generated model has the last word, and the
policy drops a value it refuses.

Bounds keep every value small: strings of at most `MAX_STRING` characters, arrays of at most
`MAX_ITEMS` items, nesting at most `MAX_DEPTH` deep; optional properties are present half of
the time. A schema's `examples`, `default`, `enum` and `const` are preferred where given.
"""

from __future__ import annotations

import random
import string
import sys
from collections.abc import Callable
from typing import Any

MAX_STRING = 12
MAX_ITEMS = 3
MAX_DEPTH = 6
WORDS = ("crane", "hello", "yes", "no", "42", "up", "left", "a", "test", "stop")
"""Short strings a model might write, tried before random letters."""
_LIMIT = 1_000_000
"""Bound on a drawn number's magnitude when the schema sets none."""


class Unsupported(ValueError):
    """The schema asks for a value this drawer cannot make."""


def draw(schema: Any, rng: random.Random, *, defs: dict[str, Any] | None = None) -> Any:
    """One value of `schema` (a JSON schema; `$ref`s into `$defs` or `definitions` resolved)."""
    root = schema if isinstance(schema, dict) else {}
    return _draw(schema, rng, {**root.get("definitions", {}), **root.get("$defs", {}), **(defs or {})}, 0)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 32:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        if name not in defs:
            raise Unsupported(f"unknown $ref {schema['$ref']!r}")
        schema = {**defs[name], **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def _draw(schema: Any, rng: random.Random, defs: dict[str, Any], depth: int) -> Any:
    if schema is True or schema == {}:
        return rng.choice(WORDS)
    if not isinstance(schema, dict):
        raise Unsupported("a schema that allows nothing")
    if depth > MAX_DEPTH:
        raise Unsupported("nested too deep")
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(schema["enum"])
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and rng.random() < 0.5:
        return rng.choice(examples)
    if "default" in schema and rng.random() < 0.25:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            branches = [b for b in schema[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            branch = rng.choice(branches or schema[key])
            rest = {k: v for k, v in schema.items() if k != key}
            return _draw({**rest, **branch} if isinstance(branch, dict) else branch, rng, defs, depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged |= _resolve(part, defs) if isinstance(part, dict) else {}
        return _draw(merged, rng, defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or kind)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    return _DRAWERS.get(str(kind), _unsupported)(schema, rng, defs, depth)


def _unsupported(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> Any:
    raise Unsupported(f"type {schema.get('type')!r}")


def _string(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> str:
    if "pattern" in schema or "format" in schema:
        raise Unsupported("a string with a pattern or format and no example")
    low = int(schema.get("minLength", 0))
    high = min(int(schema.get("maxLength", MAX_STRING)), max(low, MAX_STRING))
    words = [w for w in WORDS if low <= len(w) <= high]
    if words and rng.random() < 0.6:
        return rng.choice(words)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(low, max(low, high))))


def _bounds(schema: dict[str, Any]) -> tuple[float, float, float, float]:
    low = schema.get("minimum", -_LIMIT)
    high = schema.get("maximum", _LIMIT)
    return (
        float(low),
        float(high),
        float(schema.get("exclusiveMinimum", low - 1)),
        float(schema.get("exclusiveMaximum", high + 1)),
    )


def _integer(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> int:
    low, high, above, below = _bounds(schema)
    start = int(max(low, above + 1))
    stop = int(min(high, below - 1))
    if start > stop:
        raise Unsupported("an empty integer range")
    near = [n for n in (0, 1, 2, start, stop) if start <= n <= stop]
    value = rng.choice(near) if rng.random() < 0.5 else rng.randint(start, min(stop, start + 20))
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0 and value % step:
        value += step - value % step
        if value > stop:
            raise Unsupported("no multiple in the integer range")
    return value


def _number(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> float:
    low, high, above, below = _bounds(schema)
    start = max(low, above + sys.float_info.epsilon * max(1.0, abs(above)) * 4)
    stop = min(high, below - sys.float_info.epsilon * max(1.0, abs(below)) * 4)
    if start > stop:
        raise Unsupported("an empty number range")
    return round(rng.uniform(start, min(stop, start + 10.0)), 3) if start > -_LIMIT else round(rng.uniform(-10, 10), 3)


def _boolean(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> bool:
    return rng.random() < 0.5


def _null(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> None:
    return None


def _array(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> list[Any]:
    low = int(schema.get("minItems", 0))
    high = min(int(schema.get("maxItems", MAX_ITEMS)), max(low, MAX_ITEMS))
    prefix = schema.get("prefixItems") or []
    items = schema.get("items", {})
    count = max(len(prefix), rng.randint(low, max(low, high)))
    values = [_draw(prefix[i] if i < len(prefix) else items, rng, defs, depth + 1) for i in range(count)]
    if schema.get("uniqueItems") and len({repr(v) for v in values}) != len(values):
        raise Unsupported("unique items not drawn")
    return values


def _object(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any], depth: int) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    value: dict[str, Any] = {}
    for name, sub in properties.items():
        if name == "metadata" and name not in required:
            continue  # OpenEnv's base field: the model never fills it
        if name in required or rng.random() < 0.5:
            try:
                value[name] = _draw(sub, rng, defs, depth + 1)
            except Unsupported:
                if name in required:
                    raise
    return value


_DRAWERS: dict[str, Callable[[dict[str, Any], random.Random, dict[str, Any], int], Any]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "null": _null,
    "array": _array,
    "object": _object,
}

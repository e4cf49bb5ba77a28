"""JSON-schema normalisation, for comparing a generated model's schema with the server's.

Two schemas are "equal after normalisation" when they match once
- every local `$ref` (`#/$defs/...`, `#/definitions/...`) is replaced by its target,
- every `title` keyword is dropped (class names are ours to choose), and
- a `default` the server's schema lacks is dropped from ours (the server field has a
  `default_factory`, which JSON schema cannot express).
Property *names* are never touched: a field called `title` stays.
"""

from __future__ import annotations

from typing import Any

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")


def inline_refs(schema: dict[str, Any], *, max_depth: int = 64) -> dict[str, Any]:
    """`schema` with local refs replaced by their targets and `$defs` removed."""
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def resolve(node: Any, depth: int) -> Any:
        if depth > max_depth:
            raise ValueError("$ref nesting too deep (a reference cycle?)")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                target = defs.get(ref.rsplit("/", 1)[-1])
                if target is None:
                    raise ValueError(f"unresolved $ref {ref}")
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **rest}, depth + 1)
            return {k: resolve(v, depth + 1) for k, v in node.items() if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [resolve(v, depth + 1) for v in node]
        return node

    return resolve(schema, 0)


def drop_titles(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
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


def _drop_factory_defaults(ours: Any, server: Any) -> Any:
    if not isinstance(ours, dict) or not isinstance(server, dict):
        return ours
    out = {}
    for key, value in ours.items():
        if key == "default" and "default" not in server:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict) and isinstance(server.get(key), dict):
            out[key] = {n: _drop_factory_defaults(s, server[key].get(n)) for n, s in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list) and isinstance(server.get(key), list):
            out[key] = [_drop_factory_defaults(s, t) for s, t in zip(value, server[key])] + value[len(server[key]) :]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = _drop_factory_defaults(value, server.get(key))
        else:
            out[key] = value
    return out


def normalise(schema: dict[str, Any]) -> dict[str, Any]:
    return drop_titles(inline_refs(schema))


def equivalent(ours: dict[str, Any], server: dict[str, Any]) -> bool:
    """Whether a generated model's schema equals the server's after normalisation."""
    server_n = normalise(server)
    return _drop_factory_defaults(normalise(ours), server_n) == server_n

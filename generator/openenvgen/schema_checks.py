"""Checks on a schema from an untrusted server, before anything is generated from it.

Every object schema stays within size and depth bounds, its `$ref`s local and resolvable; an
action union is made of object members the generated union can tell apart (no overlapping
`oneOf`, a discriminator that names a real property). Each failure is one `SchemaError` line.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from openenvgen.errors import SchemaError
from openenvgen_schemas.normalise import UNION_KEYS, discriminator_property, normalise, tag_value, union_branches

MAX_DEPTH = 32
MAX_PROPERTIES = 1000


def canonical_json(value: Any) -> str:
    """`value` as JSON with sorted keys and no spaces: equal values, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def checked_object(schema: Any, what: str) -> dict[str, Any]:
    """An object schema within the bounds, its `$ref`s all local and resolved."""
    if not isinstance(schema, dict):
        raise SchemaError(f"{what} schema is not a JSON object")
    if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        raise SchemaError(f"{what} schema is not an object schema with properties")
    _check_bounds(schema, what)
    _check_refs(schema, what)
    return schema


def checked_action(schema: Any) -> dict[str, Any]:
    """One object schema, or a union of object schemas (see `_check_union`), within the bounds."""
    if not isinstance(schema, dict):
        raise SchemaError("action schema is not a JSON object")
    # Bounds and refs first: the union checks walk the schema.
    _check_bounds(schema, "action")
    _check_refs(schema, "action")
    if union_branches(schema) is not None:
        _check_union(schema)
    elif schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        raise SchemaError("action schema is not an object schema with properties, nor a oneOf/anyOf of object schemas")
    return schema


def _resolve_member(branch: Any, defs: dict[str, Any], index: int, trail: tuple[str, ...] = ()) -> dict[str, Any]:
    """A union member with its `$ref` chain followed; a chain that comes back to a name it
    passed, directly or through a nested union, is a cycle."""
    node = branch
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in trail:
            raise SchemaError(f"action union member {index} is a $ref cycle: {' → '.join((*trail, name))}")
        if name not in defs:
            raise SchemaError(f"action schema has an unresolved $ref {node['$ref'][:80]!r}")
        trail = (*trail, name)
        node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
    nested = union_branches(node)
    if nested is not None:
        for sub in nested:
            _resolve_member(sub, defs, index, trail)
        raise SchemaError(f"action union member {index} is itself a union; list its members in the action's oneOf")
    if not isinstance(node, dict) or node.get("type") != "object" or not isinstance(node.get("properties", {}), dict):
        kind = node.get("type") if isinstance(node, dict) else type(node).__name__
        why = f"not an object schema (type {str(kind)[:40]!r}); a union action must be a oneOf/anyOf of objects"
        raise SchemaError(f"action union member {index} is {why}")
    return node


def _check_union(schema: dict[str, Any]) -> None:
    """A union action: every member an object schema, no two members alike (by title, by
    tag or by shape), and a `discriminator`, when named, fixed by every member."""
    keyword_used = next(k for k in UNION_KEYS if isinstance(schema.get(k), list))
    branches = schema[keyword_used]
    if not branches:
        raise SchemaError(f"action schema's {keyword_used} has no members")
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    members = [_resolve_member(b, defs, i) for i, b in enumerate(branches, 1)]
    titles: dict[str, int] = {}
    shapes: dict[str, int] = {}
    for i, member in enumerate(members, 1):
        title = member.get("title")
        if isinstance(title, str):
            if title in titles:
                raise SchemaError(
                    f"action union members {titles[title]} and {i} collide: both are titled {title[:60]!r}"
                )
            titles[title] = i
        try:
            shape = canonical_json(normalise({**member, "$defs": defs}))
        except ValueError as e:
            raise SchemaError(f"action union member {i}: {e}") from None
        if shape in shapes:
            raise SchemaError(f"action union members {shapes[shape]} and {i} collide: they accept the same actions")
        shapes[shape] = i
    discriminator = schema.get("discriminator")
    if discriminator is None:
        if keyword_used == "oneOf" and discriminator_property({}, members) is None:
            # A oneOf refuses a value two members accept; the generated union cannot.
            raise SchemaError(
                "action schema's oneOf has no discriminator and no property whose const tells its members apart, "
                "so its members may overlap"
            )
        return
    name = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    if not isinstance(name, str):
        raise SchemaError("action schema's discriminator has no string propertyName")
    tags: dict[str, int] = {}
    for i, member in enumerate(members, 1):
        prop = (member.get("properties") or {}).get(name)
        label = f"member {i}" + (f" ({member['title'][:40]})" if isinstance(member.get("title"), str) else "")
        if prop is None:
            raise SchemaError(
                f"action schema's discriminator names {name[:40]!r}, a property union {label} does not have"
            )
        value = tag_value(prop)
        if value is None:
            raise SchemaError(f"action schema's discriminator {name[:40]!r} is not fixed to one value in union {label}")
        tag = canonical_json(value)
        if tag in tags:
            raise SchemaError(f"action union members {tags[tag]} and {i} collide: both have {name[:40]} = {tag[:40]}")
        tags[tag] = i
    mapping = discriminator.get("mapping") or {}
    if not isinstance(mapping, dict) or any(
        not isinstance(ref, str) or ref.rsplit("/", 1)[-1] not in defs for ref in mapping.values()
    ):
        raise SchemaError("action schema's discriminator mapping names a schema that is not in its $defs")


def _check_refs(schema: dict[str, Any], what: str) -> None:
    """Every `$ref` must be local and resolve: a dangling one would silently become `Any`."""
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None:
                if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")):
                    raise SchemaError(f"{what} schema has a non-local $ref {str(ref)[:80]!r}")
                if ref.rsplit("/", 1)[-1] not in defs:
                    raise SchemaError(f"{what} schema has an unresolved $ref {ref[:80]!r}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def _check_bounds(node: Any, what: str) -> None:
    """Refuse schemas too deep or too wide to be a real env's (and too costly to generate)."""
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"{what} schema is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            props = value.get("properties")
            if isinstance(props, dict):
                if len(props) > MAX_PROPERTIES:
                    raise SchemaError(
                        f"{what} schema has {len(props)} properties in one object (limit {MAX_PROPERTIES})"
                    )
                for prop in props:
                    # Python NFKC-normalises identifiers: a field named "𝐀" would silently
                    # become "A" and no longer accept the server's key.
                    if unicodedata.normalize("NFKC", prop) != prop:
                        raise SchemaError(f"{what} schema property {prop[:40]!r} changes under Unicode normalisation")
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)

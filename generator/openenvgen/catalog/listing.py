"""`openenv-gen list`: what each catalog env's action looks like, as rows and as JSON.

Each env's spec is built from its embedded snapshot exactly as generating would build it,
so the list shows the fields and tools its package's models will have.
"""

from __future__ import annotations

from typing import Any

from openenvgen.catalog.reader import entries
from openenvgen.spec import build_spec
from openenvgen_schemas.normalise import union_members


def catalog_json() -> dict[str, Any]:
    """`list --json`. Stable keys: `envs`, a list in catalog order of `{name, env_id, package,
    action, fields, tools, members}`; `action` is "typed", "mcp" or "union"; a typed env has
    `fields` (`[{name, type, required}]`, the base `metadata` field left out); an MCP env has
    `tools` (`[{name, description, arguments: [{name, type, required}]}]`); a union env has
    `members` (`[{key, fields}]`, each without the shared tag); the others are null."""
    envs = []
    for entry in entries().values():
        spec = build_spec(entry.interface(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        members = None if spec.is_mcp else union_members(spec.action_schema)
        envs.append(
            {
                "name": entry.name,
                "env_id": entry.env_id,
                "package": spec.package,
                "action": "mcp" if spec.is_mcp else "union" if members else "typed",
                "fields": None if spec.is_mcp or members else _field_list(spec.action_schema, skip_metadata=True),
                "tools": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "arguments": _field_list(t.input_schema, skip_metadata=False),
                    }
                    for t in spec.tools or ()
                ]
                if spec.is_mcp
                else None,
                "members": [
                    {"key": m.key, "fields": _field_list(_without(m.schema, m.tag_property), skip_metadata=True)}
                    for m in members
                ]
                if members
                else None,
            }
        )
    return {"envs": envs}


def _field_list(schema: dict[str, Any], *, skip_metadata: bool) -> list[dict[str, Any]]:
    required = set(schema.get("required") or [])
    return [
        {"name": name, "type": _type_name(prop), "required": name in required}
        for name, prop in (schema.get("properties") or {}).items()
        if not (skip_metadata and name == "metadata")
    ]


def catalog_rows() -> list[tuple[str, str, str, str]]:
    """(name, env id, "typed", "MCP" or "union", the action's fields, tools or members) per catalog env.

    Fields read `name: type` (`name?: type` when optional; the base `metadata` field is
    left out); tools read `tool(arg, arg?)`; members read `key(field, field?) | ...`.
    """
    rows = []
    for entry in entries().values():
        spec = build_spec(entry.interface(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        members = union_members(spec.action_schema)
        if spec.is_mcp:
            kind = "MCP"
            detail = ", ".join(f"{t.name}({_fields(t.input_schema, typed=False)})" for t in spec.tools or ())
        elif members:
            # One alternative each, by its key, with its own fields (not the shared tag).
            kind = "union"
            detail = " | ".join(f"{m.key}({_fields(_without(m.schema, m.tag_property), typed=False)})" for m in members)
        else:
            kind, detail = "typed", _fields(spec.action_schema, typed=True)
        rows.append((entry.name, entry.env_id, kind, detail))
    return rows


def _without(schema: dict[str, Any], prop: str | None) -> dict[str, Any]:
    """`schema` without the property `prop` (and without the base `metadata` field)."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in (prop, "metadata")}
    return {**schema, "properties": props}


def _fields(schema: dict[str, Any], *, typed: bool) -> str:
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in (schema.get("properties") or {}).items():
        if name == "metadata" and typed:
            continue
        label = name if name in required else f"{name}?"
        parts.append(f"{label}: {_type_name(prop)}" if typed else label)
    return ", ".join(parts)


def _type_name(prop: object) -> str:
    if not isinstance(prop, dict):
        return "any"
    kind = prop.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return "|".join(_type_name(p) for p in prop[key])
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    if "const" in prop or "enum" in prop:
        return "enum"
    return "any"

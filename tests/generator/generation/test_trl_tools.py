"""The TRL class of every catalog package: the schema TRL derives from each generated tool method
(`transformers.utils.get_json_schema`, what TRL 1.16 uses) is made without error, with a
description for the tool and each parameter, and the tools together accept exactly what the
env's action (or its MCP tools) accepts: every field reachable under its own name, the
required ones required, enums kept, each type as wide as the field's, and every bound the
schema cannot carry stated in the parameter's description (the action model enforces it
when the call is validated).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, RootModel
from transformers.utils import get_json_schema

from openenvgen.generation.trl_tools import _BOUNDS
from openenvgen_runtime.trl import ANY_TOOL, TOOL_ACTION, TOOL_FIELDS
from openenvgen_testsupport.paths import GENERATED

PACKAGES = sorted(p for p in GENERATED.iterdir() if (p / "pyproject.toml").is_file())
BOUND_KEYS = [key for key, _ in _BOUNDS]


def _tool_methods(cls: type) -> dict[str, Any]:
    """The methods TRL offers as tools, as TRL finds them (bound, on an instance)."""
    instance = cls()
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf") or []) == 1:
        ref = schema["allOf"][0].get("$ref")
    if isinstance(ref, str):
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        return {**_resolve(defs[ref.rsplit("/", 1)[-1]], defs), **rest}
    return schema


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a (resolved) schema admits; `any` for no type at all."""
    schema = _resolve(schema, defs)
    found: set[str] = set()
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        found |= _types(branch, defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        found |= set(kind)
    elif isinstance(kind, str):
        found.add(kind)
    elif "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
        found |= {names[type(v)] for v in values}
    elif not found:
        found.add("object" if "properties" in schema else "any")
    if schema.get("nullable"):
        found.add("null")
    return found


def _enum(schema: dict[str, Any], defs: dict[str, Any]) -> list[Any] | None:
    schema = _resolve(schema, defs)
    if "const" in schema:
        return [schema["const"]]
    values = schema.get("enum")
    if values is None:
        for branch in schema.get("anyOf") or []:
            inner = _enum(branch, defs)
            if inner is not None:
                return inner + ([None] if any(_types(b, defs) == {"null"} for b in schema["anyOf"]) else [])
    return values


def _expected(taskset: Any, action: Any) -> tuple[dict[str, Any], set[str]]:
    """What the tool's arguments must match: (the schema of its fields, fields it leaves out)."""
    if action == ANY_TOOL:
        members = [m for m in _union_members(taskset.ACTION_MODEL) if "tool_name" in m.model_fields]
        schema = members[0].model_json_schema()
        return schema, {"metadata", "type"}
    if isinstance(action, str):
        return taskset.TOOL_ARGUMENTS[action].model_json_schema(), set()
    schema = action.model_json_schema()
    tags = {name for name, prop in (schema.get("properties") or {}).items() if "const" in prop}
    is_member = issubclass(taskset.ACTION_MODEL, RootModel)
    return schema, {"metadata"} | (tags if is_member else set())


def _union_members(model: type[BaseModel]) -> list[type[BaseModel]]:
    return list(model.model_fields["root"].annotation.__args__)  # type: ignore[union-attr]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_each_tool_s_trl_schema_accepts_exactly_the_action(package: Path) -> None:
    module = importlib.import_module(package.name.replace("-", "_") + ".trl")
    cls = module.environment_class()
    taskset = cls.TASKSET
    tools = _tool_methods(cls)
    assert tools, f"{package.name}: no tool method"
    reached: set[Any] = set()
    for name, method in tools.items():
        schema = get_json_schema(method)["function"]  # what TRL puts in the prompt; raises if it cannot
        assert schema["name"] == name and schema["description"].strip(), name
        params = schema["parameters"]
        properties = params["properties"]
        for param, prop in properties.items():
            assert prop.get("description", "").strip(), f"{name}({param}) has no description"
        action = vars(method.__func__)[TOOL_ACTION]
        renamed = vars(method.__func__)[TOOL_FIELDS]
        reached.add(action)
        expected, left_out = _expected(taskset, action)
        defs = expected.get("$defs") or {}
        fields = {k: v for k, v in (expected.get("properties") or {}).items() if k not in left_out}
        by_field = {renamed.get(p, p): p for p in properties}
        assert set(by_field) == set(fields), (
            f"{name}: parameters {sorted(by_field)} are not the fields {sorted(fields)}"
        )
        required = {f for f in (expected.get("required") or []) if f in fields}
        assert {renamed.get(p, p) for p in params.get("required", [])} == required, name
        for field, field_schema in fields.items():
            prop = properties[by_field[field]]
            wanted = _types(field_schema, defs)
            got = _types(prop, {})
            assert "any" in got or wanted <= got | ({"integer"} if "number" in got else set()), (name, field, got)
            enum = _enum(field_schema, defs)
            if enum is not None:
                assert _enum(prop, {}) == [v for v in enum if v is not None] or _enum(prop, {}) == enum, (name, field)
            resolved = _resolve(field_schema, defs)
            for key in BOUND_KEYS:
                if key in resolved and resolved[key] is not True:
                    assert str(resolved[key]) in prop["description"], f"{name}({field}): {key} not stated"
    if taskset.IS_MCP and taskset.TOOL_ARGUMENTS:
        assert set(taskset.TOOL_ARGUMENTS) <= reached, "an MCP tool has no method"

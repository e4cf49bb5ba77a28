"""Which values a model takes as they are: then validating them can be skipped.

Read from pydantic's own core schema of the model, never from its annotations: whatever
could change or refuse a value (a constraint, a validator, a config that strips or
coerces strings, an alias, a custom serializer) shows there, and anything this module
does not know to be harmless counts as a change. Validating and dumping one string field
costs about 9 µs of a step between two socket round trips; a bare reply to a model that
takes any string needs neither. Kept for P3 (bench/p3_step.py, quick, side by side): 1.117
with it, 1.171 validating every reply (target 1.10).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_MODEL_KEYS = frozenset({"type", "cls", "config", "custom_init", "metadata", "ref", "root_model", "schema"})
"""Keys of a plain model's core schema; `post_init`, `serialization` and the like are not."""
_HARMLESS_CONFIG = frozenset(
    {
        "title",
        "extra_fields_behavior",  # the value holds no other field
        "validate_by_alias",  # no alias (checked): by alias or by name, the same key
        "validate_by_name",
        "serialize_by_alias",
        "hide_input_in_errors",  # errors only
        "loc_by_alias",
    }
)
_FIELD_KEYS = frozenset({"type", "schema", "metadata"})
"""A field with any other key (an alias, `serialization_exclude`, ...) does not pass."""


def takes_any_string(model: type[BaseModel], name: str) -> bool:
    """Whether `model`, given `{name: s}` for any valid-Unicode string `s`, validates and
    dumps (`mode="json", exclude_unset=True, by_alias=True`) to `{name: s}`: `name` is a
    plain `str` field and every other field has a default it does not validate."""
    core: dict[str, Any] = dict(getattr(model, "__pydantic_core_schema__", None) or {})
    if core.get("type") != "model" or not _MODEL_KEYS.issuperset(core):
        return False
    if core.get("root_model") or core.get("custom_init") or not _HARMLESS_CONFIG.issuperset(core.get("config") or {}):
        return False
    fields_schema = core.get("schema") or {}
    if fields_schema.get("type") != "model-fields" or fields_schema.get("computed_fields"):
        return False
    if fields_schema.keys() - {"type", "fields", "model_name", "computed_fields"}:
        return False  # extras schemas, a strict flag, ...
    fields: dict[str, Any] = fields_schema.get("fields") or {}
    field = fields.get(name)
    if field is None or not _FIELD_KEYS.issuperset(field) or _without_metadata(field["schema"]) != {"type": "str"}:
        return False
    return all(_defaulted(other) for key, other in fields.items() if key != name)


def _defaulted(field: dict[str, Any]) -> bool:
    """A field left unset: it has a default, not validated (so not dumped, not checked)."""
    schema = field.get("schema") or {}
    return schema.get("type") == "default" and not schema.get("validate_default")


def _without_metadata(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "metadata"}

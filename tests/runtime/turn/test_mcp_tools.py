"""Argument models built at run time from a listed tool's input schema (`mcp_tools`): typed as
strictly as JSON Schema, shown as the server's own schema, and built from any schema a server
may list without an error other than pydantic's `ValidationError` on bad arguments."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from openenvgen_runtime.turn.mcp_tools import argument_model

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        "ratio": {"type": "number", "exclusiveMaximum": 1},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "at": {"$ref": "#/$defs/Point"},
        "class": {"anyOf": [{"type": "string", "pattern": "^(?=x)x+$"}, {"type": "null"}]},
    },
    "required": ["count"],
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
}


def _dump(model: Any, value: dict[str, Any]) -> dict[str, Any]:
    return dict(model.model_validate(value).model_dump(mode="json", exclude_unset=True, by_alias=True))


def test_a_listed_schema_becomes_a_strict_typed_model() -> None:
    model = argument_model("move-to", SCHEMA, "Move there.")
    assert model.__name__ == "MoveToArguments" and model.__doc__ == "Move there."
    assert model.model_json_schema() == SCHEMA  # the model is shown the server's schema
    full = {"count": 3, "ratio": 0.5, "mode": "fast", "tags": ["a"], "at": {"x": 1}, "class": "xx"}
    assert _dump(model, full) == full  # a Python keyword as a property name goes by its alias
    assert _dump(model, {"count": 0, "ratio": 0}) == {"count": 0, "ratio": 0}  # 0 stays an integer
    refused = {
        "count": "3",  # no coercion: a string is no integer
        "ratio": 1,
        "mode": "medium",
        "tags": ["a", "b", "c"],
        "at": {"x": "1"},
        "class": "y",
        "extra": 1,  # additionalProperties: false
    }
    for key, value in refused.items():
        with pytest.raises(ValidationError) as caught:
            model.model_validate({"count": 1, key: value})
        assert caught.value.errors()[0]["loc"][0] == key, key
    with pytest.raises(ValidationError, match="count"):
        model.model_validate({})


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"properties": "x"},
        {"properties": {"a": True}},
        {"properties": {"a": {"type": ["string", "null", 5]}}},
        {"properties": {"a": {"enum": [[1], {"a": 1}]}}},
        {"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/A"}}}}},
        {"properties": {"a": {"$ref": "https://example.com/a.json"}}},
        {"properties": {"a": {"type": "string", "pattern": "(("}}},
        {"properties": {"a": {"type": "string", "minLength": -1, "maxLength": 3}}},
        {"properties": {"a": {"type": "number", "multipleOf": 0, "maximum": 1e400}}},
        {"properties": {"a": {"anyOf": []}, "model_dump": {}, "_x": {}, "field_1": {}}},
        {"required": [{"a": 1}], "properties": {"a": {}}},
    ],
)
def test_any_listed_schema_builds_and_only_validation_errors_come_out(schema: dict[str, Any]) -> None:
    model = argument_model("odd", schema)
    for value in ({}, {"a": 1}, {"a": "x"}, {"a": None}, {"a": {"b": {"b": {}}}}, {"model_dump": 1, "_x": 2}):
        try:
            model.model_validate(value)
        except ValidationError:
            pass

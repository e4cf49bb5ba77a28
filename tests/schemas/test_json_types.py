"""The two JSON-type helpers, one per job, and why they differ on a whole float such as `1.0`.

`normalise.pydantic_type_keyword` names the `type` Pydantic writes beside a `const`: by the
value's Python type, so `1.0` is a "number". Normalisation drops exactly that keyword, and
no other, as redundant. `compatibility.narrowest_json_type` names the narrowest JSON Schema
type accepting the value: JSON Schema types numbers by value, so `1.0` is an "integer", and
the diff rates `integer` → `const 1.0` as a restriction, not a widening.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic
import pytest

from openenvgen_schemas.compatibility import diff_schemas, narrowest_json_type
from openenvgen_schemas.normalise import normalise, pydantic_type_keyword

# (value, the type Pydantic writes beside it, the narrowest JSON Schema type accepting it)
VALUES = [
    (1.0, "number", "integer"),
    (1.5, "number", "number"),
    (True, "boolean", "boolean"),
    (None, "null", "null"),
    (1, "integer", "integer"),
    ("x", "string", "string"),
    ([], "array", "array"),
    ({}, "object", "object"),
]


@pytest.mark.parametrize(("value", "written", "narrowest"), VALUES, ids=[repr(v[0]) for v in VALUES])
def test_pydantic_type_keyword(value: Any, written: str, narrowest: str) -> None:
    assert pydantic_type_keyword(value) == written


@pytest.mark.parametrize(("value", "written", "narrowest"), VALUES, ids=[repr(v[0]) for v in VALUES])
def test_narrowest_json_type(value: Any, written: str, narrowest: str) -> None:
    assert narrowest_json_type(value) == narrowest


def test_pydantic_type_keyword_is_what_pydantic_writes() -> None:
    class Literals(pydantic.BaseModel):
        whole_float: Literal[1.0]  # type: ignore[valid-type]
        fraction: Literal[1.5]  # type: ignore[valid-type]
        integer: Literal[1]
        boolean: Literal[True]
        none: Literal[None]
        string: Literal["x"]

    properties = Literals.model_json_schema()["properties"]
    written = {name: (prop["const"], prop["type"]) for name, prop in properties.items()}
    assert written == {name: (const, pydantic_type_keyword(const)) for name, (const, _) in written.items()}
    assert written["whole_float"] == (1.0, "number")


def test_normalisation_drops_the_type_pydantic_writes_beside_a_const_and_keeps_any_other() -> None:
    assert normalise({"const": 1.0, "type": "number"}) == {"const": 1.0}
    assert normalise({"const": 1, "type": "integer"}) == {"const": 1}
    assert normalise({"enum": [True], "type": "boolean"}) == {"const": True}
    assert normalise({"const": 1.0, "type": "integer"}) == {"const": 1.0, "type": "integer"}
    assert normalise({"const": 1, "type": "number"}) == {"const": 1, "type": "number"}


def input_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c.impact, c.what) for c in diff_schemas(old, new, where="a", direction="input")]


def test_the_diff_types_a_whole_float_const_as_an_integer() -> None:
    # Were 1.0 a "number", `integer` → `const 1.0` would read as a widening.
    assert input_changes({"type": "integer"}, {"const": 1.0}) == [("major", "allowed values restricted to 1.0")]
    assert ("major", "type narrowed: number → integer") in input_changes({"type": "number"}, {"const": 1.0})
    assert input_changes({"const": 1}, {"const": 1.0}) == []

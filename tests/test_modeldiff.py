"""The model-level diff and its semver table, case by case (pure: no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from openenvgen.modeldiff import Change, ModelDiff, bump, diff_schemas, diff_specs
from openenvgen.spec import EnvDefaults, EnvMetadata, EnvSpec, ToolSpec


def obj(required: tuple[str, ...] = (), extra: dict[str, Any] | None = None, **props: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return {**schema, **(extra or {})}


S = {"type": "string"}
I = {"type": "integer"}
N = {"type": "number"}
B = {"type": "boolean"}
OPT_S = {"anyOf": [S, {"type": "null"}], "default": None}

# (id, old, new, [(impact, path, text in `what`)]) for an *input* (action / tool arguments).
INPUT_CASES = [
    ("identical", obj(("a",), a=S), obj(("a",), a=S), []),
    ("title only (normalised away)", obj(a={**S, "title": "A"}), obj(a={**S, "title": "Alpha"}), []),
    ("description only", obj(a={**S, "description": "x"}), obj(a={**S, "description": "y"}), [("patch", "action.a", "description changed")]),
    ("top-level description", {**obj(a=S), "description": "x"}, {**obj(a=S), "description": "y"}, [("patch", "action", "description changed")]),
    ("examples only", obj(a={**S, "examples": ["a"]}), obj(a={**S, "examples": ["b"]}), [("patch", "action.a", "examples changed")]),
    ("default changed", obj(a={**S, "default": "x"}), obj(a={**S, "default": "y"}), [("patch", "action.a", 'default changed: "x" → "y"')]),
    (
        "$ref renamed, same shape",
        {"$defs": {"T": obj(x=I)}, **obj(t={"$ref": "#/$defs/T"})},
        {"$defs": {"U": obj(x=I)}, **obj(t={"$ref": "#/$defs/U"})},
        [],
    ),
    ("optional field added", obj(("a",), a=S), obj(("a",), a=S, b=I), [("minor", "action.b", "optional field added (integer)")]),
    ("required field added", obj(("a",), a=S), obj(("a", "b"), a=S, b=I), [("major", "action.b", "required field added (integer)")]),
    ("field removed", obj(("a",), a=S, b=I), obj(("a",), a=S), [("major", "action.b", "field removed")]),
    ("optional field removed", obj(a=S, b=OPT_S), obj(a=S), [("major", "action.b", "field removed")]),
    ("newly required", obj(a=S), obj(("a",), a=S), [("major", "action.a", "field newly required")]),
    ("no longer required", obj(("a",), a=S), obj(a=S), [("minor", "action.a", "field no longer required")]),
    ("type narrowed: Optional[str] -> str", obj(a=OPT_S), obj(a=S), [("major", "action.a", "type narrowed: string | null → string"), ("patch", "action.a", "default changed")]),
    ("type widened: str -> Optional[str]", obj(a=S), obj(a=OPT_S), [("minor", "action.a", "type widened: string → string | null"), ("patch", "action.a", "default changed")]),
    ("type narrowed: number -> integer", obj(a=N), obj(a=I), [("major", "action.a", "type narrowed: number → integer")]),
    ("type widened: integer -> number", obj(a=I), obj(a=N), [("minor", "action.a", "type widened: integer → number")]),
    ("retyped: string -> integer", obj(a=S), obj(a=I), [("major", "action.a", "retyped: string → integer")]),
    ("type list narrowed", obj(a={"type": ["string", "integer"]}), obj(a=S), [("major", "action.a", "type narrowed: integer | string → string")]),
    ("enum value removed", obj(a={**S, "enum": ["x", "y"]}), obj(a={**S, "enum": ["x"]}), [("major", "action.a", 'allowed values removed: "y"')]),
    ("enum value added", obj(a={**S, "enum": ["x"]}), obj(a={**S, "enum": ["x", "y"]}), [("minor", "action.a", 'allowed values added: "y"')]),
    ("enum introduced", obj(a=S), obj(a={**S, "enum": ["x"]}), [("major", "action.a", "allowed values restricted")]),
    ("enum dropped", obj(a={**S, "enum": ["x"]}), obj(a=S), [("minor", "action.a", "no longer restricted")]),
    ("const changed", obj(a={"const": "x"}), obj(a={"const": "y"}), [("major", "action.a", 'removed: "x"'), ("minor", "action.a", 'added: "y"')]),
    ("minLength raised", obj(a={**S, "minLength": 1}), obj(a={**S, "minLength": 3}), [("major", "action.a", "constraint narrowed: minLength 1 → 3")]),
    ("minLength lowered", obj(a={**S, "minLength": 3}), obj(a={**S, "minLength": 1}), [("minor", "action.a", "constraint loosened: minLength 3 → 1")]),
    ("maxLength added", obj(a=S), obj(a={**S, "maxLength": 5}), [("major", "action.a", "constraint added: maxLength 5")]),
    ("maxLength removed", obj(a={**S, "maxLength": 5}), obj(a=S), [("minor", "action.a", "constraint removed: maxLength 5")]),
    ("maximum lowered", obj(a={**I, "maximum": 6}), obj(a={**I, "maximum": 5}), [("major", "action.a", "constraint narrowed: maximum 6 → 5")]),
    ("minimum lowered", obj(a={**I, "minimum": 0}), obj(a={**I, "minimum": -1}), [("minor", "action.a", "constraint loosened: minimum 0 → -1")]),
    ("pattern added", obj(a=S), obj(a={**S, "pattern": "^[a-z]+$"}), [("major", "action.a", "constraint added: pattern")]),
    ("pattern changed", obj(a={**S, "pattern": "a"}), obj(a={**S, "pattern": "b"}), [("major", "action.a", "constraint changed: pattern")]),
    ("pattern removed", obj(a={**S, "pattern": "a"}), obj(a=S), [("minor", "action.a", "constraint removed: pattern")]),
    ("format added", obj(a=S), obj(a={**S, "format": "uri"}), [("major", "action.a", "constraint added: format")]),
    ("extra fields forbidden", obj(a=S), obj(a=S, extra={"additionalProperties": False}), [("major", "action", "additional properties no longer allowed")]),
    ("extra fields allowed", obj(a=S, extra={"additionalProperties": False}), obj(a=S, extra={"additionalProperties": True}), [("minor", "action", "additional properties now allowed")]),
    (
        "nested required field added",
        obj(t=obj(("x",), x=I)),
        obj(t=obj(("x", "y"), x=I, y=I)),
        [("major", "action.t.y", "required field added")],
    ),
    (
        "nested through $ref and Optional",
        {"$defs": {"T": obj(x=I)}, **obj(t={"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]})},
        {"$defs": {"T": obj(x={**I, "minimum": 0})}, **obj(t={"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]})},
        [("major", "action.t.x", "constraint added: minimum 0")],
    ),
    ("array items retyped", obj(a={"type": "array", "items": S}), obj(a={"type": "array", "items": I}), [("major", "action.a[]", "retyped: string → integer")]),
    ("array minItems added", obj(a={"type": "array", "items": S}), obj(a={"type": "array", "items": S, "minItems": 1}), [("major", "action.a", "constraint added: minItems 1")]),
    (
        "plain -> Optional keeps its constraint",
        obj(a={**S, "minLength": 1}),
        obj(a={"anyOf": [{**S, "minLength": 1}, {"type": "null"}]}),
        [("minor", "action.a", "type widened")],
    ),
    ("unknown keyword is breaking", obj(a=S), obj(a={**S, "not": {"const": "x"}}), [("major", "action.a", "unclassified change to `not`")]),
    (
        "unpairable alternatives",
        obj(a={"anyOf": [obj(x=I), obj(y=I)]}),
        obj(a={"anyOf": [obj(x=I), obj(z=I)]}),
        [("major", "action.a", "alternatives changed")],
    ),
]


def _assert_changes(changes: list[Change], expected: list[tuple[str, str, str]]) -> None:
    got = [(c.impact, c.path, c.what) for c in changes]
    assert len(got) == len(expected), got
    for (impact, path, what), (e_impact, e_path, e_what) in zip(sorted(got), sorted(expected)):
        assert (impact, path) == (e_impact, e_path), got
        assert e_what in what, got


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in INPUT_CASES], ids=[c[0] for c in INPUT_CASES])
def test_input_schema_changes(old: dict, new: dict, expected: list) -> None:
    _assert_changes(diff_schemas(old, new, where="action", direction="input"), expected)


# Observations flow the other way: the server sends them, so accepting *more* is what breaks readers.
OUTPUT_CASES = [
    ("field added", obj(("a",), a=S), obj(("a", "b"), a=S, b=I), [("minor", "observation.b", "field added (integer)")]),
    ("field removed", obj(("a",), a=S, b=I), obj(("a",), a=S), [("major", "observation.b", "field removed")]),
    ("may now be absent", obj(("a",), a=S), obj(a=S), [("major", "observation.a", "field may now be absent")]),
    ("now always present", obj(a=S), obj(("a",), a=S), [("minor", "observation.a", "field now always present")]),
    ("type widened", obj(a=I), obj(a=N), [("major", "observation.a", "type widened")]),
    ("type narrowed", obj(a=OPT_S), obj(a={**S, "default": None}), [("minor", "observation.a", "type narrowed")]),
    ("enum value added", obj(a={**S, "enum": ["x"]}), obj(a={**S, "enum": ["x", "y"]}), [("major", "observation.a", "allowed values added")]),
    ("description", obj(a={**S, "description": "x"}), obj(a=S), [("patch", "observation.a", "description changed")]),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in OUTPUT_CASES], ids=[c[0] for c in OUTPUT_CASES])
def test_output_schema_changes(old: dict, new: dict, expected: list) -> None:
    _assert_changes(diff_schemas(old, new, where="observation", direction="output"), expected)


# --- whole specs ------------------------------------------------------------------------------

ACTION = obj(("message",), message=S, metadata={"type": "object", "additionalProperties": True})
OBSERVATION = obj(done=B, reward={"anyOf": [N, {"type": "null"}]}, text=S)
MCP_ACTION = obj(("type", "tool_name"), type={"const": "call_tool", "type": "string"}, tool_name=S, arguments={"type": "object"})


def spec(**changes: Any) -> EnvSpec:
    base: dict[str, Any] = dict(
        name="demo", env_id="openenv/demo", package="demo-openenv", metadata=EnvMetadata(description="A demo"),
        action_schema=ACTION, observation_schema=OBSERVATION,
    )
    return EnvSpec(**{**base, **changes})


def tool(name: str, schema: dict | None = None, description: str = "") -> ToolSpec:
    return ToolSpec(name=name, description=description, input_schema=schema or obj(("x",), x=I))


TOOLS = (tool("add", obj(("a", "b"), a=I, b=I), "Add two numbers"), tool("echo", obj(("message",), message=S)))

SPEC_CASES = [
    ("nothing", spec(), spec(), None, []),
    ("version only (regen's own bump)", spec(), spec(package_version="9.9.9"), None, []),
    ("metadata description", spec(), spec(metadata=EnvMetadata(description="Another")), "patch", [("patch", "metadata.description", "changed")]),
    ("metadata version", spec(), spec(metadata=EnvMetadata(description="A demo", version="2")), "patch", [("patch", "metadata.version", "changed")]),
    ("env defaults", spec(), spec(defaults=EnvDefaults(action_hint="Say hi")), "patch", [("patch", "defaults.action_hint", "changed")]),
    ("observation field added", spec(), spec(observation_schema=obj(done=B, reward=OBSERVATION["properties"]["reward"], text=S, score=I)), "minor", [("minor", "observation.score", "added")]),
    ("action field added and one removed", spec(), spec(action_schema=obj(("guess",), guess=S, metadata=ACTION["properties"]["metadata"])), "major", [("major", "action.message", "field removed"), ("major", "action.guess", "required field added")]),
    ("typed -> MCP", spec(), spec(action_schema=MCP_ACTION, tools=TOOLS), "major", [("major", "action", "action kind changed")]),
    ("tool added", spec(action_schema=MCP_ACTION, tools=TOOLS[:1]), spec(action_schema=MCP_ACTION, tools=TOOLS), "minor", [("minor", "tools.echo", "tool added")]),
    ("tool removed", spec(action_schema=MCP_ACTION, tools=TOOLS), spec(action_schema=MCP_ACTION, tools=TOOLS[:1]), "major", [("major", "tools.echo", "tool removed")]),
    (
        "tool description",
        spec(action_schema=MCP_ACTION, tools=TOOLS),
        spec(action_schema=MCP_ACTION, tools=(tool("add", TOOLS[0].input_schema, "Sum"), TOOLS[1])),
        "patch",
        [("patch", "tools.add", "description changed")],
    ),
    (
        "tool argument made required",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=I, b=I)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a", "b"), a=I, b=I)),)),
        "major",
        [("major", "tools.add.b", "field newly required")],
    ),
    (
        "tool optional argument added",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=I)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=I, b=I)),)),
        "minor",
        [("minor", "tools.add.b", "optional field added")],
    ),
    (
        "tool argument retyped",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=I)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=S)),)),
        "major",
        [("major", "tools.add.a", "retyped: integer → string")],
    ),
]


@pytest.mark.parametrize(("old", "new", "impact", "expected"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES])
def test_spec_changes(old: EnvSpec, new: EnvSpec, impact: str | None, expected: list) -> None:
    diff = diff_specs(old, new)
    assert diff.impact == impact
    assert bool(diff) == (impact is not None)
    _assert_changes(list(diff.changes), expected)


def test_the_largest_impact_wins_and_renders() -> None:
    diff = ModelDiff((Change("patch", "a", "x"), Change("major", "b", "y"), Change("minor", "c", "z")))
    assert diff.impact == "major"
    assert diff.lines() == ["patch  a: x", "major  b: y", "minor  c: z"]
    assert diff.markdown().splitlines()[1] == "- **major** `b`: y"
    assert ModelDiff().impact is None and not ModelDiff()


@pytest.mark.parametrize(
    ("version", "impact", "expected"),
    [
        ("0.1.0", None, "0.1.0"),
        ("0.1.0", "patch", "0.1.1"),
        ("0.1.0", "minor", "0.2.0"),
        ("0.1.0", "major", "1.0.0"),
        ("1.2.3", "patch", "1.2.4"),
        ("1.2.3", "minor", "1.3.0"),
        ("1.2.3", "major", "2.0.0"),
        ("10.20.30", "minor", "10.21.0"),
    ],
)
def test_bump(version: str, impact: str | None, expected: str) -> None:
    assert bump(version, impact) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["1.0", "1.0.0rc1", "v1.0.0", ""])
def test_bump_refuses_what_is_not_semver(version: str) -> None:
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        bump(version, "patch")

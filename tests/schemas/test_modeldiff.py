"""The model-level diff and its semver table, case by case (pure: no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from openenvgen.spec import EnvDefaults, EnvMetadata, EnvSpec, ToolSpec
from openenvgen_schemas.compatibility import diff_schemas
from openenvgen_schemas.docstrings import documented_args, tool_summary
from openenvgen_schemas.modeldiff import Change, ModelDiff, bump, diff_specs


def obj(required: tuple[str, ...] = (), extra: dict[str, Any] | None = None, **props: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return {**schema, **(extra or {})}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
OPT_STR = {"anyOf": [STR, {"type": "null"}], "default": None}

# (id, old, new, [(impact, path, text in `what`)]) for an *input* (action / tool arguments).
INPUT_CASES = [
    ("identical", obj(("a",), a=STR), obj(("a",), a=STR), []),
    ("title only (normalised away)", obj(a={**STR, "title": "A"}), obj(a={**STR, "title": "Alpha"}), []),
    (
        "description only",
        obj(a={**STR, "description": "x"}),
        obj(a={**STR, "description": "y"}),
        [("patch", "action.a", 'description changed: "x" → "y"')],
    ),
    (
        "description re-wrapped (whitespace only)",
        obj(a={**STR, "description": "one two\n  three"}),
        obj(a={**STR, "description": "one  two three"}),
        [],
    ),
    (
        "title and re-wrapped description in unevaluatedProperties (normalised away)",
        {**obj(a=STR), "unevaluatedProperties": {**INT, "title": "A", "description": "one\n two"}},
        {**obj(a=STR), "unevaluatedProperties": {**INT, "title": "B", "description": "one two"}},
        [],
    ),
    (
        "top-level description",
        {**obj(a=STR), "description": "x"},
        {**obj(a=STR), "description": "y"},
        [("patch", "action", "description changed")],
    ),
    (
        "examples only",
        obj(a={**STR, "examples": ["a"]}),
        obj(a={**STR, "examples": ["b"]}),
        [("patch", "action.a", "examples changed")],
    ),
    (
        "default changed",
        obj(a={**STR, "default": "x"}),
        obj(a={**STR, "default": "y"}),
        [("patch", "action.a", 'default changed: "x" → "y"')],
    ),
    (
        "$ref renamed, same shape",
        {"$defs": {"T": obj(x=INT)}, **obj(t={"$ref": "#/$defs/T"})},
        {"$defs": {"U": obj(x=INT)}, **obj(t={"$ref": "#/$defs/U"})},
        [],
    ),
    (
        "optional field added",
        obj(("a",), a=STR),
        obj(("a",), a=STR, b=INT),
        [("minor", "action.b", "optional field added (integer)")],
    ),
    (
        "required field added",
        obj(("a",), a=STR),
        obj(("a", "b"), a=STR, b=INT),
        [("major", "action.b", "required field added (integer)")],
    ),
    ("field removed", obj(("a",), a=STR, b=INT), obj(("a",), a=STR), [("major", "action.b", "field removed")]),
    ("optional field removed", obj(a=STR, b=OPT_STR), obj(a=STR), [("major", "action.b", "field removed")]),
    ("newly required", obj(a=STR), obj(("a",), a=STR), [("major", "action.a", "field newly required")]),
    ("no longer required", obj(("a",), a=STR), obj(a=STR), [("minor", "action.a", "field no longer required")]),
    (
        "type narrowed: Optional[str] -> str",
        obj(a=OPT_STR),
        obj(a=STR),
        [("major", "action.a", "type narrowed: string | null → string"), ("patch", "action.a", "default changed")],
    ),
    (
        "type widened: str -> Optional[str]",
        obj(a=STR),
        obj(a=OPT_STR),
        [("minor", "action.a", "type widened: string → string | null"), ("patch", "action.a", "default changed")],
    ),
    (
        "type narrowed: number -> integer",
        obj(a=NUM),
        obj(a=INT),
        [("major", "action.a", "type narrowed: number → integer")],
    ),
    (
        "type widened: integer -> number",
        obj(a=INT),
        obj(a=NUM),
        [("minor", "action.a", "type widened: integer → number")],
    ),
    ("retyped: string -> integer", obj(a=STR), obj(a=INT), [("major", "action.a", "retyped: string → integer")]),
    (
        "type list narrowed",
        obj(a={"type": ["string", "integer"]}),
        obj(a=STR),
        [("major", "action.a", "type narrowed: integer | string → string")],
    ),
    (
        "enum value removed",
        obj(a={**STR, "enum": ["x", "y"]}),
        obj(a={**STR, "enum": ["x"]}),
        [("major", "action.a", 'allowed values removed: "y" ("x", "y" → "x")')],
    ),
    (
        "enum value added",
        obj(a={**STR, "enum": ["x"]}),
        obj(a={**STR, "enum": ["x", "y"]}),
        [("minor", "action.a", 'allowed values added: "y" ("x" → "x", "y")')],
    ),
    (
        "enum introduced",
        obj(a=STR),
        obj(a={**STR, "enum": ["x"]}),
        [("major", "action.a", "allowed values restricted")],
    ),
    (
        "enum dropped",
        obj(a={**STR, "enum": ["x"]}),
        obj(a=STR),
        [("minor", "action.a", 'no longer restricted (were "x")')],
    ),
    (
        "const changed",
        obj(a={"const": "x"}),
        obj(a={"const": "y"}),
        [("major", "action.a", 'removed: "x"'), ("minor", "action.a", 'added: "y"')],
    ),
    (
        "minLength raised",
        obj(a={**STR, "minLength": 1}),
        obj(a={**STR, "minLength": 3}),
        [("major", "action.a", "constraint narrowed: minLength 1 → 3")],
    ),
    (
        "minLength lowered",
        obj(a={**STR, "minLength": 3}),
        obj(a={**STR, "minLength": 1}),
        [("minor", "action.a", "constraint loosened: minLength 3 → 1")],
    ),
    (
        "maxLength added",
        obj(a=STR),
        obj(a={**STR, "maxLength": 5}),
        [("major", "action.a", "constraint added: maxLength 5")],
    ),
    (
        "maxLength removed",
        obj(a={**STR, "maxLength": 5}),
        obj(a=STR),
        [("minor", "action.a", "constraint removed: maxLength 5")],
    ),
    (
        "maximum lowered",
        obj(a={**INT, "maximum": 6}),
        obj(a={**INT, "maximum": 5}),
        [("major", "action.a", "constraint narrowed: maximum 6 → 5")],
    ),
    (
        "minimum lowered",
        obj(a={**INT, "minimum": 0}),
        obj(a={**INT, "minimum": -1}),
        [("minor", "action.a", "constraint loosened: minimum 0 → -1")],
    ),
    (
        "pattern added",
        obj(a=STR),
        obj(a={**STR, "pattern": "^[a-z]+$"}),
        [("major", "action.a", "constraint added: pattern")],
    ),
    (
        "pattern changed",
        obj(a={**STR, "pattern": "a"}),
        obj(a={**STR, "pattern": "b"}),
        [("major", "action.a", "constraint changed: pattern")],
    ),
    (
        "pattern removed",
        obj(a={**STR, "pattern": "a"}),
        obj(a=STR),
        [("minor", "action.a", "constraint removed: pattern")],
    ),
    ("format added", obj(a=STR), obj(a={**STR, "format": "uri"}), [("major", "action.a", "constraint added: format")]),
    (
        "extra fields forbidden",
        obj(a=STR),
        obj(a=STR, extra={"additionalProperties": False}),
        [("major", "action", "additional properties no longer allowed")],
    ),
    (
        "extra fields allowed",
        obj(a=STR, extra={"additionalProperties": False}),
        obj(a=STR, extra={"additionalProperties": True}),
        [("minor", "action", "additional properties now allowed")],
    ),
    (
        "a nested object starts forbidding extra keys (a sender's extra key now fails to build)",
        obj(t=obj(("x",), x=INT)),
        obj(t=obj(("x",), x=INT, extra={"additionalProperties": False})),
        [("major", "action.t", "additional properties no longer allowed")],
    ),
    (
        "a nested object stops forbidding extra keys",
        obj(t=obj(("x",), x=INT, extra={"additionalProperties": False})),
        obj(t=obj(("x",), x=INT)),
        [("minor", "action.t", "additional properties now allowed")],
    ),
    (
        "no longer required, with a default (inputs: optional either way)",
        obj(("a",), a=INT),
        obj(a={**INT, "default": None}),
        [("minor", "action.a", "field no longer required"), ("patch", "action.a", "default changed")],
    ),
    (
        "nested required field added",
        obj(t=obj(("x",), x=INT)),
        obj(t=obj(("x", "y"), x=INT, y=INT)),
        [("major", "action.t.y", "required field added")],
    ),
    (
        "nested through $ref and Optional",
        {"$defs": {"T": obj(x=INT)}, **obj(t={"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]})},
        {"$defs": {"T": obj(x={**INT, "minimum": 0})}, **obj(t={"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]})},
        [("major", "action.t.x", "constraint added: minimum 0")],
    ),
    (
        "array items retyped",
        obj(a={"type": "array", "items": STR}),
        obj(a={"type": "array", "items": INT}),
        [("major", "action.a[]", "retyped: string → integer")],
    ),
    (
        "array minItems added",
        obj(a={"type": "array", "items": STR}),
        obj(a={"type": "array", "items": STR, "minItems": 1}),
        [("major", "action.a", "constraint added: minItems 1")],
    ),
    (
        "plain -> Optional keeps its constraint",
        obj(a={**STR, "minLength": 1}),
        obj(a={"anyOf": [{**STR, "minLength": 1}, {"type": "null"}]}),
        [("minor", "action.a", "type widened")],
    ),
    (
        "unknown keyword is breaking",
        obj(a=STR),
        obj(a={**STR, "not": {"const": "x"}}),
        [("major", "action.a", "unclassified change to `not`")],
    ),
    (
        "unpairable alternatives",
        obj(a={"anyOf": [obj(x=INT), obj(y=INT)]}),
        obj(a={"anyOf": [obj(x=INT), obj(z=INT)]}),
        [("major", "action.a", "alternatives changed")],
    ),
]


def _assert_changes(changes: list[Change], expected: list[tuple[str, str, str]]) -> None:
    got = [(c.impact, c.path, c.what) for c in changes]
    assert len(got) == len(expected), got
    for (impact, path, what), (e_impact, e_path, e_what) in zip(sorted(got), sorted(expected), strict=True):
        assert (impact, path) == (e_impact, e_path), got
        assert e_what in what, got


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in INPUT_CASES], ids=[c[0] for c in INPUT_CASES])
def test_input_schema_changes(old: dict, new: dict, expected: list) -> None:
    _assert_changes(diff_schemas(old, new, where="action", direction="input"), expected)


# Observations flow the other way: the server sends them, so accepting *more* is what breaks readers.
OUTPUT_CASES = [
    (
        "field added",
        obj(("a",), a=STR),
        obj(("a", "b"), a=STR, b=INT),
        [("minor", "observation.b", "field added (integer)")],
    ),
    ("field removed", obj(("a",), a=STR, b=INT), obj(("a",), a=STR), [("major", "observation.b", "field removed")]),
    ("may now be absent", obj(("a",), a=STR), obj(a=STR), [("major", "observation.a", "field may now be absent")]),
    # A field a reader finds left out holds its default, else MISSING (`T | MISSING`).
    (
        "no longer required, defaulted to a value of its own type: old readers read an int still",
        obj(("a",), a=INT),
        obj(a={**INT, "default": 0}),
        [
            ("minor", "observation.a", "field no longer required (defaults to 0)"),
            ("patch", "observation.a", "default changed: absent → 0"),
        ],
    ),
    (
        "no longer required, defaulted to one of its listed values",
        obj(("a",), a={**STR, "enum": ["x", "y"]}),
        obj(a={**STR, "enum": ["x", "y"], "default": "y"}),
        [("minor", "observation.a", "field no longer required"), ("patch", "observation.a", "default changed")],
    ),
    (
        "no longer required, defaulted to a value it never held",
        obj(("a",), a={**STR, "enum": ["x", "y"]}),
        obj(a={**STR, "enum": ["x", "y"], "default": "z"}),
        [
            ("major", "observation.a", 'field may now be absent (then "z", not a value it held before)'),
            ("patch", "observation.a", "default changed"),
        ],
    ),
    (
        "optional with a null default (`int` → `int | None = None`) stays major",
        obj(("a",), a=INT),
        obj(a={"anyOf": [INT, {"type": "null"}], "default": None}),
        [
            ("major", "observation.a", "field may now be absent (then null, not a value it held before)"),
            ("major", "observation.a", "type widened: integer → integer | null"),
            ("patch", "observation.a", "default changed"),
        ],
    ),
    (
        "a null default its type leaves out (`a: int = None`) is major",
        obj(("a",), a=INT),
        obj(a={**INT, "default": None}),
        [("major", "observation.a", "field may now be absent (then null"), ("patch", "observation.a", "default")],
    ),
    (
        "default removed (`int = 0` → `int | MISSING`)",
        obj(a={**INT, "default": 0}),
        obj(a=INT),
        [
            ("major", "observation.a", "field may now be absent (its default removed)"),
            ("patch", "observation.a", "default changed"),
        ],
    ),
    (
        "default changed, of the same type",
        obj(a={**INT, "default": 0}),
        obj(a={**INT, "default": 1}),
        [("patch", "observation.a", "default changed: 0 → 1")],
    ),
    (
        "a default added (`int | MISSING` → `int = 0`)",
        obj(a=INT),
        obj(a={**INT, "default": 0}),
        [("minor", "observation.a", "field now always present"), ("patch", "observation.a", "default changed")],
    ),
    (
        "required again, its default dropped",
        obj(a={**INT, "default": 0}),
        obj(("a",), a=INT),
        [("minor", "observation.a", "field now always present (required)"), ("patch", "observation.a", "default")],
    ),
    (
        "a nested object stops forbidding extra keys: readers read the same fields",
        obj(t=obj(("x",), x=INT, extra={"additionalProperties": False})),
        obj(t=obj(("x",), x=INT)),
        [("minor", "observation.t", "additional properties now allowed")],
    ),
    (
        "a nested object starts forbidding extra keys: readers read the same fields",
        obj(t=obj(("x",), x=INT)),
        obj(t=obj(("x",), x=INT, extra={"additionalProperties": False})),
        [("minor", "observation.t", "additional properties no longer allowed")],
    ),
    (
        "a nested map's values no longer constrained: a reader may get any value",
        obj(t={"type": "object", "additionalProperties": INT}),
        obj(t={"type": "object"}),
        [("major", "observation.t", "additional properties no longer constrained")],
    ),
    ("now always present", obj(a=STR), obj(("a",), a=STR), [("minor", "observation.a", "field now always present")]),
    ("type widened", obj(a=INT), obj(a=NUM), [("major", "observation.a", "type widened")]),
    ("type narrowed", obj(a=OPT_STR), obj(a={**STR, "default": None}), [("minor", "observation.a", "type narrowed")]),
    (
        "enum value added",
        obj(a={**STR, "enum": ["x"]}),
        obj(a={**STR, "enum": ["x", "y"]}),
        [("major", "observation.a", "allowed values added")],
    ),
    (
        "description",
        obj(a={**STR, "description": "x"}),
        obj(a=STR),
        [("patch", "observation.a", "description changed")],
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in OUTPUT_CASES], ids=[c[0] for c in OUTPUT_CASES])
def test_output_schema_changes(old: dict, new: dict, expected: list) -> None:
    _assert_changes(diff_schemas(old, new, where="observation", direction="output"), expected)


# --- whole specs ------------------------------------------------------------------------------

ACTION = obj(("message",), message=STR, metadata={"type": "object", "additionalProperties": True})
OBSERVATION = obj(done=BOOL, reward={"anyOf": [NUM, {"type": "null"}]}, text=STR)
MCP_ACTION = obj(
    ("type", "tool_name"), type={"const": "call_tool", "type": "string"}, tool_name=STR, arguments={"type": "object"}
)


def member(tag: str, required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    kind = {"const": tag, "default": tag, "type": "string"}
    return {**obj(required, kind=kind, **props), "title": tag.capitalize(), "additionalProperties": False}


def union(*members: dict[str, Any]) -> dict[str, Any]:
    """A discriminated union action, as Pydantic writes it."""
    defs = {m["title"]: m for m in members}
    return {
        "$defs": defs,
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "discriminator": {
            "propertyName": "kind",
            "mapping": {m["properties"]["kind"]["const"]: f"#/$defs/{m['title']}" for m in members},
        },
    }


MOVE = member("move", ("dx",), dx=INT)
SAY = member("say", ("text",), text=STR)


def spec(**changes: Any) -> EnvSpec:
    base: dict[str, Any] = dict(
        name="demo",
        env_id="openenv/demo",
        package="demo-openenv",
        metadata=EnvMetadata(description="A demo"),
        action_schema=ACTION,
        observation_schema=OBSERVATION,
    )
    return EnvSpec(**{**base, **changes})


def tool(name: str, schema: dict | None = None, description: str = "") -> ToolSpec:
    return ToolSpec(name=name, description=description, input_schema=schema or obj(("x",), x=INT))


TOOLS = (tool("add", obj(("a", "b"), a=INT, b=INT), "Add two numbers"), tool("echo", obj(("message",), message=STR)))

SPEC_CASES = [
    ("nothing", spec(), spec(), None, []),
    ("version only (regen's own bump)", spec(), spec(package_version="9.9.9"), None, []),
    (
        "metadata description",
        spec(),
        spec(metadata=EnvMetadata(description="Another")),
        "patch",
        [("patch", "metadata.description", "changed")],
    ),
    (
        "metadata version",
        spec(),
        spec(metadata=EnvMetadata(description="A demo", version="2")),
        "patch",
        [("patch", "metadata.version", "changed")],
    ),
    (
        "env defaults",
        spec(),
        spec(defaults=EnvDefaults(action_hint="Say hi")),
        "patch",
        [("patch", "defaults.action_hint", 'changed: "" → "Say hi"')],
    ),
    # Identity: the package may now point at another environment.
    (
        "env id",
        spec(),
        spec(env_id="openenv/chess_env"),
        "major",
        [("major", "env_id", '"openenv/demo" → "openenv/chess_env" (a different environment?)')],
    ),
    (
        "env name",
        spec(),
        spec(name="chess"),
        "major",
        [("major", "name", '"demo" → "chess" (a different environment?)')],
    ),
    (
        "name from /metadata",
        spec(metadata=EnvMetadata(name="Connect4Environment", description="A demo")),
        spec(metadata=EnvMetadata(name="ChessEnvironment", description="A demo")),
        "major",
        [("major", "metadata.name", '"Connect4Environment" → "ChessEnvironment" (a different environment?)')],
    ),
    (
        "observation field added",
        spec(),
        spec(observation_schema=obj(done=BOOL, reward=OBSERVATION["properties"]["reward"], text=STR, score=INT)),
        "minor",
        [("minor", "observation.score", "added")],
    ),
    (
        "action field added and one removed",
        spec(),
        spec(action_schema=obj(("guess",), guess=STR, metadata=ACTION["properties"]["metadata"])),
        "major",
        [("major", "action.message", "field removed"), ("major", "action.guess", "required field added")],
    ),
    (
        "typed -> MCP",
        spec(),
        spec(action_schema=MCP_ACTION, tools=TOOLS),
        "major",
        [("major", "action", "action kind changed")],
    ),
    (
        "tool added",
        spec(action_schema=MCP_ACTION, tools=TOOLS[:1]),
        spec(action_schema=MCP_ACTION, tools=TOOLS),
        "minor",
        [("minor", "tools.echo", "tool added")],
    ),
    (
        "tool removed",
        spec(action_schema=MCP_ACTION, tools=TOOLS),
        spec(action_schema=MCP_ACTION, tools=TOOLS[:1]),
        "major",
        [("major", "tools.echo", "tool removed")],
    ),
    (
        "tool description",
        spec(action_schema=MCP_ACTION, tools=TOOLS),
        spec(action_schema=MCP_ACTION, tools=(tool("add", TOOLS[0].input_schema, "Sum"), TOOLS[1])),
        "patch",
        [("patch", "tools.add", 'description changed: "Add two numbers" → "Sum"')],
    ),
    (
        "tool argument made required",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=INT, b=INT)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a", "b"), a=INT, b=INT)),)),
        "major",
        [("major", "tools.add.b", "field newly required")],
    ),
    (
        "tool optional argument added",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=INT)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=INT, b=INT)),)),
        "minor",
        [("minor", "tools.add.b", "optional field added")],
    ),
    (
        "tool argument retyped",
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=INT)),)),
        spec(action_schema=MCP_ACTION, tools=(tool("add", obj(("a",), a=STR)),)),
        "major",
        [("major", "tools.add.a", "retyped: integer → string")],
    ),
    # Union actions: members paired by discriminator value (else title).
    (
        "union member added",
        spec(action_schema=union(MOVE)),
        spec(action_schema=union(MOVE, SAY)),
        "minor",
        [("minor", "action[say]", "union member added")],
    ),
    (
        "union member removed",
        spec(action_schema=union(MOVE, SAY)),
        spec(action_schema=union(SAY)),
        "major",
        [("major", "action[move]", "union member removed")],
    ),
    (
        "union member's field narrowed",
        spec(action_schema=union(MOVE, SAY)),
        spec(action_schema=union(member("move", ("dx",), dx={**INT, "maximum": 1}), SAY)),
        "major",
        [("major", "action[move].dx", "constraint added: maximum 1")],
    ),
    (
        "union members reordered and renamed",
        spec(action_schema=union(MOVE, SAY)),
        spec(action_schema=union(SAY, {**MOVE, "title": "Step"})),
        None,
        [],
    ),
    (
        "plain union (anyOf, paired by title)",
        spec(action_schema={"anyOf": [MOVE, SAY]}),
        spec(action_schema={"anyOf": [MOVE]}),
        "major",
        [("major", "action[say]", "union member removed")],
    ),
    (
        "discriminator renamed",
        spec(action_schema=union(MOVE, SAY)),
        spec(action_schema={**union(MOVE, SAY), "discriminator": {"propertyName": "op"}}),
        "major",
        [("major", "action", "discriminator changed")],
    ),
    (
        "typed action -> union holding it",
        spec(action_schema=MOVE),
        spec(action_schema=union(MOVE, SAY)),
        "minor",
        [("minor", "action[say]", "union member added")],
    ),
    # The reset observation: an output; absent means the step observation.
    (
        "the reset observation is the step's on both sides: each change reported once",
        spec(reset_observation_schema=OBSERVATION),
        spec(observation_schema=obj(done=BOOL, text=STR), reset_observation_schema=obj(done=BOOL, text=STR)),
        "major",
        [("major", "observation.reward", "field removed")],
    ),
    (
        "the reset observation served as the step's in one version only",
        spec(),
        spec(observation_schema=obj(done=BOOL, text=STR), reset_observation_schema=obj(done=BOOL, text=STR)),
        "major",
        [("major", "observation.reward", "field removed")],
    ),
    ("reset observation served, same as the step's", spec(), spec(reset_observation_schema=OBSERVATION), None, []),
    (
        "reset observation field added",
        spec(),
        spec(reset_observation_schema=obj(done=BOOL, reward=OBSERVATION["properties"]["reward"], text=STR, target=INT)),
        "minor",
        [("minor", "reset_observation.target", "optional field added (integer)")],
    ),
    (
        "reset observation no longer served, its field gone",
        spec(
            reset_observation_schema=obj(
                ("target",), done=BOOL, reward=OBSERVATION["properties"]["reward"], text=STR, target=INT
            )
        ),
        spec(),
        "major",
        [("major", "reset_observation.target", "field removed")],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "impact", "expected"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES]
)
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
    assert bump(version, impact) == expected


@pytest.mark.parametrize("version", ["1.0", "1.0.0rc1", "v1.0.0", ""])
def test_bump_refuses_what_is_not_semver(version: str) -> None:
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        bump(version, "patch")


def test_value_changes_carry_the_full_old_and_new_values() -> None:
    diff = diff_specs(
        spec(metadata=EnvMetadata(description="A demo")), spec(metadata=EnvMetadata(description="Another"))
    )
    (change,) = diff.changes
    assert (change.old, change.new) == ("A demo", "Another")
    assert change.as_json() == {
        "impact": "patch",
        "path": "metadata.description",
        "what": 'changed: "A demo" → "Another"',
        "old": "A demo",
        "new": "Another",
        "warning": False,
    }
    (enum,) = diff_schemas(
        obj(a={**STR, "enum": ["x", "y"]}), obj(a={**STR, "enum": ["x"]}), where="action", direction="input"
    )
    assert (enum.old, enum.new) == (["x", "y"], ["x"])
    # Structural changes have no values.
    (removed,) = diff_schemas(obj(a=STR, b=STR), obj(a=STR), where="action", direction="input")
    assert (removed.old, removed.new) == (None, None)


def test_long_texts_are_shortened_around_their_first_difference() -> None:
    common = "Submit one move for the current position of the board. " * 3
    before, after = common + "Moves use UCI notation, e.g. e2e4.", common + "Moves use SAN notation, e.g. Nf3."
    (change,) = diff_schemas(
        obj(a={**STR, "description": before}), obj(a={**STR, "description": after}), where="action", direction="input"
    )
    shown_old, shown_new = change.what.removeprefix("description changed: ").split(" → ")
    assert len(shown_old) < 90 and len(shown_new) < 90
    assert shown_old.startswith('"…') and "UCI notation" in shown_old
    assert shown_new.startswith('"…') and "SAN notation" in shown_new
    assert (change.old, change.new) == (before, after)  # in full for --json


def test_identity_changes_are_warnings() -> None:
    diff = diff_specs(
        spec(), spec(env_id="openenv/chess_env", metadata=EnvMetadata(name="ChessEnvironment", description="A demo"))
    )
    assert diff.impact == "major"
    assert diff.warnings == [
        'env_id: changed: "openenv/demo" → "openenv/chess_env" (a different environment?)',
        'metadata.name: changed: "" → "ChessEnvironment" (a different environment?)',
    ]
    assert [c.as_json()["warning"] for c in diff.changes] == [True, True]


# --- tool lists as different FastMCP versions render them -------------------------------------

# echo_env's `echo_message` as `POST /mcp tools/list` lists it, served by the env's own uv.lock
# (FastMCP 3.1.1): the whole docstring as the description, the argument undescribed ...
ECHO_MESSAGE_FASTMCP_3_1 = tool(
    "echo_message",
    {
        "additionalProperties": False,
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
        "type": "object",
    },
    "Echo back the provided message.\n\nArgs:\n    message: The message to echo back\n\n"
    "Returns:\n    The same message that was provided",
)
# ... and as the catalog captured it (FastMCP 3.4.11): the summary, the Args text moved into the argument.
ECHO_MESSAGE_FASTMCP_3_4 = tool(
    "echo_message",
    {
        "additionalProperties": False,
        "properties": {"message": {"type": "string", "description": "The message to echo back"}},
        "required": ["message"],
        "type": "object",
    },
    "Echo back the provided message.",
)


def _mcp(*tools: ToolSpec) -> EnvSpec:
    return spec(action_schema=MCP_ACTION, tools=tools)


@pytest.mark.parametrize(
    "old, new",
    [(ECHO_MESSAGE_FASTMCP_3_4, ECHO_MESSAGE_FASTMCP_3_1), (ECHO_MESSAGE_FASTMCP_3_1, ECHO_MESSAGE_FASTMCP_3_4)],
)
def test_the_same_tool_rendered_by_another_fastmcp_version_is_no_drift(old: ToolSpec, new: ToolSpec) -> None:
    assert not diff_specs(_mcp(old), _mcp(new))


def test_a_real_summary_change_is_reported_with_its_text_across_fastmcp_versions() -> None:
    changed = ECHO_MESSAGE_FASTMCP_3_1.model_copy(
        update={"description": ECHO_MESSAGE_FASTMCP_3_1.description.replace("the provided message", "the given text")}
    )
    diff = diff_specs(_mcp(ECHO_MESSAGE_FASTMCP_3_4), _mcp(changed))
    assert diff.lines() == [
        'patch  tools.echo_message: description changed: "Echo back the provided message." '
        '→ "Echo back the given text."'
    ]


def test_a_real_argument_text_change_is_reported_across_fastmcp_versions() -> None:
    changed = ECHO_MESSAGE_FASTMCP_3_1.model_copy(
        update={
            "description": ECHO_MESSAGE_FASTMCP_3_1.description.replace("The message to echo back", "What to repeat")
        }
    )
    diff = diff_specs(_mcp(ECHO_MESSAGE_FASTMCP_3_4), _mcp(changed))
    assert diff.lines() == [
        'patch  tools.echo_message.message: description changed: "The message to echo back" → "What to repeat"'
    ]


@pytest.mark.parametrize(
    ("description", "summary", "args"),
    [
        ("Echo it.", "Echo it.", {}),
        ("  Echo\n  it.  ", "Echo it.", {}),
        (
            "Go.\n\nArgs:\n    a (int): alpha\n        more alpha\n    b: beta\n\nRaises:\n    ValueError: never",
            "Go.",
            {"a": "alpha more alpha", "b": "beta"},
        ),
        (
            "Add.\n\nParameters\n----------\na : int\n    First\n    number.\nb : int\n    Second.\n\n"
            "Returns\n-------\nint\n",
            "Add.",
            {"a": "First number.", "b": "Second."},
        ),
        ("Do it.\n:param x: the x\n   value\n:returns: y", "Do it.", {"x": "the x value"}),
        (
            "Keep: colons in prose.\nArgs here are not a section.",
            "Keep: colons in prose. Args here are not a section.",
            {},
        ),
    ],
    ids=["plain", "whitespace", "google", "numpy", "sphinx", "prose"],
)
def test_docstring_sections(description: str, summary: str, args: dict) -> None:
    assert tool_summary(description) == summary
    assert documented_args(description) == args

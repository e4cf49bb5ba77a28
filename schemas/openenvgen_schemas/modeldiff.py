"""Model-level diff between two EnvSpecs, and the semver impact of each change. Pure.

`diff_specs(old, new)` compares what a generated package exposes: the action schema, the
MCP tool list (names, descriptions, argument schemas), the observation schema, the env's
metadata and defaults. Schemas are compared after `openenvgen_schemas.normalise` (local
`$ref`s inlined, `title`s dropped), keyword by keyword, so each difference gets a path
(`action.target.x`, `tools.add.a`, `observation.board`) and an impact:

| impact | inputs (action, tool arguments)                  | outputs (observation)                 |
|--------|--------------------------------------------------|---------------------------------------|
| major  | required field added; field or tool removed;     | field removed; field may now be       |
|        | optional field now required; type or constraint  | absent; type or constraint widened;   |
|        | narrowed; incompatible retype; typed ↔ MCP       | incompatible retype                   |
| minor  | optional field or tool added; required field now | field added; field now always         |
|        | optional; type or constraint widened             | present; type or constraint narrowed  |
| patch  | descriptions, examples, defaults, metadata, env defaults                                 |

A union action (`oneOf`/`anyOf` of object models) is compared member by member, paired by
discriminator value or title (`action[call_tool].tool_name`): a member added is minor, one
removed is major. The reset observation (`reset_observation`, where the server serves one;
else the step observation) is an output like the observation.

A change of the env's identity (its name, package, env id, or the name `/metadata` reports)
is rated major and flagged as a warning: the package may be pointed at a different
environment. Value changes carry the old and the new value (`Change.old`/`Change.new`);
their one-line text shows both, shortened around the first difference when long.

**Rendering noise is not drift.** The same environment served with another FastMCP
version lists its tools differently: FastMCP 3.1 sends a tool's whole docstring as its
description (summary, `Args:`, `Returns:` sections, indentation and all) and leaves the
arguments undescribed; FastMCP 3.4 sends only the summary and moves each `Args:` entry into
that argument's `description`. So before comparing, (1) every description is compared with
its whitespace collapsed; (2) a tool's description is reduced to its summary, the text
before the first docstring section heading (`Args:`, `Returns:`, `Raises:`, ... in Google
style, a heading underlined with dashes in NumPy style, or a `:param ...:` field in Sphinx
style); (3) an argument without a `description` takes the one its tool's docstring
documents in an `Args:`/`Parameters` section. What is left, a different summary or a
different argument text, is reported with its old and new text.

Inputs are what the model sends and the package validates, so accepting *less* breaks
callers; outputs are what the server sends back, so *more* variety breaks readers. A
change this module cannot classify (an unknown validation keyword, alternatives that
cannot be paired) counts as major: under-reporting a break is the expensive mistake.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from typing import Protocol

from openenvgen_schemas.normalise import UNION_KEYS, UnionMember, normalise, tag_value, union_members


class Tool(Protocol):
    name: str
    description: str
    input_schema: dict[str, Any]


class Interface(Protocol):
    """What a model exchanges with an env: the action kind and schema, the MCP tools and
    the observation schema (an EnvSpec, or the same read from a live server)."""

    is_mcp: bool
    action_schema: dict[str, Any]
    observation_schema: dict[str, Any]
    tools: Iterable[Tool] | None
    # Also read, when present: `reset_observation_schema` (None: reset returns a step observation).


def is_mcp_action(action_schema: dict[str, Any]) -> bool:
    """MCP envs take `CallToolAction`; its title may be a subclass name, so look at the
    `type` discriminator's const instead."""
    type_field = (action_schema.get("properties") or {}).get("type")
    return isinstance(type_field, dict) and type_field.get("const") == "call_tool"


class Spec(Interface, Protocol):
    """An EnvSpec: the interface plus the env's identity, metadata and defaults."""

    name: str
    package: str
    env_id: str
    metadata: Any
    defaults: Any

Impact = Literal["patch", "minor", "major"]
Direction = Literal["input", "output"]
RANK: dict[str, int] = {"patch": 0, "minor": 1, "major": 2}

# Keywords that document a schema without changing what it accepts.
ANNOTATIONS = frozenset(
    {"description", "examples", "default", "deprecated", "readOnly", "writeOnly", "$comment", "title", "$schema", "$id"}
)
# Bounds: a larger lower bound or a smaller upper bound accepts less.
LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
# Keywords whose any change (added, changed) restricts and whose removal relaxes.
RESTRICTIONS = ("pattern", "format", "multipleOf", "contentEncoding", "contentMediaType")
_TYPE_KEYS = frozenset({"type", "anyOf", "oneOf", "const", "enum"})
_OBJECT_KEYS = frozenset({"properties", "required", "additionalProperties"})
_ARRAY_KEYS = frozenset({"items", "prefixItems"})
_JSON_TYPES = ("boolean", "integer", "number", "string", "array", "object", "null")


# Paths whose change means the package may now point at another environment.
IDENTITY_PATHS = ("name", "package", "env_id", "metadata.name")
DIFFERENT_ENV = "a different environment?"


@dataclass(frozen=True)
class Change:
    impact: Impact
    path: str
    """Where: `action.message`, `tools.add.a`, `observation.board[]`, `metadata.description`."""
    what: str
    """What happened, e.g. `required field added (integer)`, `type narrowed: string | null → string`,
    `description changed: "Echo it." → "Echo it back."`."""
    old: Any = None
    """For a value change (description, default, enum values, metadata, identity): the full old value."""
    new: Any = None
    """... and the full new value. None for a side where the keyword is absent, and on both
    sides for a structural change (field added, type narrowed, ...)."""

    @property
    def warning(self) -> bool:
        """An identity change: the package may be checked against a different environment."""
        return self.path in IDENTITY_PATHS

    def line(self) -> str:
        return f"{self.impact:<5}  {self.path}: {self.what}"

    def as_json(self) -> dict[str, Any]:
        """Stable keys: impact, path, what, old, new, warning."""
        return {
            "impact": self.impact, "path": self.path, "what": self.what,
            "old": self.old, "new": self.new, "warning": self.warning,
        }


@dataclass(frozen=True)
class ModelDiff:
    changes: tuple[Change, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)

    @property
    def impact(self) -> Impact | None:
        """The largest impact of any change; None when nothing changed."""
        if not self.changes:
            return None
        return max((c.impact for c in self.changes), key=RANK.__getitem__)

    @property
    def warnings(self) -> list[str]:
        """One line per identity change, e.g.
        `metadata.name: changed: "Connect4Environment" → "ChessEnvironment" (a different environment?)`."""
        return [f"{c.path}: {c.what}" for c in self.changes if c.warning]

    def lines(self) -> list[str]:
        return [c.line() for c in self.changes]

    def markdown(self) -> str:
        return "\n".join(f"- **{c.impact}** `{c.path}`: {c.what}" for c in self.changes)


def bump(version: str, impact: Impact | None) -> str:
    """Semver bump by impact (plain MAJOR.MINOR.PATCH; 0.x is bumped like any version)."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"package version {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(g) for g in match.groups())
    if impact is None:
        return version
    if impact == "major":
        return f"{major + 1}.0.0"
    if impact == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def diff_specs(old: Spec, new: Spec) -> ModelDiff:
    out: list[Change] = []
    for key in ("name", "package", "env_id"):
        before, after = getattr(old, key), getattr(new, key)
        if before != after:
            out.append(_identity_change(key, before, after))
    if old.metadata.name != new.metadata.name:
        out.append(_identity_change("metadata.name", old.metadata.name, new.metadata.name))
    out += diff_interfaces(old, new)
    for section in ("metadata", "defaults"):
        before, after = getattr(old, section).model_dump(mode="json"), getattr(new, section).model_dump(mode="json")
        for key in before:
            if section == "metadata" and key == "name":
                continue  # an identity change, above
            if before[key] != after[key]:
                out.append(_value_change("patch", f"{section}.{key}", "changed", before[key], after[key]))
    return ModelDiff(tuple(out))


def diff_interfaces(old: Interface, new: Interface) -> list[Change]:
    """Changes in what the model exchanges with the env: action kind, action schema, MCP
    tools and observation schema."""
    out: list[Change] = []
    if old.is_mcp != new.is_mcp:
        kinds = {True: "MCP tools", False: "typed action"}
        out.append(Change("major", "action", f"action kind changed: {kinds[old.is_mcp]} → {kinds[new.is_mcp]}"))
    else:
        out += diff_actions(old.action_schema, new.action_schema)
        out += _diff_tools(old.tools or (), new.tools or ())
    out += diff_schemas(old.observation_schema, new.observation_schema, where="observation", direction="output")
    reset_before = getattr(old, "reset_observation_schema", None)
    reset_after = getattr(new, "reset_observation_schema", None)
    if reset_before is not None or reset_after is not None:
        # No `reset_observation` in `/schema` means reset returns a step observation.
        out += diff_schemas(
            reset_before if reset_before is not None else old.observation_schema,
            reset_after if reset_after is not None else new.observation_schema,
            where="reset_observation",
            direction="output",
        )
    return out


def diff_actions(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """The action schemas' changes. A union action is compared member by member, members
    paired by their discriminator value (else their title); a plain object action next to a
    union counts as a one-member union. A member added is minor (the model may send more),
    one removed is major, and a paired member is compared like any action."""
    before, after = union_members(old), union_members(new)
    if before is None and after is None:
        return diff_schemas(old, new, where="action", direction="input")
    members_before = before if before is not None else [_as_member(old, after or [])]
    members_after = after if after is not None else [_as_member(new, before or [])]
    out: list[Change] = []
    if before is not None and after is not None:
        kind_before = next(k for k in UNION_KEYS if k in old)
        kind_after = next(k for k in UNION_KEYS if k in new)
        if kind_before != kind_after:
            out.append(Change("major", "action", f"union changed: {kind_before} → {kind_after}"))
        tag_before = members_before[0].tag_property if members_before else None
        tag_after = members_after[0].tag_property if members_after else None
        if tag_before != tag_after:
            out.append(Change("major", "action", f"discriminator changed: {_short(tag_before)} → {_short(tag_after)}"))
        if old.get("description") != new.get("description"):
            out += diff_schemas(_annotations(old), _annotations(new), where="action", direction="input")
    keyed_before = {m.key: m for m in members_before}
    keyed_after = {m.key: m for m in members_after}
    pairs = [(keyed_before[k], keyed_after[k]) for k in keyed_before if k in keyed_after]
    # Members whose key changed (e.g. a new discriminator) are still paired by their title.
    left = [m for k, m in keyed_before.items() if k not in keyed_after]
    right = [m for k, m in keyed_after.items() if k not in keyed_before]
    for m in list(left):
        twin = next((n for n in right if m.title is not None and n.title == m.title), None)
        if twin is not None:
            pairs.append((m, twin))
            left.remove(m)
            right.remove(twin)
    out += [Change("major", _member_path(m.key), "union member removed") for m in left]
    out += [Change("minor", _member_path(m.key), "union member added") for m in right]
    for a, b in pairs:
        out += diff_schemas(a.schema, b.schema, where=_member_path(b.key), direction="input")
    return out


def _annotations(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k == "description"}


def _member_path(key: str) -> str:
    return f"action[{key}]" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key) else f"action[{json.dumps(key)}]"


def _as_member(schema: dict[str, Any], others: list[UnionMember]) -> UnionMember:
    """A plain object action as a union member, keyed as the other side's union keys its
    members (by the discriminating property's value, else the title)."""
    title = schema.get("title") if isinstance(schema.get("title"), str) else None
    props = schema.get("properties") or {}
    key = None
    for other in others:
        if other.tag_property is not None:
            value = tag_value(props.get(other.tag_property))
            if value is not None:
                key = str(value)
                break
    return UnionMember(key=key or title or "#1", title=title, schema=schema)


def _identity_change(path: str, before: str, after: str) -> Change:
    return _value_change("major", path, "changed", before, after, note=f"({DIFFERENT_ENV})")


def _value_change(impact: Impact, path: str, label: str, before: Any, after: Any, *, note: str = "") -> Change:
    """A change of one value, its text showing old → new (shortened when long)."""
    shown_before, shown_after = _show_pair(before, after)
    what = f"{label}: {shown_before} → {shown_after}" + (f" {note}" if note else "")
    return Change(impact, path, what, None if before is _ABSENT else before, None if after is _ABSENT else after)


def _diff_tools(old: Iterable[Any], new: Iterable[Any]) -> list[Change]:
    before, after = {t.name: t for t in old}, {t.name: t for t in new}
    out: list[Change] = []
    for name in before.keys() - after.keys():
        out.append(Change("major", f"tools.{name}", "tool removed"))
    for name in after.keys() - before.keys():
        out.append(Change("minor", f"tools.{name}", "tool added"))
    for name in sorted(before.keys() & after.keys()):
        summary_before, summary_after = tool_summary(before[name].description), tool_summary(after[name].description)
        if summary_before != summary_after:
            out.append(_value_change("patch", f"tools.{name}", "description changed", summary_before, summary_after))
        out += diff_schemas(
            _with_documented_args(before[name].input_schema, before[name].description),
            _with_documented_args(after[name].input_schema, after[name].description),
            where=f"tools.{name}",
            direction="input",
        )
    return sorted(out, key=lambda c: c.path) if out else out


# --- tool descriptions: FastMCP renders the same docstring differently by version ----------

# Google-style section headings (`Args:` alone on its line), and NumPy-style ones (a heading
# underlined with dashes). Sphinx-style fields (`:param x:`, `:returns:`) start a section too.
_GOOGLE_SECTION = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|kwargs|other parameters|"
    r"returns?|yields?|raises|exceptions|examples?|notes?|attributes|see also|warnings?|references|todo)\s*:\s*$",
    re.IGNORECASE,
)
_NUMPY_UNDERLINE = re.compile(r"^-{3,}\s*$")
_SPHINX_FIELD = re.compile(r"^:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|yields?)\b")
_SPHINX_PARAM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:\S+\s+)?([A-Za-z_]\w*)\s*:\s*(.*)$")
_ARG_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs", "other parameters"}
)
# `name: text` / `name (type): text` (Google); `name : type` or a bare `name`, the text
# indented below (NumPy).
_GOOGLE_ARG = re.compile(r"^\*{0,2}([A-Za-z_]\w*)(?:\s*\([^)]*\))?:\s*(.*)$")
_NUMPY_ARG = re.compile(r"^([A-Za-z_]\w*)(?:\s+:\s+.*)?$")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _sections(description: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(summary, [(heading, body lines)]) of a docstring-like description."""
    lines = inspect.cleandoc(description).splitlines()
    summary: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        heading = None
        if _GOOGLE_SECTION.match(stripped):
            heading = stripped.rstrip(":").strip().lower()
        elif stripped and i + 1 < len(lines) and _NUMPY_UNDERLINE.match(lines[i + 1].strip()):
            heading = stripped.lower()
            i += 1
        elif _SPHINX_FIELD.match(stripped):
            heading = "sphinx"
            sections.append((heading, []))
            sections[-1][1].append(stripped)
            i += 1
            continue
        if heading is not None:
            sections.append((heading, []))
        elif sections:
            sections[-1][1].append(lines[i])
        else:
            summary.append(lines[i])
        i += 1
    return "\n".join(summary), sections


def tool_summary(description: str) -> str:
    """A tool description without its docstring sections, whitespace collapsed."""
    return _collapse(_sections(description)[0])


def documented_args(description: str) -> dict[str, str]:
    """Argument texts from a docstring's `Args:` (Google), `Parameters` (NumPy) or
    `:param x:` (Sphinx) section, each with its whitespace collapsed."""
    out: dict[str, str] = {}
    for heading, body in _sections(description)[1]:
        if heading == "sphinx":
            match = _SPHINX_PARAM.match(body[0])
            if match:
                out[match.group(1)] = " ".join([match.group(2), *(line.strip() for line in body[1:])])
            continue
        if heading not in _ARG_SECTIONS:
            continue
        indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
        entry_indent = min(indents, default=0)
        current: str | None = None
        for line in body:
            text = line.strip()
            if not text:
                continue
            if len(line) - len(line.lstrip()) == entry_indent:
                numpy, google = _NUMPY_ARG.match(text), _GOOGLE_ARG.match(text)
                current = (numpy or google).group(1) if (numpy or google) else None
                if current is not None:
                    out[current] = google.group(2) if google and not numpy else ""
            elif current is not None:
                out[current] = f"{out[current]} {text}"
    return {name: _collapse(text) for name, text in out.items() if text.strip()}


def _with_documented_args(schema: dict[str, Any], description: str) -> dict[str, Any]:
    """`schema` with each top-level argument that has no `description` given the text its
    tool's docstring documents for it (what newer FastMCP versions do themselves)."""
    documented = documented_args(description)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not documented or not isinstance(properties, dict):
        return schema
    filled = {
        name: ({**prop, "description": documented[name]} if isinstance(prop, dict) and "description" not in prop and name in documented else prop)
        for name, prop in properties.items()
    }
    return {**schema, "properties": filled}


def diff_schemas(old: dict[str, Any], new: dict[str, Any], *, where: str, direction: Direction) -> list[Change]:
    """Changes between two JSON schemas, each classified for an input or an output."""
    out: list[Change] = []
    _compare(_collapse_descriptions(normalise(old)), _collapse_descriptions(normalise(new)), where, direction, out)
    seen: set[tuple[str, str]] = set()
    unique = []
    for change in out:
        if (change.path, change.what) not in seen:
            seen.add((change.path, change.what))
            unique.append(change)
    return unique


# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
              "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _collapse_descriptions(schema: Any) -> Any:
    """`schema` with the whitespace of every `description` collapsed (a re-indented or
    re-wrapped text is the same text); values such as `default` or `enum` are untouched."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            out[key] = _collapse(value)
        elif key in _SUBSCHEMA:
            out[key] = _collapse_descriptions(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_collapse_descriptions(v) for v in value]
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _collapse_descriptions(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


# --- schema comparison -------------------------------------------------------------------


def _restricts(direction: Direction) -> Impact:
    """Impact of a change that makes the schema accept less."""
    return "major" if direction == "input" else "minor"


def _relaxes(direction: Direction) -> Impact:
    """Impact of a change that makes the schema accept more."""
    return "minor" if direction == "input" else "major"


def _compare(old: Any, new: Any, path: str, direction: Direction, out: list[Change]) -> None:
    if old == new:
        return
    if not isinstance(old, dict) or not isinstance(new, dict):
        # `true`/`false` schemas, or garbage: only equality is meaningful.
        out.append(Change("major", path, f"schema replaced: {_short(old)} → {_short(new)}"))
        return
    if (_branches(old) is None) != (_branches(new) is None):
        # A plain schema became a union (`T` → `T | None`) or back: view the plain one as
        # a union too, so its constraints are compared with the matching branch.
        key = "anyOf" if "anyOf" in old or "anyOf" in new else "oneOf"
        old, new = (_as_union(old, key), new) if _branches(old) is None else (old, _as_union(new, key))
    start = len(out)
    keys = old.keys() | new.keys()
    differing = {k for k in keys if old.get(k, _ABSENT) != new.get(k, _ABSENT)}
    for key in sorted(differing & ANNOTATIONS):
        if key == "title":
            continue
        out.append(_value_change("patch", path, f"{key} changed", old.get(key, _ABSENT), new.get(key, _ABSENT)))
    if differing & _TYPE_KEYS:
        _compare_types(old, new, path, direction, out)
    for key in LOWER_BOUNDS + UPPER_BOUNDS:
        if key in differing:
            _compare_bound(key, old.get(key), new.get(key), path, direction, out)
    for key in RESTRICTIONS:
        if key in differing:
            before, after = old.get(key), new.get(key)
            impact = _relaxes(direction) if after is None else _restricts(direction)
            if before is None or after is None:
                verb = "removed" if after is None else "added"
                out.append(Change(impact, path, f"constraint {verb}: {key} {_short(before if after is None else after)}"))
            else:
                out.append(Change("major", path, f"constraint changed: {key} {_short(before)} → {_short(after)}"))
    if "uniqueItems" in differing:
        tighter = bool(new.get("uniqueItems"))
        out.append(Change(_restricts(direction) if tighter else _relaxes(direction), path, f"uniqueItems → {tighter}"))
    if differing & _OBJECT_KEYS:
        _compare_object(old, new, path, direction, out)
    if differing & _ARRAY_KEYS:
        _compare_arrays(old, new, path, direction, out)
    known = ANNOTATIONS | _TYPE_KEYS | _OBJECT_KEYS | _ARRAY_KEYS | set(LOWER_BOUNDS + UPPER_BOUNDS + RESTRICTIONS)
    for key in sorted(differing - known - {"uniqueItems"}):
        out.append(Change("major", path, f"unclassified change to `{key}` (treated as breaking)"))
    if len(out) == start:
        # Every difference was inside something compared as equal at this level, e.g. an
        # annotation inside an anyOf branch.
        out.append(Change("patch", path, "schema details changed"))


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT: Any = _Absent()


def _compare_bound(key: str, before: Any, after: Any, path: str, direction: Direction, out: list[Change]) -> None:
    lower = key in LOWER_BOUNDS
    if before is None:
        out.append(Change(_restricts(direction), path, f"constraint added: {key} {_short(after)}"))
    elif after is None:
        out.append(Change(_relaxes(direction), path, f"constraint removed: {key} {_short(before)}"))
    elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)):
        out.append(Change("major", path, f"constraint changed: {key} {_short(before)} → {_short(after)}"))
    else:
        tighter = after > before if lower else after < before
        impact = _restricts(direction) if tighter else _relaxes(direction)
        word = "narrowed" if tighter else "loosened"
        out.append(Change(impact, path, f"constraint {word}: {key} {_short(before)} → {_short(after)}"))


# Types: what JSON types a schema accepts ("integer" is a subset of "number").


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _types(schema: Any) -> frozenset[str] | None:
    """The JSON types a schema accepts; None when unrestricted."""
    if not isinstance(schema, dict):
        return None if schema is not False else frozenset()
    found: frozenset[str] | None = None
    if "const" in schema:
        found = frozenset({_json_type(schema["const"])})
    elif isinstance(schema.get("enum"), list):
        found = frozenset(_json_type(v) for v in schema["enum"])
    elif isinstance(schema.get("type"), str):
        found = frozenset({schema["type"]})
    elif isinstance(schema.get("type"), list):
        found = frozenset(t for t in schema["type"] if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            union: set[str] = set()
            for branch in branches:
                sub = _types(branch)
                if sub is None:
                    union = set(_JSON_TYPES)
                    break
                union |= sub
            found = frozenset(union) if found is None else found & frozenset(union)
    return found


def _covers(types: frozenset[str], t: str) -> bool:
    return t in types or (t == "integer" and "number" in types)


def _subset(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Whether everything of types `a` is accepted by types `b`."""
    if b is None:
        return True
    if a is None:
        return False
    return all(_covers(b, t) for t in a)


def _show_types(types: frozenset[str] | None) -> str:
    if types is None:
        return "any"
    if not types:
        return "nothing"
    return " | ".join(sorted(types, key=_JSON_TYPES.index)) if types <= set(_JSON_TYPES) else " | ".join(sorted(types))


def _values(schema: dict[str, Any]) -> set[str] | None:
    if "const" in schema:
        return {json.dumps(schema["const"], sort_keys=True)}
    if isinstance(schema.get("enum"), list):
        return {json.dumps(v, sort_keys=True) for v in schema["enum"]}
    return None


def _listed_values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _branches(schema: dict[str, Any]) -> list[Any] | None:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return schema[key]
    return None


def _by_type(branches: list[Any]) -> dict[str, Any] | None:
    """Branches keyed by their single JSON type; None if any is untyped or shares a type."""
    out: dict[str, Any] = {}
    for branch in branches:
        types = _types(branch)
        if types is None or len(types) != 1:
            return None
        (t,) = types
        if t in out:
            return None
        out[t] = branch
    return out


def _compare_types(old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]) -> None:
    before, after = _types(old), _types(new)
    if before != after:
        shown = f"{_show_types(before)} → {_show_types(after)}"
        if _subset(after, before):
            out.append(Change(_restricts(direction), path, f"type narrowed: {shown}"))
        elif _subset(before, after):
            out.append(Change(_relaxes(direction), path, f"type widened: {shown}"))
        else:
            out.append(Change("major", path, f"retyped: {shown}"))
    values_before, values_after = _values(old), _values(new)
    if values_before != values_after and not (values_before is None and values_after is None):
        listed_before, listed_after = _listed_values(old), _listed_values(new)
        if values_after is None:
            out.append(Change(_relaxes(direction), path, f"allowed values no longer restricted (were {_show_values(values_before)})", listed_before, None))
        elif values_before is None:
            out.append(Change(_restricts(direction), path, f"allowed values restricted to {_show_values(values_after)}", None, listed_after))
        else:
            removed, added = values_before - values_after, values_after - values_before
            shown = f"{_show_values(values_before)} → {_show_values(values_after)}"
            if removed:
                out.append(Change(_restricts(direction), path, f"allowed values removed: {_show_values(removed)} ({shown})", listed_before, listed_after))
            if added:
                out.append(Change(_relaxes(direction), path, f"allowed values added: {_show_values(added)} ({shown})", listed_before, listed_after))
    branches_before, branches_after = _branches(old), _branches(new)
    if branches_before == branches_after or branches_before is None or branches_after is None:
        return
    keyed_before, keyed_after = _by_type(branches_before), _by_type(branches_after)
    if keyed_before is not None and keyed_after is not None:
        for t in sorted(keyed_before.keys() & keyed_after.keys()):
            _compare(keyed_before[t], keyed_after[t], path, direction, out)
        return
    if before != after:
        return  # the type change above already says it
    # Alternatives that cannot be paired by type: compare them as sets.
    a = {json.dumps(b, sort_keys=True) for b in branches_before}
    b = {json.dumps(b, sort_keys=True) for b in branches_after}
    if b < a:
        out.append(Change(_restricts(direction), path, "alternatives removed"))
    elif a < b:
        out.append(Change(_relaxes(direction), path, "alternatives added"))
    else:
        out.append(Change("major", path, "alternatives changed (treated as breaking)"))


def _as_union(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """`schema` as a union of one branch per type, its annotations kept outside."""
    annotations = {k: v for k, v in schema.items() if k in ANNOTATIONS}
    body = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
    types = body.get("type")
    if isinstance(types, list) and len(types) > 1:
        branches = [{**body, "type": t} for t in types]
    else:
        branches = [body]
    return {**annotations, key: branches}


def _compare_object(old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]) -> None:
    props_before = old.get("properties") or {}
    props_after = new.get("properties") or {}
    required_before = set(old.get("required") or [])
    required_after = set(new.get("required") or [])
    for name in sorted(props_before.keys() - props_after.keys()):
        out.append(Change("major", _join(path, name), "field removed"))
    for name in sorted(props_after.keys() - props_before.keys()):
        shown = _show_types(_types(props_after[name]))
        if direction == "input":
            if name in required_after:
                out.append(Change("major", _join(path, name), f"required field added ({shown})"))
            else:
                out.append(Change("minor", _join(path, name), f"optional field added ({shown})"))
        else:
            kind = "field added" if name in required_after else "optional field added"
            out.append(Change("minor", _join(path, name), f"{kind} ({shown})"))
    for name in sorted(props_before.keys() & props_after.keys()):
        was, now = name in required_before, name in required_after
        if not was and now:
            what = "field newly required" if direction == "input" else "field now always present"
            out.append(Change(_restricts(direction), _join(path, name), what))
        elif was and not now:
            what = "field no longer required" if direction == "input" else "field may now be absent"
            out.append(Change(_relaxes(direction), _join(path, name), what))
        _compare(props_before[name], props_after[name], _join(path, name), direction, out)
    # `required` naming a property the schema does not declare (allowed by JSON schema).
    for name in sorted((required_after - required_before) - props_after.keys() - props_before.keys()):
        out.append(Change(_restricts(direction), _join(path, name), "field newly required"))
    for name in sorted((required_before - required_after) - props_after.keys() - props_before.keys()):
        out.append(Change(_relaxes(direction), _join(path, name), "field no longer required"))
    extra_before, extra_after = old.get("additionalProperties", True), new.get("additionalProperties", True)
    if extra_before != extra_after:
        if extra_after is False:
            out.append(Change(_restricts(direction), path, "additional properties no longer allowed"))
        elif extra_before is False:
            out.append(Change(_relaxes(direction), path, "additional properties now allowed"))
        elif extra_before is True:
            out.append(Change(_restricts(direction), path, "additional properties now constrained"))
        elif extra_after is True:
            out.append(Change(_relaxes(direction), path, "additional properties no longer constrained"))
        else:
            _compare(extra_before, extra_after, f"{path}.*", direction, out)


def _compare_arrays(old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]) -> None:
    if old.get("items", _ABSENT) != new.get("items", _ABSENT):
        before, after = old.get("items", True), new.get("items", True)
        if before is True and isinstance(after, dict):
            out.append(Change(_restricts(direction), f"{path}[]", f"items now constrained ({_show_types(_types(after))})"))
        elif after is True and isinstance(before, dict):
            out.append(Change(_relaxes(direction), f"{path}[]", "items no longer constrained"))
        else:
            _compare(before, after, f"{path}[]", direction, out)
    before_tuple, after_tuple = old.get("prefixItems") or [], new.get("prefixItems") or []
    if before_tuple != after_tuple:
        if len(before_tuple) != len(after_tuple):
            out.append(Change("major", f"{path}[]", f"tuple length changed: {len(before_tuple)} → {len(after_tuple)}"))
        for i, (a, b) in enumerate(zip(before_tuple, after_tuple)):
            _compare(a, b, f"{path}[{i}]", direction, out)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name) else f"{path}[{json.dumps(name)}]"


def _show_values(values: set[str]) -> str:
    shown = ", ".join(sorted(values)[:8])
    return shown + (", …" if len(values) > 8 else "")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value) if value is _ABSENT else json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show_pair(before: Any, after: Any, limit: int = 72) -> tuple[str, str]:
    """Old and new value as JSON text, each at most about `limit` characters. Two long
    strings are cut to a window around where they first differ, so the change stays
    visible: `"…the provided message."` → `"…the given message."`."""
    if not (isinstance(before, str) and isinstance(after, str)):
        return _short(before, limit), _short(after, limit)
    a, b = _collapse(before), _collapse(after)
    if a == b:  # only whitespace differs: show it
        a, b = json.dumps(before, ensure_ascii=False)[1:-1], json.dumps(after, ensure_ascii=False)[1:-1]
    if len(a) <= limit and len(b) <= limit:
        return json.dumps(a, ensure_ascii=False), json.dumps(b, ensure_ascii=False)
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    start = max(0, prefix - 20)
    return _window(a, start, limit), _window(b, start, limit)


def _window(text: str, start: int, limit: int) -> str:
    body = text[start : start + limit]
    head = "…" if start > 0 else ""
    tail = "…" if start + limit < len(text) else ""
    return json.dumps(head + body + tail, ensure_ascii=False)

"""Whether a JSON schema's change breaks its users: each difference with a path and a semver impact.

`diff_schemas(old, new, where=..., direction=...)` compares two schemas after
`openenvgen_schemas.normalise` (local `$ref`s inlined, `title`s dropped, descriptions'
whitespace collapsed), keyword by keyword. An *input* (what the model sends: an action, a
tool's arguments) breaks its senders when it accepts less; an *output* (what the server
sends back: an observation) breaks its readers when it may hold more:

| change                                                                     | input | output |
|----------------------------------------------------------------------------|-------|--------|
| accepts less: type or bound narrowed, field newly required, value removed  | major | minor  |
| accepts more: type or bound widened, field no longer required, value added | minor | major  |
| field removed, incompatible retype, unclassified keyword changed           | major | major  |
| required field added                                                       | major | minor  |
| optional field added                                                       | minor | minor  |
| description, examples, default                                             | patch | patch  |

A change this module cannot classify counts as major: under-reporting a break is the
expensive mistake.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from openenvgen_schemas.changes import ABSENT, Change, Impact, field_path, short, value_change
from openenvgen_schemas.normalise import normalise

Direction = Literal["input", "output"]

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


def diff_schemas(old: dict[str, Any], new: dict[str, Any], *, where: str, direction: Direction) -> list[Change]:
    """Changes between two JSON schemas, each classified for an input or an output."""
    out: list[Change] = []
    _compare(normalise(old), normalise(new), where, direction, out)
    seen: set[tuple[str, str]] = set()
    unique = []
    for change in out:
        if (change.path, change.what) not in seen:
            seen.add((change.path, change.what))
            unique.append(change)
    return unique


def _restricts(direction: Direction) -> Impact:
    """Impact of a change that makes the schema accept less."""
    return "major" if direction == "input" else "minor"


def _relaxes(direction: Direction) -> Impact:
    """Impact of a change that makes the schema accept more."""
    return "minor" if direction == "input" else "major"


def _compare(old: Any, new: Any, path: str, direction: Direction, out: list[Change]) -> None:
    """Append to `out` the changes from schema `old` to `new` at `path`."""
    if old == new:
        return
    if not isinstance(old, dict) or not isinstance(new, dict):
        # `true`/`false` schemas, or garbage: only equality is meaningful.
        out.append(Change("major", path, f"schema replaced: {short(old)} → {short(new)}"))
        return
    if (_branches(old) is None) != (_branches(new) is None):
        # A plain schema became a union (`T` → `T | None`) or back: view the plain one as
        # a union too, so its constraints are compared with the matching branch.
        key = "anyOf" if "anyOf" in old or "anyOf" in new else "oneOf"
        old, new = (_as_union(old, key), new) if _branches(old) is None else (old, _as_union(new, key))
    start = len(out)
    keys = old.keys() | new.keys()
    differing = {k for k in keys if old.get(k, ABSENT) != new.get(k, ABSENT)}
    for key in sorted(differing & ANNOTATIONS):
        if key == "title":
            continue
        out.append(value_change("patch", path, f"{key} changed", old.get(key, ABSENT), new.get(key, ABSENT)))
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
                shown = short(before if after is None else after)
                out.append(Change(impact, path, f"constraint {verb}: {key} {shown}"))
            else:
                out.append(Change("major", path, f"constraint changed: {key} {short(before)} → {short(after)}"))
    if "uniqueItems" in differing:
        tighter = bool(new.get("uniqueItems"))
        impact = _restricts(direction) if tighter else _relaxes(direction)
        out.append(Change(impact, path, f"uniqueItems → {tighter}"))
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


def _compare_bound(key: str, before: Any, after: Any, path: str, direction: Direction, out: list[Change]) -> None:
    """A bound (`minimum`, `maxLength`, ...) added, removed, or moved in or out."""
    lower = key in LOWER_BOUNDS
    if before is None:
        out.append(Change(_restricts(direction), path, f"constraint added: {key} {short(after)}"))
    elif after is None:
        out.append(Change(_relaxes(direction), path, f"constraint removed: {key} {short(before)}"))
    elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after)):
        out.append(Change("major", path, f"constraint changed: {key} {short(before)} → {short(after)}"))
    else:
        tighter = after > before if lower else after < before
        impact = _restricts(direction) if tighter else _relaxes(direction)
        word = "narrowed" if tighter else "loosened"
        out.append(Change(impact, path, f"constraint {word}: {key} {short(before)} → {short(after)}"))


# Types: what JSON types a schema accepts ("integer" is a subset of "number").


def narrowest_json_type(value: Any) -> str:
    """The narrowest JSON Schema type accepting the JSON value `value`: a whole `1.0` is an "integer"."""
    # JSON Schema types a number by its value, not its spelling, so `{"const": 1.0}` accepts
    # only an integer; "number" here would rate `integer` → `const 1.0` a widening.
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
        found = frozenset({narrowest_json_type(schema["const"])})
    elif isinstance(schema.get("enum"), list):
        found = frozenset(narrowest_json_type(v) for v in schema["enum"])
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
    """Whether `types` accept type `t` (an "integer" is a "number")."""
    return t in types or (t == "integer" and "number" in types)


def _subset(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Whether everything of types `a` is accepted by types `b`."""
    if b is None:
        return True
    if a is None:
        return False
    return all(_covers(b, t) for t in a)


def _show_types(types: frozenset[str] | None) -> str:
    """`string | null`, `any` or `nothing`; JSON's types in a fixed order, any others sorted."""
    if types is None:
        return "any"
    if not types:
        return "nothing"
    if types <= set(_JSON_TYPES):
        return " | ".join(sorted(types, key=_JSON_TYPES.index))
    return " | ".join(sorted(types))


def _values(schema: dict[str, Any]) -> set[str] | None:
    """The values a `const`/`enum` allows, as JSON text (comparable as a set); None when unlisted."""
    if "const" in schema:
        return {json.dumps(schema["const"], sort_keys=True)}
    if isinstance(schema.get("enum"), list):
        return {json.dumps(v, sort_keys=True) for v in schema["enum"]}
    return None


def _listed_values(schema: dict[str, Any]) -> list[Any] | None:
    """The values a `const`/`enum` allows, as listed; None when unlisted."""
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _branches(schema: dict[str, Any]) -> list[Any] | None:
    """The `anyOf`/`oneOf` alternatives of a schema; None when it has none."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            return branches
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


def _compare_types(
    old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]
) -> None:
    """What the type keywords (`type`, `const`, `enum`, `anyOf`, `oneOf`) let through, compared."""
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
    if values_before != values_after:
        listed_before, listed_after = _listed_values(old), _listed_values(new)
        if values_before is not None and values_after is None:
            what = f"allowed values no longer restricted (were {_show_values(values_before)})"
            out.append(Change(_relaxes(direction), path, what, listed_before, None))
        elif values_before is None and values_after is not None:
            what = f"allowed values restricted to {_show_values(values_after)}"
            out.append(Change(_restricts(direction), path, what, None, listed_after))
        elif values_before is not None and values_after is not None:
            removed, added = values_before - values_after, values_after - values_before
            shown = f"{_show_values(values_before)} → {_show_values(values_after)}"
            if removed:
                what = f"allowed values removed: {_show_values(removed)} ({shown})"
                out.append(Change(_restricts(direction), path, what, listed_before, listed_after))
            if added:
                what = f"allowed values added: {_show_values(added)} ({shown})"
                out.append(Change(_relaxes(direction), path, what, listed_before, listed_after))
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


def _compare_object(
    old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]
) -> None:
    """Properties added, removed, newly (not) required or changed, and `additionalProperties`."""
    props_before = old.get("properties") or {}
    props_after = new.get("properties") or {}
    required_before = set(old.get("required") or [])
    required_after = set(new.get("required") or [])
    for name in sorted(props_before.keys() - props_after.keys()):
        out.append(Change("major", field_path(path, name), "field removed"))
    for name in sorted(props_after.keys() - props_before.keys()):
        shown = _show_types(_types(props_after[name]))
        if direction == "input":
            if name in required_after:
                out.append(Change("major", field_path(path, name), f"required field added ({shown})"))
            else:
                out.append(Change("minor", field_path(path, name), f"optional field added ({shown})"))
        else:
            kind = "field added" if name in required_after else "optional field added"
            out.append(Change("minor", field_path(path, name), f"{kind} ({shown})"))
    for name in sorted(props_before.keys() & props_after.keys()):
        was, now = name in required_before, name in required_after
        if not was and now:
            what = "field newly required" if direction == "input" else "field now always present"
            out.append(Change(_restricts(direction), field_path(path, name), what))
        elif was and not now:
            what = "field no longer required" if direction == "input" else "field may now be absent"
            out.append(Change(_relaxes(direction), field_path(path, name), what))
        _compare(props_before[name], props_after[name], field_path(path, name), direction, out)
    # `required` naming a property the schema does not declare (allowed by JSON schema).
    for name in sorted((required_after - required_before) - props_after.keys() - props_before.keys()):
        out.append(Change(_restricts(direction), field_path(path, name), "field newly required"))
    for name in sorted((required_before - required_after) - props_after.keys() - props_before.keys()):
        out.append(Change(_relaxes(direction), field_path(path, name), "field no longer required"))
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


def _compare_arrays(
    old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]
) -> None:
    """`items` and `prefixItems` (a tuple's positions) compared."""
    if old.get("items", ABSENT) != new.get("items", ABSENT):
        before, after = old.get("items", True), new.get("items", True)
        if before is True and isinstance(after, dict):
            what = f"items now constrained ({_show_types(_types(after))})"
            out.append(Change(_restricts(direction), f"{path}[]", what))
        elif after is True and isinstance(before, dict):
            out.append(Change(_relaxes(direction), f"{path}[]", "items no longer constrained"))
        else:
            _compare(before, after, f"{path}[]", direction, out)
    before_tuple, after_tuple = old.get("prefixItems") or [], new.get("prefixItems") or []
    if before_tuple != after_tuple:
        if len(before_tuple) != len(after_tuple):
            what = f"tuple length changed: {len(before_tuple)} → {len(after_tuple)}"
            out.append(Change("major", f"{path}[]", what))
        for i, (a, b) in enumerate(zip(before_tuple, after_tuple, strict=False)):  # the common prefix
            _compare(a, b, f"{path}[{i}]", direction, out)


def _show_values(values: set[str]) -> str:
    """At most eight values, sorted, then `…`."""
    shown = ", ".join(sorted(values)[:8])
    return shown + (", …" if len(values) > 8 else "")

"""Whether a JSON schema's change breaks its users: each difference with a path and a semver impact.

`diff_schemas(old, new, where=..., direction=...)` compares two schemas after
`openenvgen_schemas.normalise` (local `$ref`s inlined, `title`s dropped, descriptions'
whitespace collapsed), keyword by keyword. Each change is rated by what code written against
the old models does with the new ones: fails to type-check or to run → major; reads and
builds the same or more → minor; text only → patch. An *input* (what the model sends: an
action, a tool's arguments) is built, so accepting less breaks its senders; an *output* (what
the server sends back: an observation) is read, so holding more breaks its readers:

| change                                                                      | input | output |
|-----------------------------------------------------------------------------|-------|--------|
| accepts less: type or bound narrowed, field newly required, value removed   | major | minor  |
| accepts more: type or bound widened, value added                            | minor | major  |
| field no longer required: left out, the model holds `MISSING`               | minor | major  |
| ... or a default of its own type (a reader still reads a value of that type)| minor | minor  |
| ... or a default of another type (`null` for an `int`)                      | minor | major  |
| default removed from a field that is not required (`T` → `T | MISSING`)     | patch | major  |
| additional properties no longer allowed (`additionalProperties: false`)     | major | minor  |
| additional properties now allowed (models drop undeclared keys: same reads) | minor | minor  |
| field removed, incompatible retype, unclassified keyword changed            | major | major  |
| required field added                                                        | major | minor  |
| optional field added                                                        | minor | minor  |
| description, examples, default (of the field's own type, where read)        | patch | patch  |

A change this module cannot classify counts as major: under-reporting a break is the
expensive mistake.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from openenvgen_schemas.changes import ABSENT, Change, Impact, field_path, short, value_change
from openenvgen_schemas.normalise import normalise
from openenvgen_schemas.schema_types import (
    allowed_values,
    branches_by_type,
    covers,
    json_types,
    listed_values,
    show_types,
    subset,
    union_branches,
)
from openenvgen_schemas.schema_types import narrowest_json_type as narrowest_json_type  # tests read it here

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
    if (union_branches(old) is None) != (union_branches(new) is None):
        # A plain schema became a union (`T` → `T | None`) or back: view the plain one as
        # a union too, so its constraints are compared with the matching branch.
        key = "anyOf" if "anyOf" in old or "anyOf" in new else "oneOf"
        old, new = (_as_union(old, key), new) if union_branches(old) is None else (old, _as_union(new, key))
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


def _compare_types(
    old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]
) -> None:
    """What the type keywords (`type`, `const`, `enum`, `anyOf`, `oneOf`) let through, compared."""
    before, after = json_types(old), json_types(new)
    if before != after:
        shown = f"{show_types(before)} → {show_types(after)}"
        if subset(after, before):
            out.append(Change(_restricts(direction), path, f"type narrowed: {shown}"))
        elif subset(before, after):
            out.append(Change(_relaxes(direction), path, f"type widened: {shown}"))
        else:
            out.append(Change("major", path, f"retyped: {shown}"))
    values_before, values_after = allowed_values(old), allowed_values(new)
    if values_before != values_after:
        listed_before, listed_after = listed_values(old), listed_values(new)
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
    branches_before, branches_after = union_branches(old), union_branches(new)
    if branches_before == branches_after or branches_before is None or branches_after is None:
        return
    keyed_before, keyed_after = branches_by_type(branches_before), branches_by_type(branches_after)
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
        shown = show_types(json_types(props_after[name]))
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
        if direction == "output":
            _compare_presence(props_before[name], props_after[name], was, now, field_path(path, name), out)
        elif not was and now:
            out.append(Change("major", field_path(path, name), "field newly required"))
        elif was and not now:
            out.append(Change("minor", field_path(path, name), "field no longer required"))
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
            # Either way a reader gets the same fields (the models drop undeclared keys), and
            # a sender may send more: minor.
            out.append(Change("minor", path, "additional properties now allowed"))
        elif extra_before is True:
            out.append(Change(_restricts(direction), path, "additional properties now constrained"))
        elif extra_after is True:
            out.append(Change(_relaxes(direction), path, "additional properties no longer constrained"))
        else:
            _compare(extra_before, extra_after, f"{path}.*", direction, out)


_UNSET = object()
"""An output field's value when the server leaves it out and it has no default: the model's `MISSING`."""


def _when_absent(schema: Any, required: bool) -> Any:
    """What a reader finds in an output field the server left out: None for a required one
    (never left out), its `default` ([value]), else `_UNSET`."""
    if required:
        return None
    if isinstance(schema, dict) and "default" in schema:
        return [schema["default"]]
    return _UNSET


def _holds(schema: Any, absent: Any, value: Any) -> bool:
    """Whether a reader of the field `schema` (left out: `absent`) has seen `value` before: a
    value of its type (and listed values), or its default."""
    text = json.dumps(value, sort_keys=True)
    if isinstance(absent, list) and json.dumps(absent[0], sort_keys=True) == text:
        return True
    types, listed = json_types(schema), allowed_values(schema) if isinstance(schema, dict) else None
    return (types is None or covers(types, narrowest_json_type(value))) and (listed is None or text in listed)


def _compare_presence(before: Any, after: Any, was: bool, now: bool, path: str, out: list[Change]) -> None:
    """An output field's requiredness and default, as its readers see them: what the model
    holds when the server leaves the field out (`MISSING` without a default)."""
    absent_before, absent_after = _when_absent(before, was), _when_absent(after, now)
    if absent_after is _UNSET and absent_before is not _UNSET:
        what = "field may now be absent" + (" (its default removed)" if absent_before is not None else "")
        out.append(Change("major", path, what))
    elif isinstance(absent_after, list) and not _holds(before, absent_before, absent_after[0]):
        what = f"field may now be absent (then {short(absent_after[0])}, not a value it held before)"
        out.append(Change("major", path, what))
    elif absent_before is _UNSET and absent_after is not _UNSET:
        out.append(Change("minor", path, "field now always present"))
    elif was and not now:
        # Old readers still read a value of the type they know, old senders still send it.
        out.append(Change("minor", path, f"field no longer required (defaults to {short(absent_after[0])})"))
    elif now and not was:
        out.append(Change("minor", path, "field now always present (required)"))


def _compare_arrays(
    old: dict[str, Any], new: dict[str, Any], path: str, direction: Direction, out: list[Change]
) -> None:
    """`items` and `prefixItems` (a tuple's positions) compared."""
    if old.get("items", ABSENT) != new.get("items", ABSENT):
        before, after = old.get("items", True), new.get("items", True)
        if before is True and isinstance(after, dict):
            what = f"items now constrained ({show_types(json_types(after))})"
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

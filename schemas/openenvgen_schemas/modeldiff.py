"""Model-level diff between two EnvSpecs (or two live interfaces), and the semver impact of each change. Pure.

`diff_specs(old, new)` compares what a generated package exposes: the action schema, the
MCP tool list (names, descriptions, argument schemas), the observation schema, the env's
metadata and defaults. Each schema is compared by `compatibility.diff_schemas` (after
`normalise`), so each difference gets a path (`action.target.x`, `tools.add.a`,
`observation.board`) and an impact, rated by what code written against the old models does
with the new ones: fails to type-check or to run → major; reads (an observation) or builds
(an action, a tool call) the same or more → minor; text only → patch (`compatibility` has
the full table):

| impact | inputs (action, tool arguments)                  | outputs (observation)                 |
|--------|--------------------------------------------------|---------------------------------------|
| major  | required field added; field or tool removed;     | field removed; field may now be       |
|        | optional field now required; type or constraint  | absent (no default, or one of another |
|        | narrowed; extra keys no longer allowed;          | type); type or constraint widened;    |
|        | incompatible retype; typed ↔ MCP                 | incompatible retype                   |
| minor  | optional field or tool added; required field now | field added; field now always present |
|        | optional; type or constraint widened; extra keys | or defaulted to a value of its type;  |
|        | allowed                                          | type or constraint narrowed; extra    |
|        |                                                  | keys allowed or no longer allowed     |
| patch  | descriptions, examples, defaults, metadata, env defaults                                 |

A union action (`oneOf`/`anyOf` of object models) is compared member by member, paired by
discriminator value or title (`action[call_tool].tool_name`): a member added is minor, one
removed is major. The reset observation (`reset_observation`, where the server serves one
that is not the step observation's schema) is an output like the observation; where both
versions' reset observation is the step observation, each change is reported once, under
`observation`.

A change of the env's identity (its name, package, env id, or the name `/metadata` reports)
is rated major and flagged as a warning: the package may be pointed at a different
environment. Value changes carry the old and the new value (`Change.old`/`Change.new`);
their one-line text shows both, shortened around the first difference when long.

**Rendering noise is not drift.** The same environment served with another FastMCP version
lists its tools differently (the whole docstring as the description, or only its summary
with each `Args:` entry moved into its argument's `description`). So a tool's description
is compared by its summary and an undescribed argument takes the text its tool's docstring
documents (`docstrings` has the rule); what is left, a different summary or a different
argument text, is reported with its old and new text.

Inputs are what the model sends and the package validates, so accepting *less* breaks
callers; outputs are what the server sends back, so *more* variety breaks readers. A
change that cannot be classified (an unknown validation keyword, alternatives that
cannot be paired) counts as major: under-reporting a break is the expensive mistake.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from openenvgen_schemas.changes import (
    RANK,
    Change,
    Impact,
    ModelDiff,
    bump,
    identity_change,
    member_path,
    short,
    value_change,
)
from openenvgen_schemas.compatibility import diff_schemas
from openenvgen_schemas.docstrings import tool_summary, with_documented_args
from openenvgen_schemas.normalise import UNION_KEYS, UnionMember, normalise, tag_value, union_members

__all__ = [
    # The diff's result types live in `changes`; they are the diff's public API, so named here too.
    "RANK",
    "Change",
    "Impact",
    "Interface",
    "ModelDiff",
    "Spec",
    "Tool",
    "bump",
    "diff_actions",
    "diff_interfaces",
    "diff_specs",
    "is_mcp_action",
]


# Read-only properties, so frozen dataclasses (`ToolSpec`, `EnvSpec`, the runtime's interfaces) match.
class Tool(Protocol):
    """An MCP tool as the diff reads it (a `ToolSpec`, or the same read from a live server)."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def input_schema(self) -> dict[str, Any]: ...


class Interface(Protocol):
    """What a model exchanges with an env (an EnvSpec, or the same read from a live server)."""

    @property
    def is_mcp(self) -> bool: ...
    @property
    def action_schema(self) -> dict[str, Any]: ...
    @property
    def observation_schema(self) -> dict[str, Any]: ...
    @property
    def tools(self) -> Iterable[Tool] | None: ...

    # Also read, when present: `reset_observation_schema` (None: reset returns a step observation).


class Spec(Interface, Protocol):
    """An EnvSpec: the interface plus the env's identity, metadata and defaults."""

    @property
    def name(self) -> str: ...
    @property
    def package(self) -> str: ...
    @property
    def env_id(self) -> str: ...
    @property
    def metadata(self) -> Any: ...
    @property
    def defaults(self) -> Any: ...


def is_mcp_action(action_schema: dict[str, Any]) -> bool:
    """Whether the action is MCP's `CallToolAction`, known by its `type` const (its title may be a subclass's)."""
    type_field = (action_schema.get("properties") or {}).get("type")
    return isinstance(type_field, dict) and type_field.get("const") == "call_tool"


def diff_specs(old: Spec, new: Spec) -> ModelDiff:
    """Every change from spec `old` to spec `new`: identity, interface, metadata and defaults."""
    out: list[Change] = []
    for key in ("name", "package", "env_id"):
        before, after = getattr(old, key), getattr(new, key)
        if before != after:
            out.append(identity_change(key, before, after))
    if old.metadata.name != new.metadata.name:
        out.append(identity_change("metadata.name", old.metadata.name, new.metadata.name))
    out += diff_interfaces(old, new)
    for section in ("metadata", "defaults"):
        before, after = getattr(old, section).model_dump(mode="json"), getattr(new, section).model_dump(mode="json")
        for key in before:
            if section == "metadata" and key == "name":
                continue  # an identity change, above
            if before[key] != after[key]:
                out.append(value_change("patch", f"{section}.{key}", "changed", before[key], after[key]))
    return ModelDiff(tuple(out))


def diff_interfaces(old: Interface, new: Interface) -> list[Change]:
    """Changes in the action kind, the action schema, the MCP tools and the (reset) observation schema."""
    out: list[Change] = []
    if old.is_mcp != new.is_mcp:
        kinds = {True: "MCP tools", False: "typed action"}
        out.append(Change("major", "action", f"action kind changed: {kinds[old.is_mcp]} → {kinds[new.is_mcp]}"))
    else:
        out += diff_actions(old.action_schema, new.action_schema)
        out += _diff_tools(old.tools or (), new.tools or ())
    out += diff_schemas(old.observation_schema, new.observation_schema, where="observation", direction="output")
    # No `reset_observation` in `/schema` means reset returns a step observation; so does one
    # that is the step observation's schema (its model is an alias of the step's). When both
    # versions' are the step's, the observation's changes are the reset's: reported once.
    reset_before = _reset_observation(old)
    reset_after = _reset_observation(new)
    if reset_before is not None or reset_after is not None:
        out += diff_schemas(
            reset_before if reset_before is not None else old.observation_schema,
            reset_after if reset_after is not None else new.observation_schema,
            where="reset_observation",
            direction="output",
        )
    return out


def _reset_observation(interface: Interface) -> dict[str, Any] | None:
    """The reset observation's schema when it is not the step observation's; else None."""
    schema: dict[str, Any] | None = getattr(interface, "reset_observation_schema", None)
    if schema is None or normalise(schema) == normalise(interface.observation_schema):
        return None
    return schema


def diff_actions(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """The action schemas' changes; a union action's member by member."""
    # Members are paired by their discriminator value (else their title); a plain object
    # action next to a union counts as a one-member union. A member added is minor (the
    # model may send more), one removed is major, and a paired member is compared like any action.
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
            out.append(Change("major", "action", f"discriminator changed: {short(tag_before)} → {short(tag_after)}"))
        if old.get("description") != new.get("description"):
            out += diff_schemas(_description(old), _description(new), where="action", direction="input")
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
    out += [Change("major", member_path("action", m.key), "union member removed") for m in left]
    out += [Change("minor", member_path("action", m.key), "union member added") for m in right]
    for a, b in pairs:
        out += diff_schemas(a.schema, b.schema, where=member_path("action", b.key), direction="input")
    return out


def _description(schema: dict[str, Any]) -> dict[str, Any]:
    """Only the `description` of a union's schema (its members are compared one by one)."""
    return {k: v for k, v in schema.items() if k == "description"}


def _as_member(schema: dict[str, Any], others: list[UnionMember]) -> UnionMember:
    """A plain object action as a member of the other side's union, keyed as that union keys its members."""
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


def _diff_tools(old: Iterable[Tool], new: Iterable[Tool]) -> list[Change]:
    """Tools added or removed, and each kept tool's summary and argument schema compared."""
    before, after = {t.name: t for t in old}, {t.name: t for t in new}
    out: list[Change] = []
    for name in before.keys() - after.keys():
        out.append(Change("major", f"tools.{name}", "tool removed"))
    for name in after.keys() - before.keys():
        out.append(Change("minor", f"tools.{name}", "tool added"))
    for name in sorted(before.keys() & after.keys()):
        summary_before, summary_after = tool_summary(before[name].description), tool_summary(after[name].description)
        if summary_before != summary_after:
            out.append(value_change("patch", f"tools.{name}", "description changed", summary_before, summary_after))
        out += diff_schemas(
            with_documented_args(before[name].input_schema, before[name].description),
            with_documented_args(after[name].input_schema, after[name].description),
            where=f"tools.{name}",
            direction="input",
        )
    return sorted(out, key=lambda c: c.path) if out else out

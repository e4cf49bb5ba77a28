"""What `regen` tells the user: the CHANGELOG.md entry of a new version, and stale hooks.

**CHANGELOG.md is user-owned and appended to.** It is scaffolded once (`build.scaffold`),
and `regen` inserts one entry per new version right below its
`<!-- openenv-gen:changelog -->` marker (above the first `## ` heading if the marker is
gone; a new file if the user deleted it), leaving every other byte as it was. It is not in
the lock and `check` never looks at it, so `check` stays a pure function of snapshot.json:
the history is the user's document, which they may annotate, while the *current* state it
describes is always reproducible from the snapshot. Entries carry no dates, so the same
regeneration writes the same bytes.

`custom.py` holds the user's hooks, which the generated taskset loads; when the new schema
removes (or renames) a field or tool it mentions, the entry lists where (`stale_hooks`), and
when its hooks no longer type-check against the new models, mypy's lines (`hook_types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from openenvgen import __version__
from openenvgen.lifecycle.hook_types import CUSTOM_MODULE as CUSTOM_MODULE  # re-exported: regen reads it here
from openenvgen.lifecycle.mypy_report import Finding
from openenvgen.lifecycle.upstream import Upstream
from openenvgen.spec import EnvSpec
from openenvgen_schemas import modeldiff
from openenvgen_schemas.normalise import union_members

CHANGELOG = "CHANGELOG.md"
CHANGELOG_MARKER = "<!-- openenv-gen:changelog -->"


def changelog_entry(
    spec: EnvSpec,
    previous: str,
    diff: modeldiff.ModelDiff,
    upstream: Upstream | None,
    stale: Sequence[str] = (),
    type_errors: Sequence[Finding] = (),
) -> str:
    """The CHANGELOG.md entry of version `spec.package_version`: what changed since `previous`;
    `stale` from `stale_hooks`, `type_errors` mypy's report on the hooks (`HookTypes.findings`)."""
    source = "the live schema" if upstream is not None and upstream.kind == "base_url" else "a saved capture"
    lines = [f"## {spec.package_version}", ""]
    if diff:
        origin = f"Regenerated from {source} of `{spec.env_id}`" if upstream is not None else "Regenerated"
        lines.append(f"{origin}: a **{diff.impact}** change (was {previous}).")
        lines.append("")
        lines.append(diff.markdown())
    else:
        lines.append(
            f"Regenerated with openenv-gen {__version__} (was {previous}); the environment's model is unchanged."
        )
    if stale:
        lines += ["", f"**Check `{spec.module}/{CUSTOM_MODULE}`**: your hooks mention what this version removed.", ""]
        lines += [f"- {note}" for note in stale]
    if type_errors:
        lines += [
            "",
            f"**`{spec.module}/{CUSTOM_MODULE}` does not type-check against this version's models** "
            "(`openenv-gen check` fails until it does):",
            "",
        ]
        lines += [f"- `{f.path}:{f.line}`: {f.said}" if f.line else f"- `{f.path}`: {f.said}" for f in type_errors]
    return "\n".join(lines) + "\n"


def add_changelog_entry(existing: str | None, entry: str, spec: EnvSpec) -> str:
    """`existing` with `entry` inserted; every byte of `existing` is kept."""
    if existing is None:
        return f"# Changelog\n\n{CHANGELOG_MARKER}\n\n{entry}"
    lines = existing.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == CHANGELOG_MARKER:
            if not line.endswith("\n"):
                lines[i] = line + "\n"
            return "".join(lines[: i + 1]) + "\n" + entry + "".join(lines[i + 1 :])
    for i, line in enumerate(lines):
        if line.startswith("## "):
            return "".join(lines[:i]) + entry + "\n" + "".join(lines[i:])
    sep = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    return existing + sep + entry


def stale_hooks(path: Path, old: EnvSpec, new: EnvSpec) -> list[str]:
    """Where the user's hooks module mentions an observation or action field (or a tool)
    that `old` has and `new` does not, one Markdown line each.

    A static scan: every string literal in `path` (comments and docstrings aside) that
    names a removed field, or has one as a segment of a dotted path (`HIDDEN_FIELDS`), is
    reported. Hooks read observations as dicts, so string keys are where field names
    live (attribute names would mostly be false alarms: `trace.messages`). A renamed
    field is a removed one here, so `observation["feedback"]` in a renderer is caught
    when upstream renames it."""
    if not path.is_file():
        return []
    removed: dict[str, str] = {}
    for label, before, after in (
        ("observation field", old.observation_schema, new.observation_schema),
        (
            "reset observation field",
            old.reset_observation_schema or {},
            new.reset_observation_schema or new.observation_schema,
        ),
        ("action field", old.action_schema, new.action_schema),
    ):
        for name in sorted(_property_names(before) - _property_names(after)):
            removed.setdefault(name, label)
    members_before = {m.key for m in union_members(old.action_schema) or []}
    members_after = {m.key for m in union_members(new.action_schema) or []}
    for name in sorted(members_before - members_after):
        removed.setdefault(name, "union action member")
    for name in sorted({t.name for t in old.tools or ()} - {t.name for t in new.tools or ()}):
        removed.setdefault(name, "tool")
    if not removed:
        return []
    import ast

    text = path.read_text("utf-8")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        return [f"`{CUSTOM_MODULE}` could not be checked: syntax error at line {e.lineno}"]
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: dict[tuple[int, str], str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docstrings:
            continue
        for name in {node.value, *node.value.split(".")} & removed.keys():
            found[(node.lineno, name)] = removed[name]
    return [
        f"line {line}: `{name}` — the {label} is gone in this version (renamed or removed)"
        for (line, name), label in sorted(found.items())
    ]


def _property_names(schema: object) -> set[str]:
    """Every property name anywhere in a JSON schema (nested objects and `$defs` too)."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names |= {str(name) for name in properties}
        for value in schema.values():
            names |= _property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _property_names(value)
    return names

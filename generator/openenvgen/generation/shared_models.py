"""Which of a package's models are OpenEnv's shared MCP models, and how its module imports them.

A class is shared when the package's combined schema defines it under the shared name by
the same JSON text as the one copy (`openenvgen_schemas.mcp_models`), and so is every model
it refers to; codegen then leaves it out (datamodel-code-generator's type overrides) and
imports it from the runtime's `openenvgen_runtime.mcp_models`. The import and the module's
`__all__` are written here as ruff writes them, so the module stays ruff-clean as written.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

from openenvgen_schemas import mcp_models

LINE_LENGTH = 88
"""The models' line length (ruff's default, that of `codegen.FORMAT_SETTINGS`), for the lines written
here after ruff formatted the module."""


def shared_classes(root: dict[str, Any], action_class: str) -> tuple[str, ...]:
    """The classes of the combined schema `root` that are OpenEnv's shared MCP models: each
    defined under the shared name by the same JSON text, and so is every model it refers to."""
    # The exact text, not normalised: a title, a description, a default or a field order
    # of its own makes a package's model its own, generated as it always was.
    ours = {**(root.get("$defs") or {}), action_class: {k: v for k, v in root.items() if k != "$defs"}}
    shared = _shared()
    same = {name for name, (text, _) in shared.items() if name in ours and json.dumps(ours[name]) == text}
    while True:
        closed = {name for name in same if shared[name][1] <= same}
        if closed == same:
            return tuple(sorted(same))
        same = closed


@functools.cache
def _shared() -> dict[str, tuple[str, frozenset[str]]]:
    """Each shared model's JSON text and the models it refers to, by name (read once)."""
    return {name: (json.dumps(schema), frozenset(_refs(schema))) for name, schema in mcp_models.definitions().items()}


def _refs(node: Any) -> set[str]:
    """The `$defs` names `node` refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        own = {ref.removeprefix("#/$defs/")} if isinstance(ref, str) and ref.startswith("#/$defs/") else set()
        return own.union(*(_refs(v) for k, v in node.items() if k != "$ref"))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def import_shared(source: str, shared: tuple[str, ...]) -> str:
    """`source` importing the `shared` classes from the runtime, and naming its models in `__all__`.

    The import goes after the others, behind `# isort: split`: isort places the runtime
    beside pydantic under ruff's defaults and in a section of its own under a project that
    calls it first-party (this repository's), and the split suits both. `__all__` makes the
    imported classes the module's own (ruff's F401, type checkers' re-export rule), listed
    in the order ruff's RUF022 sorts them.
    """
    tree = ast.parse(source)
    lines = source.split("\n")
    # datamodel-code-generator imports the shared classes its models refer to: ours replaces that.
    dropped: set[int] = set()
    end = 0
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            break
        last = node.end_lineno or node.lineno
        if isinstance(node, ast.ImportFrom) and node.module == mcp_models.MODULE:
            dropped.update(range(node.lineno - 1, last))
        else:
            end = last
    head: list[str] = []
    for i, line in enumerate(lines[:end]):
        if i not in dropped and (line or (head and head[-1])):  # one blank line between sections
            head.append(line)
    rest = "\n".join(line for i, line in enumerate(lines[end:], end) if i not in dropped).lstrip("\n")
    public = set(shared)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            public.add(node.name)
        elif isinstance(node, ast.Assign):  # the reset observation's alias
            public.update(t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_"))
    imported = statement(f"from {mcp_models.MODULE} import ", sorted(shared, key=member_key), "()")
    listed = statement("__all__ = ", [f'"{name}"' for name in sorted(public, key=all_key)], "[]")
    block = f"# isort: split\n{imported}\n\n{listed}\n"
    return "\n".join(head).rstrip("\n") + f"\n\n{block}" + (f"\n\n{rest}" if rest else "")


def statement(start: str, items: list[str], brackets: str) -> str:
    """`start` and `items` in `brackets` as ruff formats them: on one line when it fits (an import
    without the brackets), else one item a line."""
    inline = ", ".join(items)
    line = f"{start}{inline}" if start.startswith("from ") else f"{start}{brackets[0]}{inline}{brackets[1]}"
    if len(line) <= LINE_LENGTH:
        return line
    return f"{start}{brackets[0]}\n" + "".join(f"    {item},\n" for item in items) + brackets[1]


def member_key(name: str) -> tuple[bool, bool, str]:
    """ruff's isort order of the names one import brings: constants, classes, then the rest."""
    return (not name.isupper(), not name[:1].isupper(), name)


def all_key(name: str) -> tuple[int, tuple[tuple[int, int | str], ...]]:
    """ruff's RUF022 order of `__all__`: constants, classes, then the rest, each in natural order."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    # Digits compare by value; identifier characters other than digits all sort after them.
    return kind, tuple((0, int(run)) if run.isdigit() else (1, run) for run in re.findall(r"\d+|\D+", name))

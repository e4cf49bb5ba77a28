"""Which of a package's models are OpenEnv's shared MCP models, and how its module imports them.

A class is shared when the package's combined schema defines it under the shared name by
the same JSON text as the one copy (`openenvgen_schemas.mcp_models`), and so is every model
it refers to; codegen then leaves it out (datamodel-code-generator's type overrides) and
imports it from the runtime's `openenvgen_runtime.mcp_models`. The import and the module's
`__all__` are added here to datamodel-code-generator's module before ruff formats it (`python_format`).
"""

from __future__ import annotations

import ast
import functools
import json
from typing import Any

from openenvgen_schemas import mcp_models


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
    """`source` (datamodel-code-generator's module, unformatted) importing the `shared` classes
    from the runtime, and naming its models in `__all__`; `python_format` then sorts and lays
    out both as it does the rest of the module.

    The import goes after the others, behind `# isort: split`: isort places the runtime
    beside pydantic under ruff's defaults and in a section of its own under a project that
    calls it first-party (this repository's), and the split suits both. `__all__` makes the
    imported classes the module's own (ruff's F401, type checkers' re-export rule).
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
    public = set(shared)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            public.add(node.name)
        elif isinstance(node, ast.Assign):  # the reset observation's alias
            public.update(t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_"))
    block = [
        "# isort: split",
        f"from {mcp_models.MODULE} import {', '.join(shared)}",
        f"__all__ = [{', '.join(json.dumps(name) for name in sorted(public))}]",
    ]
    kept = [line for i, line in enumerate(lines) if i not in dropped]
    at = end - sum(1 for i in dropped if i < end)
    return "\n".join([*kept[:at], "", *block, "", *kept[at:]])

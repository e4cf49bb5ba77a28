"""Type-check a package's hooks (`<module>/custom.py`) against its generated models with mypy.

`check` runs it on every package it checks, `regen` after writing a new version. Hooks may be
annotated with the package's models (`observation: Connect4Observation`), so a hook that reads
a field the environment removed or retyped fails here, with the file, the line and the field,
rather than in the middle of a training run.

What is checked, and what it costs:

- only a `custom.py` that defines a function, class or lambda, or imports the package's
  models: one holding only constants (`SYSTEM_PROMPT`, `HIDDEN_FIELDS`, `RESETS`), comments and
  imports, as scaffolded, cannot read a model and is not checked. A package without one pays
  a directory listing; openenv-gen never imports mypy, it runs `python -m mypy`;
- mypy is the optional extra `openenvgen[typecheck]` (the same pin as the `lint` extra).
  Without it, nothing is checked and the caller says so in one line (`unchecked_line`);
- the settings are openenv-gen's, never the user's project's (`MYPY_CONFIG`, written to
  `mypy.ini` beside the cache): pydantic's plugin with typed `__init__`s (so a generated model
  types as pydantic builds it, `T | MISSING` fields included), `check_untyped_defs`,
  `strict_equality`, verifiers read with `follow_untyped_imports`, only the hooks module
  reported (`follow_imports = silent`), and an import that is not installed where openenv-gen
  runs taken as `Any` rather than as an error. verifiers' model-client SDKs (openai,
  anthropic; some 4,600 modules no hook sees) are skipped, which cuts a cold run to about a
  third and a warm one to about a quarter;
- the cache is shared by every package, under the user cache dir
  (`$XDG_CACHE_HOME/openenv-gen/mypy`, else `~/.cache/...`): the first run reads verifiers
  and its dependencies (tens of seconds), later ones take a few seconds;
- packages are checked together, one mypy run for all (more only when two share an import
  name), each found by its own folder on MYPYPATH.

Only drift fails. An error counts when it involves the package's models or the hook APIs
(verifiers', the runtime's), i.e. when it goes away with those taken as `Any`: whenever the
first run reports errors, a second one does exactly that (`follow_imports = skip` for the
package's own modules, `verifiers.*` and `openenvgen_runtime.*`; it reads no verifiers, so it
takes a few seconds). An error both runs report is about the hooks' own code alone
(`RESETS = [{}, {}]` asks for an annotation, a helper returns the wrong type): it runs or
fails the same whatever the environment does, so it is a one-line warning (`unchecked_line`),
never a failure. A file mypy cannot parse is never judged, so it fails.

mypy's report is parsed into `path:line: message` lines, the path relative to the package; an
error on a line that reads a field of the package's models names the field when mypy's
message does not (a retyped field: `... (reads field `legal_actions`)`).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from openenvgen.lifecycle.mypy_report import (
    HOOK_APIS,
    MYPY_CONFIG,
    OWN_CODE_CONFIG,
    Finding,
    errors,
    name_fields,
    rel,
    run_mypy,
    settled_missing_check,
    split_own,
    unreadable,
    write_config,
)

CUSTOM_MODULE = "custom.py"
"""The user-owned hooks module inside the import package (scaffolded once, never in the lock)."""
TYPECHECK_EXTRA = "openenvgen[typecheck]"
"""What installs mypy for `check` and `regen`."""


@dataclass(frozen=True)
class HookTypes:
    """What type-checking one package's hooks found."""

    status: str
    """`no hooks` (nothing to check), `checked`, or `no mypy` (not installed: nothing checked)."""
    path: str = ""
    """The hooks module, relative to the package's folder; "" with no hooks."""
    findings: tuple[Finding, ...] = ()
    """mypy's errors that involve the models or hook APIs (each with its notes): they fail."""
    own: tuple[Finding, ...] = ()
    """mypy's errors that do not change what the hooks do, reported in the warning line only:
    those that remain with the models and hook APIs taken as `Any` (the hooks' own code), and
    `is MISSING` checks of fields the models now always hold (`settled_missing_check`)."""

    @property
    def failed(self) -> bool:
        """True if mypy reported an error."""
        return any(f.severity == "error" for f in self.findings)

    def lines(self) -> list[str]:
        """The report as `path:line: message` lines; empty when the hooks type-check."""
        return [str(f) for f in self.findings] if self.failed else []


NO_HOOKS = HookTypes("no hooks")


def hooks_module(root: Path) -> Path | None:
    """The package's `custom.py` if it has one that needs type-checking (see the module's docstring)."""
    for snapshot in root.glob("*/snapshot.json"):
        custom = snapshot.parent / CUSTOM_MODULE
        if custom.is_file() and defines_hooks(custom.read_text("utf-8", errors="replace")):
            return custom
    return None


def defines_hooks(source: str) -> bool:
    """True if `source` has code that could read a model: a function, class or lambda, or an
    import of the package's models (a file that does not parse too: mypy says where)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            return True
        if isinstance(node, ast.ImportFrom) and _imports_models(node.module, node.level, node.names):
            return True
        if isinstance(node, ast.Import) and any(alias.name.endswith(".models") for alias in node.names):
            return True
    return False


def _imports_models(module: str | None, level: int, names: list[ast.alias]) -> bool:
    """`from .models import X`, `from . import models`, `from PKG.models import X`."""
    if level and module is None:
        return any(alias.name == "models" for alias in names)
    return (module or "") == "models" if level else (module or "").endswith(".models")


def mypy_installed() -> bool:
    """Whether `python -m mypy` can run here (found without importing it)."""
    return importlib.util.find_spec("mypy") is not None


def cache_root() -> Path:
    """Where the settings and mypy's cache live: the user cache dir, as openenv-gen's model cache."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "openenv-gen" / "mypy"


def check_hooks(roots: Iterable[Path]) -> dict[Path, HookTypes]:
    """Type-check the hooks of every package in `roots`; a result for each."""
    results: dict[Path, HookTypes] = {}
    pending: dict[Path, Path] = {}
    for root in roots:
        custom = hooks_module(root)
        if custom is None:
            results[root] = NO_HOOKS
        else:
            pending[root] = custom
    if not pending:
        return results
    if not mypy_installed():
        results.update({root: HookTypes("no mypy", rel(custom, root)) for root, custom in pending.items()})
        return results
    # One run for all, but mypy refuses two modules of one name: those go into another run.
    batches: list[dict[str, tuple[Path, Path]]] = []
    for root, custom in pending.items():
        name = custom.parent.name
        batch = next((b for b in batches if name not in b), None)
        if batch is None:
            batch = {}
            batches.append(batch)
        batch[name] = (root, custom)
    for batch in batches:
        results.update(_run_mypy(list(batch.values())))
    return results


def unchecked_line(results: Mapping[Path, HookTypes]) -> str | None:
    """The one warning line on what was not judged, or None: the hooks that went unchecked
    because mypy is not installed, and mypy's errors about the hooks' own code (`HookTypes.own`)."""
    said = []
    if unchecked := [str(root / r.path) for root, r in results.items() if r.status == "no mypy"]:
        said.append(
            f"hooks not type-checked, mypy is not installed (pip install '{TYPECHECK_EXTRA}'): {', '.join(unchecked)}"
        )
    found = [(root, f) for root, r in results.items() for f in errors(r.own)]
    own = [f"{root / f.path}:{f.line} [{f.code or f.message}]" for root, f in found if not settled_missing_check(f)]
    if own:
        said.append(f"mypy errors in hook code that involves no model or hook API, not counted: {', '.join(own)}")
    if settled := [f"{root / f.path}:{f.line}" for root, f in found if settled_missing_check(f)]:
        said.append(f"`is MISSING` checks of fields the models now always hold, not counted: {', '.join(settled)}")
    return "; ".join(said) or None


def _run_mypy(targets: Sequence[tuple[Path, Path]]) -> dict[Path, HookTypes]:
    roots = [root.resolve() for root, _ in targets]
    with contextlib.ExitStack() as scratch:
        cache = cache_root()
        try:
            cache.mkdir(parents=True, exist_ok=True)
            config = write_config(cache, MYPY_CONFIG)
        except OSError:  # a read-only home: the check still runs, uncached
            cache = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="openenv-gen-mypy-")))
            config = write_config(cache, MYPY_CONFIG)
        findings, unplaced = run_mypy(targets, config, cache / "cache")
        # Errors that might be the hooks' own: run again with the models and hook APIs as Any.
        judged = [
            (root, custom)
            for (root, custom), resolved in zip(targets, roots, strict=True)
            if not unplaced and errors(findings[resolved]) and not any(unreadable(f) for f in findings[resolved])
        ]
        own: dict[Path, list[Finding]] = {}
        if judged:
            skipped = ",".join([*sorted({f"{custom.parent.name}.*" for _, custom in judged}), *HOOK_APIS])
            text = f"{MYPY_CONFIG}\n{OWN_CODE_CONFIG.format(modules=skipped)}"
            as_any = write_config(Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="openenv-gen-"))), text)
            remaining, failed = run_mypy(judged, as_any, cache / "cache-own")
            if not failed:  # a run that failed without a report judges nothing
                own = {root: errors(found) for root, found in remaining.items()}
    out = {}
    for (root, custom), resolved in zip(targets, roots, strict=True):
        drift, theirs = split_own(findings[resolved], {(f.line, f.message) for f in own.get(resolved, [])})
        named = name_fields([*drift, *unplaced], resolved, custom)
        out[root] = HookTypes("checked", rel(custom, root), tuple(named), tuple(theirs))
    return out

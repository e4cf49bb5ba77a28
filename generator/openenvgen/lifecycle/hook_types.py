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

mypy's report is parsed into `path:line: message` lines, the path relative to the package; an
error on a line that reads a field of the package's models names the field when mypy's
message does not (a retyped field: `... (reads field `legal_actions`)`).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CUSTOM_MODULE = "custom.py"
"""The user-owned hooks module inside the import package (scaffolded once, never in the lock)."""
TYPECHECK_EXTRA = "openenvgen[typecheck]"
"""What installs mypy for `check` and `regen`."""

MYPY_CONFIG = """\
# Written by openenv-gen: the settings `openenv-gen check` and `regen` type-check a package's
# custom.py with; openenv-gen rewrites it whenever it differs, so edits here are lost.
[mypy]
plugins = pydantic.mypy
check_untyped_defs = True
strict_equality = True
# Report the hooks module only: the generated files and installed packages are read, not judged.
follow_imports = silent
# The package's own dependencies need not be installed where openenv-gen runs: Any, not an error.
ignore_missing_imports = True
show_absolute_path = True
error_summary = False
color_output = False
pretty = False

[pydantic-mypy]
# Constructors typed field by field, as the model's validators accept them.
init_typed = True

[mypy-verifiers.*]
# verifiers ships no py.typed marker, but its code is annotated.
follow_untyped_imports = True

[mypy-openai.*,anthropic.*]
# verifiers' model-client SDKs: thousands of modules no hook sees.
follow_imports = skip
"""

_LINE = re.compile(r"^(?P<path>.+?):(?:(?P<line>\d+):)? (?P<severity>error|note): (?P<message>.*)$")


@dataclass(frozen=True)
class Finding:
    """One line of mypy's report on a hooks module."""

    path: str
    """The file, relative to the package's folder (POSIX)."""
    line: int
    """0 when mypy names no line."""
    severity: str
    """`error` or `note` (a note explains the error before it)."""
    message: str
    """mypy's words, its error code in brackets at the end (then the field read, if named here)."""

    @property
    def said(self) -> str:
        """The message, marked `note: ` when it is one."""
        return self.message if self.severity == "error" else f"note: {self.message}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.said}" if self.line else f"{self.path}: {self.said}"


@dataclass(frozen=True)
class HookTypes:
    """What type-checking one package's hooks found."""

    status: str
    """`no hooks` (nothing to check), `checked`, or `no mypy` (not installed: nothing checked)."""
    path: str = ""
    """The hooks module, relative to the package's folder; "" with no hooks."""
    findings: tuple[Finding, ...] = ()

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
        results.update({root: HookTypes("no mypy", _rel(custom, root)) for root, custom in pending.items()})
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
    """The one line saying which hooks went unchecked because mypy is not installed, or None."""
    unchecked = [str(root / r.path) for root, r in results.items() if r.status == "no mypy"]
    if not unchecked:
        return None
    return f"hooks not type-checked, mypy is not installed (pip install '{TYPECHECK_EXTRA}'): {', '.join(unchecked)}"


def _run_mypy(targets: Sequence[tuple[Path, Path]]) -> dict[Path, HookTypes]:
    roots = [root.resolve() for root, _ in targets]
    env = {**os.environ, "MYPYPATH": os.pathsep.join(map(str, roots))}
    env.pop("MYPY_CACHE_DIR", None)
    with contextlib.ExitStack() as scratch:
        cache = cache_root()
        try:
            cache.mkdir(parents=True, exist_ok=True)
            config = _write_config(cache)
        except OSError:  # a read-only home: the check still runs, uncached
            cache = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="openenv-gen-mypy-")))
            config = _write_config(cache)
        command = [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache / "cache")]
        done = subprocess.run(
            [*command, *(str(custom.resolve()) for _, custom in targets)],
            capture_output=True,
            text=True,
            env=env,
            cwd=cache,  # mypy also searches its working directory: one holding no module of the user's
            stdin=subprocess.DEVNULL,
        )
    findings: dict[Path, list[Finding]] = {root: [] for root in roots}
    unplaced: list[Finding] = []
    for text in done.stdout.splitlines():
        match = _LINE.match(text)
        if match is None:
            continue
        path = Path(match["path"])
        root = next((r for r in roots if path.is_relative_to(r)), None)
        finding = Finding(
            _rel(path, root) if root is not None else str(path),
            int(match["line"] or 0),
            match["severity"],
            match["message"].rstrip(),  # a note's indentation is its structure
        )
        (findings[root] if root is not None else unplaced).append(finding)
    if done.returncode != 0 and not any(findings.values()) and not unplaced:
        # mypy failed without a report (a crash, a bad setting): never a pass.
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        unplaced.append(Finding("mypy", 0, "error", f"mypy exited {done.returncode}: {said[-1] if said else ''}"))
    out = {}
    for (root, custom), resolved in zip(targets, roots, strict=True):
        found = [*findings[resolved], *unplaced]
        out[root] = HookTypes("checked", _rel(custom, root), tuple(_name_fields(found, resolved, custom)))
    return out


def _write_config(cache: Path) -> Path:
    path = cache / "mypy.ini"
    if not path.is_file() or path.read_text("utf-8") != MYPY_CONFIG:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(MYPY_CONFIG, "utf-8")
        os.replace(tmp, path)
    return path


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def _name_fields(findings: list[Finding], root: Path, custom: Path) -> list[Finding]:
    """Each error on a line that reads a field of the package's models, with the field named
    (unless mypy's message names it already)."""
    if not any(f.severity == "error" for f in findings):
        return findings
    fields = model_fields(custom.with_name("models.py"))
    try:
        tree = ast.parse(custom.read_text("utf-8"))
    except (OSError, SyntaxError):
        return findings
    read: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in fields and node.attr not in read.get(node.lineno, []):
            read.setdefault(node.lineno, []).append(node.attr)
    rel = _rel(custom, root)
    out = []
    for f in findings:
        names = [n for n in read.get(f.line, []) if f'"{n}"' not in f.message] if f.path == rel else []
        if f.severity == "error" and names:
            named = ", ".join(f"`{n}`" for n in names)
            message = f"{f.message} (reads field{'s' if len(names) > 1 else ''} {named})"
            out.append(Finding(f.path, f.line, f.severity, message))
        else:
            out.append(f)
    return out


def model_fields(models: Path) -> set[str]:
    """The attribute names of every model class in a generated `models.py` (its annotated
    class-level names, `model_config` aside)."""
    try:
        tree = ast.parse(models.read_text("utf-8"))
    except (OSError, SyntaxError):
        return set()
    return {
        item.target.id
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id != "model_config"
    }

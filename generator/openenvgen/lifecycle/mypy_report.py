"""mypy on hooks modules: openenv-gen's settings, one run, and its report read back.

`hook_types` decides what is checked and what fails; here is how: `MYPY_CONFIG` (the
settings, see `hook_types`), `OWN_CODE_CONFIG` (the same with the package's own modules and
the hook APIs taken as `Any`, for telling drift from the hooks' own errors), `run_mypy` (the
report parsed into `Finding`s, paths relative to each package) and `name_fields` (an error on
a line that reads a field of the package's models names the field).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

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

HOOK_APIS = ("verifiers.*", "openenvgen_runtime.*")
"""What hooks are written against besides the package's models: their types count as the models' do."""
OWN_CODE_CONFIG = """\
[mypy-{modules}]
# The package's own modules and the hook APIs as Any: an error that remains is the hooks' own code's.
follow_imports = skip
"""

_CODE = re.compile(r"  \[([a-z-]+)\]$")
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
    def code(self) -> str:
        """mypy's error code (`var-annotated`); "" for a note or an error without one."""
        code = _CODE.search(self.message) if self.severity == "error" else None
        return code[1] if code else ""

    @property
    def said(self) -> str:
        """The message, marked `note: ` when it is one."""
        return self.message if self.severity == "error" else f"note: {self.message}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.said}" if self.line else f"{self.path}: {self.said}"


def run_mypy(
    targets: Sequence[tuple[Path, Path]], config: Path, cache: Path
) -> tuple[dict[Path, list[Finding]], list[Finding]]:
    """One mypy run on the hooks modules: the findings of each package (by resolved root),
    and those that name no package (a crash, reported as an error: never a pass)."""
    roots = [root.resolve() for root, _ in targets]
    env = {**os.environ, "MYPYPATH": os.pathsep.join(map(str, roots))}
    env.pop("MYPY_CACHE_DIR", None)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache)),
            *(str(custom.resolve()) for _, custom in targets),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=config.parent,  # mypy also searches its working directory: one holding no module of the user's
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
            rel(path, root) if root is not None else str(path),
            int(match["line"] or 0),
            match["severity"],
            match["message"].rstrip(),  # a note's indentation is its structure
        )
        (findings[root] if root is not None else unplaced).append(finding)
    if done.returncode != 0 and not any(findings.values()) and not unplaced:
        # mypy failed without a report (a crash, a bad setting): never a pass.
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        unplaced.append(Finding("mypy", 0, "error", f"mypy exited {done.returncode}: {said[-1] if said else ''}"))
    return findings, unplaced


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def unreadable(finding: Finding) -> bool:
    """An error that stopped mypy reading the file (a syntax error): nothing in it was judged."""
    return finding.severity == "error" and finding.message.endswith("[syntax]")


_SETTLED_MISSING = re.compile(
    r'^Non-overlapping identity check \(left operand type: ".*", right operand type: "MISSING"\)'
)


def settled_missing_check(finding: Finding) -> bool:
    """`obs.x is MISSING` (or `is not`) on a field the models now always hold: the check is
    settled, and the code runs as before, reading the value it was waiting for (regen calls
    the change minor), so it is not drift, though `strict_equality` flags the dead branch."""
    return finding.code == "comparison-overlap" and bool(_SETTLED_MISSING.match(finding.message))


def split_own(findings: list[Finding], own: set[tuple[int, str]]) -> tuple[list[Finding], list[Finding]]:
    """The findings that involve the models (the drift), and those that do not change what
    the hooks do: the hooks' own (each error reported again with the models as Any, `own`)
    and settled MISSING checks; each error with the notes that follow it."""
    drift: list[Finding] = []
    theirs: list[Finding] = []
    into = drift
    for f in findings:
        if f.severity == "error":
            into = theirs if (f.line, f.message) in own or settled_missing_check(f) else drift
        into.append(f)
    return drift, theirs


def write_config(folder: Path, text: str) -> Path:
    path = folder / "mypy.ini"
    if not path.is_file() or path.read_text("utf-8") != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    return path


def rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def name_fields(findings: list[Finding], root: Path, custom: Path) -> list[Finding]:
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
    hooks = rel(custom, root)
    out = []
    for f in findings:
        names = [n for n in read.get(f.line, []) if f'"{n}"' not in f.message] if f.path == hooks else []
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

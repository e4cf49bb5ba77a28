"""Generated packages on disk: finding them, and reading their lock, snapshot and files.

A generated package is a directory with an `openenv-gen.lock`; its `<module>/snapshot.json`
holds the spec it was generated from, so it can be re-rendered without the network.
Everything here only reads: `check`, `regen` and `publish` build on it, and generating into
an existing package reads its version from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from openenvgen.errors import UsageError
from openenvgen.generation.layout import HEADER_TEXT
from openenvgen.generation.layout import read_lock as read_lock  # the one reader; importers read it here too
from openenvgen.generation.render import LOCK_FILE, spec_from_snapshot
from openenvgen.spec import EnvSpec

# Directories never searched for packages or package files.
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "site-packages"})


def _searched(dirnames: list[str]) -> list[str]:
    """The subdirectories worth walking into, sorted: no hidden, cache or build directories."""
    return sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info"))


# --- where packages are ---------------------------------------------------------------------


def is_package(path: Path) -> bool:
    """Whether `path` is a generated package directory (a lock, or a `*/snapshot.json`)."""
    return path.is_dir() and ((path / LOCK_FILE).is_file() or any(path.glob("*/snapshot.json")))


def find_packages(root: Path) -> list[Path]:
    """Every generated package (a directory with an `openenv-gen.lock`) under `root`."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if LOCK_FILE in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = _searched(dirnames)
    return sorted(found)


def package_of(path: Path) -> Path | None:
    """The generated package `path` is in (or is), if any."""
    for candidate in (path, *path.parents):
        if (candidate / LOCK_FILE).is_file():
            return candidate
    return None


def resolve_targets(paths: Iterable[Path] | None) -> list[Path]:
    """Package roots for command-line paths.

    No paths: every package under the current directory. A package directory is itself;
    a file or directory inside a package maps to that package (so a pre-commit hook can
    pass changed files); a directory holding packages maps to all of them. A file outside
    every package is ignored (pre-commit passes every changed file); a directory that is
    neither is an error.
    """
    if not paths:
        return find_packages(Path("."))
    out: list[Path] = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        if path.is_dir() and is_package(path):
            roots = [path]
        else:
            owner = package_of(path.resolve())
            if owner is not None:
                roots = [owner if path.is_absolute() else Path(os.path.relpath(owner))]
            elif path.is_dir():
                roots = find_packages(path)
                if not roots:
                    raise UsageError(f"{path}: not a generated package (no {LOCK_FILE} in it or above it)")
            else:
                roots = []
        for root in roots:
            if root.resolve() not in {r.resolve() for r in out}:
                out.append(root)
    return out


# --- what a package holds -------------------------------------------------------------------


class SnapshotError(ValueError):
    """A package's snapshot is missing or unreadable, so nothing can be re-rendered."""

    def __init__(self, rel: str, kind: str, note: str) -> None:
        super().__init__(f"{rel}: {note}")
        self.rel, self.kind, self.note = rel, kind, note


def snapshot_path(root: Path) -> Path:
    """Where a package's `snapshot.json` is (or should be): in the module its lock names."""
    lock = read_lock(root) or {}
    package = lock.get("package")
    if isinstance(package, str):
        candidate = root / package.replace("-", "_").lower() / "snapshot.json"
        if candidate.is_file() or not any(root.glob("*/snapshot.json")):
            return candidate
    found = sorted(root.glob("*/snapshot.json"))
    if not found:
        raise UsageError(f"{root}: no */snapshot.json; is this a generated package?")
    return found[0]


def load_spec(root: Path) -> EnvSpec:
    """The EnvSpec a package was generated from (its snapshot.json)."""
    path = snapshot_path(root)
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        raise SnapshotError(rel, "missing", "the package cannot be re-rendered without it")
    try:
        return spec_from_snapshot(path.read_text("utf-8"))
    except (ValueError, ValidationError, TypeError) as e:
        first = e.errors()[0]["msg"] if isinstance(e, ValidationError) else str(e)
        raise SnapshotError(rel, "edited", f"not a valid snapshot: {first}") from None


def looks_generated(path: Path) -> bool:
    """Whether a file carries openenv-gen's header near its top."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return HEADER_TEXT.encode() in head


def files_on_disk(root: Path) -> dict[str, Path]:
    """Files of a package worth comparing (no caches, no hidden or build directories)."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = _searched(dirnames)
        for name in filenames:
            path = Path(dirpath, name)
            out[path.relative_to(root).as_posix()] = path
    return out

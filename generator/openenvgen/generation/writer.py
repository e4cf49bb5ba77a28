"""Atomic write of a rendered package: all of it lands, or nothing changes.

The tree is written to a sibling temporary directory and swapped in with renames, so an
interrupted or failed run leaves an existing package byte-identical. Files in an
existing package that its lock does not list are the user's: they are carried over.
A marked file (README.md) keeps the user's text outside its generated markers
(`marked.merge_marked`); `user_updates` edit user-owned files (regen's CHANGELOG entry)
and `scaffold` fills a new package's user-owned files, inside the same atomic swap.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from openenvgen.errors import OutputError
from openenvgen.generation.layout import LOCK_FILE, read_lock, sha256_text
from openenvgen.generation.marked import MARKED_FILES, MarkerError, merge_marked


def _locked_files(root: Path) -> set[str] | None:
    """The generated files an existing package's lock lists; None if it has no lock."""
    if not (root / LOCK_FILE).is_file():
        return None
    files = (read_lock(root) or {}).get("files")
    if not isinstance(files, dict):
        raise OutputError(f"{root / LOCK_FILE}: unreadable lock file; move it away to regenerate")
    return set(files)


def check_target(out: Path) -> set[str]:
    """Refuse a target that is not a directory we own; return its generated file set."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        return set()
    locked = _locked_files(out)
    if locked is None:
        raise OutputError(f"--out {out} is a non-empty directory that is not a generated package (no {LOCK_FILE})")
    return locked


def _user_files(root: Path, generated: set[str]) -> list[str]:
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel not in generated and rel != LOCK_FILE and "__pycache__" not in rel:
            out.append(rel)
    return sorted(out)


def _merge_marked(out: Path, files: dict[str, str]) -> dict[str, str]:
    """Keep the user's text outside the generated markers of README.md and the like."""
    merged = dict(files)
    for rel in MARKED_FILES & files.keys():
        path = out / rel
        if not path.is_file():
            continue
        existing = path.read_text("utf-8")
        try:
            merged[rel] = merge_marked(existing, files[rel])
        except MarkerError as e:
            # A file from before the markers is replaced only if nobody edited it.
            locked = (read_lock(out) or {}).get("files")
            if not isinstance(locked, dict) or locked.get(rel) != sha256_text(existing):
                raise OutputError(f"{path}: cannot keep your text: {e}; restore the markers or move it away") from None
    return merged


def write_tree(
    files: dict[str, str],
    out: Path,
    *,
    user_updates: Mapping[str, Callable[[str | None], str]] | None = None,
    scaffold: Callable[[Path], None] | None = None,
) -> None:
    """Write a rendered package to `out` in one swap, keeping the user's files and marked text."""
    out = out.resolve()
    generated = check_target(out)
    if out.exists():
        files = _merge_marked(out, files)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    # mkdtemp makes 0700; the package directory should get the usual umask-based mode.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)
    try:
        written = []
        for rel, text in files.items():
            target = staging / rel
            if not target.resolve().is_relative_to(staging.resolve()):
                raise OutputError(f"refusing to write outside the package: {rel}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            written.append(target)
        # On disk before the swap; all written first, so one journal commit serves them all.
        for target in written:
            fd = os.open(target, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if out.exists():
            for rel in _user_files(out, generated):
                if rel in files:
                    raise OutputError(f"{out / rel} is not in the lock but would be overwritten; move it away first")
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(out / rel, staging / rel)
        if scaffold is not None:
            scaffold(staging)
        for rel, update in (user_updates or {}).items():
            if rel in files or rel in generated:
                raise OutputError(f"{rel} is generated; it cannot be updated as a user file")
            target = staging / rel
            text = update(target.read_text("utf-8") if target.is_file() else None)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, out: Path) -> None:
    if not out.exists():
        os.rename(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)

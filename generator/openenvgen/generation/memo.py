"""The generation memo: `openenv-gen NAME` for a catalog env, answered from the record of the
same generation made before, without importing pydantic, Jinja or typer.

A generation from the catalog is a function of its request (the env's name, `--env-id`,
`--package`, `--app`; for a new package also `--no-scaffold` and the scaffold source it
records) and of the generator itself: its code, templates and catalog data, and the
installed distributions (pydantic, Jinja, datamodel-code-generator, ruff, ...).
`fingerprint` hashes all of the latter by content, on every run; the record of a request
lives under the hash of the fingerprint and the request, so a change to any of them is a
new record (the first run after it is a full one). After a full generation, `Memo.record`
keeps:

- the package's name (the default `--out`);
- for a new package: every generated file, lock included, and the scaffold's files;
- the lock: a package holding exactly its files regenerates in place to the same bytes.

`Memo.replay` writes a new package from the record through the same atomic writer, each
file checked against the sha256 its recorded lock gives it (a damaged record is never
written). Regenerating in place, it reads the package's lock: when that lock is a recorded
one and every file it lists is a regular file with the sha256 it records (the README with no
text of the user's around its markers), a full run would write the same bytes, so nothing is
written (a full run would also drop `__pycache__` folders and reset file modes and mtimes;
this leaves them). Anything else is a full run, which records. `OPENENV_GEN_CACHE=off`
disables the memo with the other caches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import openenvgen_schemas
from openenvgen.generation.layout import (
    LOCK_FILE,
    cache_dir,
    installed_distributions,
    package_dir,
    sha256_text,
    templates_dir,
    touch,
    write_cache_entry,
)
from openenvgen.generation.marked import MARKED_FILES, MarkerError, merge_marked
from openenvgen.generation.scaffold import scaffold_source, scaffold_writer

MEMO_FORMAT = 1
"""Bumped when a record's layout or meaning changes (old records are then never read)."""
_SETTLED_NS = 2_000_000_000
"""How old the newest generator file must be before its hash is kept under its `stat`."""
MAX_LOCKS = 16
"""Locks kept per request (one per package version regenerated in place), newest last."""
RECORDS_KEPT = 64
"""Generation records kept (each holds a whole package, some 40 KB), the most recently used;
as many generator fingerprints."""


def fingerprint(cache: Path | None = None) -> str:
    """The sha256 of everything a generation's output depends on besides its request: the
    `openenvgen` and `openenvgen_schemas` packages' files (code, catalog data), the
    templates, the installed distributions (names and versions) and the Python version.

    Reading every file costs more than the rest of a memo's answer, so with a `cache` folder
    the hash is kept under the files' identity as `stat` gives it (path, size, inode,
    modification and change times: a write to a file changes its ctime, which nothing but the
    clock sets) and read back while that identity holds, as Python checks its bytecode."""
    files = _generator_files()
    identity = hashlib.sha256(f"{MEMO_FORMAT}\0{sys.version}\0".encode())
    newest = 0
    for label, path in files:
        st = os.stat(path)
        identity.update(f"{label}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0".encode())
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    identity.update("\0".join(installed_distributions()).encode())
    known = cache / f"{identity.hexdigest()}.sha256" if cache is not None else None
    if known is not None:
        with contextlib.suppress(OSError):
            stored = known.read_text("ascii")
            if len(stored) == 64:
                return stored
    digest = hashlib.sha256(f"{MEMO_FORMAT}\0{sys.version}\0".encode())
    for label, path in files:
        with open(path, "rb") as fh:
            data = fh.read()
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)
    digest.update("\0".join(installed_distributions()).encode())
    # A file written within the last moments could be written again within the same clock
    # tick, its stat unchanged ("racy git"): its hash is kept only once it has settled.
    if known is not None and time.time_ns() - newest > _SETTLED_NS:
        write_cache_entry(known, digest.hexdigest(), keep=RECORDS_KEPT)
    return digest.hexdigest()


def _generator_files() -> list[tuple[str, str]]:
    """(label, path) of every file of the generator's packages and templates, sorted; the
    label is the root's number and the path under it."""
    roots: list[Path] = []
    for root in (package_dir(), Path(openenvgen_schemas.__file__).resolve().parent, templates_dir().resolve()):
        if not any(root.is_relative_to(seen) for seen in roots):  # packaged templates are in the package
            roots.append(root)
    found = []
    for index, root in enumerate(roots):
        stack = [(str(root), "")]
        while stack:
            folder, prefix = stack.pop()
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=True):
                        if entry.name != "__pycache__":
                            stack.append((entry.path, f"{prefix}{entry.name}/"))
                    else:
                        found.append((f"{index}/{prefix}{entry.name}", entry.path))
    return sorted(found)


class Memo:
    """The record of one `openenv-gen NAME` request of a catalog env."""

    def __init__(
        self,
        folder: Path,
        name: str,
        *,
        env_id: str | None = None,
        package: str | None = None,
        app: str | None = None,
        scaffold: bool = True,
    ) -> None:
        self.fingerprint = fingerprint(folder / "fingerprints")
        request = json.dumps([MEMO_FORMAT, self.fingerprint, name, env_id, package, app])
        self.path = folder / f"{hashlib.sha256(request.encode()).hexdigest()}.json"
        # A new package's output also depends on whether it is scaffolded, and from where.
        self.variant = f"scaffold:{scaffold_source()}" if scaffold else "no scaffold"

    @classmethod
    def open(
        cls, name: str, *, env_id: str | None, package: str | None, app: str | None, scaffold: bool
    ) -> Memo | None:
        """The memo of this request; None when the caches are off (or the generator's files
        cannot be read: the full run then says why)."""
        root = cache_dir()
        if root is None:
            return None
        try:
            return cls(root / "generations", name, env_id=env_id, package=package, app=app, scaffold=scaffold)
        except OSError:
            return None

    def _read(self) -> dict[str, object]:
        try:
            record = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def replay(self, out: Path | None) -> Path | None:
        """Answer the request from the record (writing a new package, or confirming that one
        regenerates to itself); the package's folder, or None when a full run is needed."""
        record = self._read()
        package = record.get("package")
        if not isinstance(package, str) or not package:
            return None
        touch(self.path)  # used: kept longest when the cache is trimmed
        target = out or Path(package)
        if (target / LOCK_FILE).is_file():
            return target if self._unchanged(target, record.get("locks")) else None
        new = record.get("new")
        entry = new.get(self.variant) if isinstance(new, dict) else None
        if not isinstance(entry, dict):
            return None
        files, scaffold = entry.get("files"), entry.get("scaffold")
        if not _consistent(files) or not (scaffold is None or _texts(scaffold)):
            return None
        assert isinstance(files, dict)
        from openenvgen.generation.writer import write_tree  # (tempfile and shutil: only to write)

        write_tree(files, target, scaffold=scaffold_writer(scaffold) if isinstance(scaffold, dict) else None)
        return target

    def _unchanged(self, target: Path, locks: object) -> bool:
        """Whether `target`'s lock is a recorded one and every file it lists is as it says."""
        try:
            if not stat.S_ISREG(os.lstat(target / LOCK_FILE).st_mode):
                return False
            text = (target / LOCK_FILE).read_bytes()
            if not isinstance(locks, list) or hashlib.sha256(text).hexdigest() not in locks:
                return False
            for rel, digest in json.loads(text)["files"].items():
                path = target / rel
                if not stat.S_ISREG(os.lstat(path).st_mode) or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                    return False
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            return False
        return True

    def record(self, files: Mapping[str, str], *, new: bool, scaffold: Mapping[str, str] | None) -> None:
        """Keep what a full run wrote: `files`, the rendered package (its lock included), and
        for a new package `scaffold`, its scaffolded files. Skipped when the generator changed
        during the run (the record would not say which version wrote it)."""
        try:
            lock = json.loads(files[LOCK_FILE])
            if fingerprint() != self.fingerprint or not isinstance(lock.get("package"), str):
                return
            record = self._read()
            if record.get("package") != lock["package"]:
                record = {"package": lock["package"]}
            if new:
                variants = record.get("new")
                variants = variants if isinstance(variants, dict) else {}
                variants[self.variant] = {"files": dict(files), "scaffold": dict(scaffold) if scaffold else None}
                record["new"] = variants
            # Regenerating a package that holds exactly these files writes them again, as long
            # as the README's splice of its own generated block changes nothing.
            if all(_splices_to_itself(files[rel]) for rel in MARKED_FILES & files.keys()):
                locks = record.get("locks")
                locks = [x for x in locks if isinstance(x, str)] if isinstance(locks, list) else []
                digest = sha256_text(files[LOCK_FILE])
                record["locks"] = [*[x for x in locks if x != digest], digest][-MAX_LOCKS:]
        except (OSError, ValueError, KeyError):
            return  # a damaged record or an unreadable file must not break generation
        write_cache_entry(self.path, json.dumps(record, ensure_ascii=False), keep=RECORDS_KEPT)


def _splices_to_itself(text: str) -> bool:
    try:
        return merge_marked(text, text) == text
    except MarkerError:
        return False


def _texts(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _consistent(files: object) -> bool:
    """Whether recorded `files` are a package and its lock: every file, and only those, with
    the sha256 the lock records."""
    if not _texts(files):
        return False
    assert isinstance(files, dict)
    try:
        locked = json.loads(files[LOCK_FILE])["files"]
    except (KeyError, ValueError, TypeError):
        return False
    if not isinstance(locked, dict) or set(locked) != set(files) - {LOCK_FILE}:
        return False
    return all(sha256_text(files[rel]) == digest for rel, digest in locked.items())

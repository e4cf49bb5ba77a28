"""Each package's upstream: where its live schema comes from, and how it differs from the snapshot.

`check --upstream` and `regen --from-upstream` read the environment's schema from its live
server (`--base-url`) or a saved capture (`--schema-file`), one per package. The spec
rebuilt from it keeps the package's name, env id and env defaults; only what the server
says (schemas, tools, metadata) comes from upstream. `modeldiff.diff_specs(old, new)`
rates the difference (major, minor or patch) and says what the next version would be.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenvgen import sources
from openenvgen.errors import UsageError
from openenvgen.generation.on_disk import SnapshotError, load_spec, read_lock
from openenvgen.generation.render import LOCK_FILE
from openenvgen.spec import EnvSpec, ServerInterface, build_spec
from openenvgen_schemas import modeldiff
from openenvgen_servers.access import NO_CREDENTIALS, Credentials


@dataclass(frozen=True)
class Upstream:
    """Where one package's upstream schema is read from: a live server or a saved capture."""

    kind: str  # "base_url" | "schema_file"
    value: str
    timeout: float = sources.TIMEOUT_S
    credentials: Credentials = NO_CREDENTIALS
    """A gated server's `--header`s and `--ca-bundle` (names and a path, never a value)."""

    def interface(self) -> ServerInterface:
        """Read the schema, metadata and tools from the source."""
        if self.kind == "base_url":
            return sources.from_server(self.value, timeout=self.timeout, credentials=self.credentials)
        return sources.from_schema_file(Path(self.value))

    def __str__(self) -> str:
        return self.value


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _names(root: Path, spec: EnvSpec | None) -> set[str]:
    names = {root.name, root.resolve().name, str(root), root.as_posix().rstrip("/")}
    if spec is not None:
        names |= {spec.name, spec.package, spec.module}
    return names


def upstream_sources(
    roots: list[Path],
    base_urls: list[str],
    schema_files: list[str],
    *,
    option: str,
    timeout: float = sources.TIMEOUT_S,
    credentials: Credentials = NO_CREDENTIALS,
) -> dict[Path, Upstream]:
    """Map each package to its upstream source.

    One `--base-url URL` (or `--schema-file FILE`) serves a single package; with several
    packages each value is `NAME=URL`, NAME being the package's env name, distribution
    name, import name or directory. Every package needs exactly one source.
    """
    given = [("base_url", v) for v in base_urls] + [("schema_file", v) for v in schema_files]
    if not given:
        raise UsageError(f"{option} needs the environment's live schema: pass --base-url URL (or --schema-file FILE)")
    specs: dict[Path, EnvSpec | None] = {}
    for root in roots:
        try:
            specs[root] = load_spec(root)
        except Exception:  # an unreadable snapshot is reported by `check`, not here
            specs[root] = None
    out: dict[Path, Upstream] = {}
    for kind, value in given:
        name, sep, rest = value.partition("=")
        targets = [r for r in roots if sep and _NAME.match(name) and name in _names(r, specs[r])]
        if sep and targets:
            value = rest
        elif len(roots) == 1:
            targets = roots
        else:
            raise UsageError(
                f"--{kind.replace('_', '-')} {value!r}: with several packages, say which one it is for: NAME=VALUE"
            )
        for root in targets:
            if root in out:
                raise UsageError(f"{root}: more than one upstream source given")
            out[root] = Upstream(kind, value, timeout, credentials)
    missing = [str(r) for r in roots if r not in out]
    if missing:
        raise UsageError(f"no --base-url (or --schema-file) for {', '.join(missing)}; pass NAME=URL for each package")
    return out


def upstream_spec(old: EnvSpec, upstream: Upstream) -> EnvSpec:
    """What the package would be now: upstream's schema with the package's own identity."""
    spec = build_spec(
        upstream.interface(), name=old.name, env_id=old.env_id, package=old.package, defaults=old.defaults
    )
    return spec.model_copy(update={"package_version": old.package_version})


# --- check --upstream ---------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """One package compared with its upstream."""

    root: Path
    source: str
    version: str = ""
    diff: modeldiff.ModelDiff | None = None
    """None when the package could not be compared (see `error`)."""
    error: str = ""
    notes: tuple[str, ...] = ()

    @property
    def drifted(self) -> bool:
        return bool(self.diff)

    @property
    def next_version(self) -> str:
        return modeldiff.bump(self.version, self.diff.impact) if self.diff else self.version

    def lines(self) -> list[str]:
        root = self.root
        if self.diff is None:
            return [f"{root}: cannot compare with upstream: {self.error}"]
        out = [f"{root}: note: {note}" for note in self.notes]
        if not self.diff:
            return [*out, f"{root}: no upstream drift ({self.source})"]
        out.append(
            f"{root}: upstream drift ({self.diff.impact}; regen would make {self.version} → {self.next_version}) "
            f"from {self.source}"
        )
        out += [f"{root}: warning: {warning}" for warning in self.diff.warnings]
        return out + [f"  {line}" for line in self.diff.lines()]

    def as_json(self) -> dict[str, Any]:
        """Stable keys: source, drift, impact, version, next_version, warnings, changes, notes, error."""
        diff = self.diff
        return {
            "source": self.source,
            "drift": self.drifted,
            "impact": diff.impact if diff else None,
            "version": self.version or None,
            "next_version": self.next_version if diff is not None and self.version else None,
            "warnings": diff.warnings if diff else [],
            "changes": [c.as_json() for c in diff.changes] if diff else [],
            "notes": list(self.notes),
            "error": self.error or None,
        }


def compare_upstream(roots: list[Path], upstreams: dict[Path, Upstream]) -> list[Drift]:
    """Compare each package's snapshot (the lock's schema) with upstream."""
    out = []
    for root in roots:
        source = str(upstreams[root])
        try:
            old = load_spec(root)
        except SnapshotError as e:
            out.append(Drift(root, source, error=str(e)))  # `check` has reported it (exit 1)
            continue
        notes: tuple[str, ...] = ()
        lock = read_lock(root) or {}
        if lock.get("schema_sha256") not in (None, old.schema_sha256):
            notes = (f"{LOCK_FILE} schema_sha256 differs from snapshot.json (run `openenv-gen check`)",)
        new = upstream_spec(old, upstreams[root])
        out.append(Drift(root, source, old.package_version, modeldiff.diff_specs(old, new), notes=notes))
    return out


def check_upstream(roots: list[Path], upstreams: dict[Path, Upstream], *, echo: Callable[[str], None] = print) -> bool:
    """Print each package's comparison with upstream; True on drift."""
    drifts = compare_upstream(roots, upstreams)
    for drift in drifts:
        for line in drift.lines():
            echo(line)
    return any(d.drifted for d in drifts)

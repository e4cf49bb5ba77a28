"""Make a package: resolve its spec from a source, render it and write it (scaffolding a new one)."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict, Unpack

from openenvgen import catalog, sources
from openenvgen.errors import UsageError
from openenvgen.generation.memo import Memo
from openenvgen.generation.on_disk import SnapshotError, load_spec
from openenvgen.generation.render import LOCK_FILE, render_package
from openenvgen.generation.scaffold import scaffold_files, scaffold_writer
from openenvgen.generation.writer import write_tree
from openenvgen.spec import EnvDefaults, EnvSpec, build_spec

RESERVED_NAMES = frozenset({"generate", "check", "list", "regen", "publish"})


class SpecSource(TypedDict, total=False):
    """Where `resolve_spec` reads a spec from, and what it overrides: its keyword arguments."""

    base_url: str | None
    timeout: float
    schema_file: Path | None
    env_id: str | None
    package: str | None
    app: str | None


def resolve_spec(
    name: str,
    *,
    base_url: str | None = None,
    timeout: float = sources.TIMEOUT_S,
    schema_file: Path | None = None,
    env_id: str | None = None,
    package: str | None = None,
    app: str | None = None,
) -> EnvSpec:
    """The spec of env `name`, from a live server, a schema file or the catalog's snapshot."""
    if name in RESERVED_NAMES:
        raise UsageError(f"{name!r} is a subcommand, not an env name")
    if base_url and schema_file:
        raise UsageError("pass --base-url or --schema-file, not both")
    entry = catalog.entries().get(name)
    if base_url:
        interface = sources.from_server(base_url, timeout=timeout)
    elif schema_file:
        interface = sources.from_schema_file(schema_file)
    elif entry is not None:
        interface = entry.interface()
    else:
        catalog.lookup(name)  # raises with the list of known names
        raise AssertionError("unreachable")
    defaults = entry.defaults if entry is not None else EnvDefaults()
    if app:
        defaults = defaults.model_copy(update={"app": app})
    return build_spec(
        interface,
        name=name,
        env_id=env_id or (entry.env_id if entry is not None else f"openenv/{name}"),
        package=package,
        defaults=defaults,
    )


def generate_package(
    name: str,
    *,
    out: Path | None = None,
    scaffold: bool = True,
    memo: Memo | None = None,
    **source: Unpack[SpecSource],
) -> Path:
    """Generate (or regenerate in place) the package of env `name`; returns its directory.
    With `memo` (the CLI's, for this request of a catalog env), what was written is recorded."""
    spec = resolve_spec(name, **source)
    target = out or Path(spec.package)
    new = not (target / LOCK_FILE).is_file()
    scaffolded = None
    if not new:
        # Regenerating in place never moves the version backwards (`regen` bumps it).
        try:
            spec = spec.model_copy(update={"package_version": load_spec(target).package_version})
        except (SnapshotError, UsageError):
            pass
    elif scaffold:
        # A new package: its user-owned files (CHANGELOG.md, tests/) are scaffolded once.
        scaffolded = scaffold_files(spec)
    files = render_package(spec)
    write_tree(files, target, scaffold=scaffold_writer(scaffolded) if scaffolded is not None else None)
    if memo is not None and not source.get("base_url") and not source.get("schema_file"):
        memo.record(files, new=new, scaffold=scaffolded)
    return target

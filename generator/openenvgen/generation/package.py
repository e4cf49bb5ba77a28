"""Make a package: resolve its spec from a source, render it and write it (scaffolding a new one).

A target folder that holds another package (its lock names another distribution) is never
rewritten as this one, which would leave that package's user-owned files (custom.py, tests/,
CHANGELOG.md) behind as if they were this one's: it is refused, or with `replace` the whole
folder is first moved aside, beside it, to `<folder>.<its package>.old`, and this package is
written there new.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, Unpack

from openenvgen import catalog, sources
from openenvgen.errors import OutputError, UsageError
from openenvgen.generation.on_disk import SnapshotError, load_spec, read_lock
from openenvgen.generation.render import LOCK_FILE, render_package
from openenvgen.generation.scaffold import scaffold_files, scaffold_writer
from openenvgen.generation.writer import write_tree
from openenvgen.spec import EnvDefaults, EnvSpec, build_spec
from openenvgen_servers.access import NO_CREDENTIALS, Credentials


class SpecSource(TypedDict, total=False):
    """Where `resolve_spec` reads a spec from, and what it overrides: its keyword arguments."""

    base_url: str | None
    timeout: float
    schema_file: Path | None
    env_id: str | None
    package: str | None
    app: str | None
    executes_code: bool
    credentials: Credentials


def resolve_spec(
    name: str,
    *,
    base_url: str | None = None,
    timeout: float = sources.TIMEOUT_S,
    schema_file: Path | None = None,
    env_id: str | None = None,
    package: str | None = None,
    app: str | None = None,
    executes_code: bool = False,
    credentials: Credentials = NO_CREDENTIALS,
) -> EnvSpec:
    """The spec of env `name`, from a live server, a schema file or the catalog's snapshot;
    `executes_code` marks an env that runs model-written code (a catalog entry may say so itself)."""
    if base_url and schema_file:
        raise UsageError("pass --base-url or --schema-file, not both")
    entry = catalog.find(name)  # its defaults apply to a live server or schema file of it too
    if entry is not None:
        name = entry.name  # `Wordle` is the catalog's `wordle`
    if base_url:
        interface = sources.from_server(base_url, timeout=timeout, credentials=credentials)
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
    if executes_code:
        defaults = defaults.model_copy(update={"executes_code": True})
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
    replace: bool = False,
    echo: Callable[[str], None] | None = None,
    **source: Unpack[SpecSource],
) -> Path:
    """Generate (or regenerate in place) the package of env `name`; returns its directory.
    A target holding another package is refused, or with `replace` moved aside first (said
    through `echo`)."""
    spec = resolve_spec(name, **source)
    target = out or Path(spec.package)
    _set_aside_another_package(target, spec.package, replace=replace, echo=echo)
    new = not (target / LOCK_FILE).is_file()
    scaffolded = None
    if not new:
        # Regenerating in place never moves the version backwards (`regen` bumps it), nor
        # drops the mark of an env that runs model-written code.
        try:
            old = load_spec(target)
        except (SnapshotError, UsageError):
            pass
        else:
            marked = spec.defaults.executes_code or old.defaults.executes_code
            defaults = spec.defaults.model_copy(update={"executes_code": marked})
            spec = spec.model_copy(update={"package_version": old.package_version, "defaults": defaults})
    elif scaffold:
        # A new package: its user-owned files (CHANGELOG.md, tests/) are scaffolded once.
        scaffolded = scaffold_files(spec)
    files = render_package(spec)
    write_tree(files, target, scaffold=scaffold_writer(scaffolded) if scaffolded is not None else None)
    return target


def _set_aside_another_package(
    target: Path, package: str, *, replace: bool, echo: Callable[[str], None] | None
) -> None:
    """Refuse a `target` whose lock names another package than `package`, or with `replace`
    move it aside whole, so nothing of its user's is lost or left in the new package."""
    lock = read_lock(target) if (target / LOCK_FILE).is_file() else None
    other = lock.get("package") if lock is not None else None
    if not isinstance(other, str) or other == package:
        return
    aside = target.with_name(f"{target.name}.{other}.old")
    if not replace:
        raise OutputError(
            f"--out {target} holds another package, {other}; pass --replace to move it to {aside} "
            f"and write {package} there"
        )
    if aside.exists() or aside.is_symlink():
        raise OutputError(f"--replace: {aside} exists (an earlier replaced package?); move it away first")
    try:
        target.rename(aside)
    except OSError as e:
        raise OutputError(f"--replace: cannot move {target} to {aside}: {e.strerror}") from None
    if echo is not None:
        echo(f"moved {other} (with your files in it) from {target} to {aside}")

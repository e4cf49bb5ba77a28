"""Make a package: resolve its spec from a source, render it and write it (scaffolding a new one)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict, Unpack

from openenvgen import catalog, sources
from openenvgen.build.on_disk import SnapshotError, load_spec
from openenvgen.build.render import LOCK_FILE, RUNTIME_DISTRIBUTION, render_package, spec_from_snapshot
from openenvgen.build.scaffold import scaffold_hook
from openenvgen.build.writer import write_tree
from openenvgen.errors import UsageError
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
    name: str, *, out: Path | None = None, scaffold: bool = True, **source: Unpack[SpecSource]
) -> Path:
    """Generate (or regenerate in place) the package of env `name`; returns its directory."""
    spec = resolve_spec(name, **source)
    target = out or Path(spec.package)
    hook = None
    if (target / LOCK_FILE).is_file():
        # Regenerating in place never moves the version backwards (`regen` bumps it).
        try:
            spec = spec.model_copy(update={"package_version": load_spec(target).package_version})
        except (SnapshotError, UsageError):
            pass
    elif scaffold:
        # A new package: its user-owned files (CHANGELOG.md, tests/) are scaffolded once.
        hook = scaffold_hook(spec)
    write_tree(render_package(spec), target, scaffold=hook)
    return target


def next_steps(target: Path) -> str:
    """The two commands that take a freshly generated package to a run: install, vf-eval.

    `openenvgen-runtime` is not on PyPI yet, so the install names it as a local directory
    when it is not installed already: this generator's own `runtime/` when it runs from a
    checkout, else a line saying where it comes from.
    """
    import shlex
    from importlib import metadata

    package = target.name
    snapshots = sorted(target.glob("*/snapshot.json"))
    if snapshots:
        package = spec_from_snapshot(snapshots[0].read_text("utf-8")).package
    shown = target.as_posix() if target.is_absolute() or target.as_posix().startswith(".") else f"./{target.as_posix()}"
    install = ["pip", "install"]
    note = ""
    try:
        metadata.version(RUNTIME_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        checkout = Path(__file__).resolve().parents[3]  # generator/openenvgen/build/package.py
        if (checkout / "runtime" / "pyproject.toml").is_file():
            # The runtime, and the schema code it shares with the generator when it is there.
            for local in ("schemas", "runtime"):
                if (checkout / local / "pyproject.toml").is_file():
                    path = os.path.relpath(checkout / local)
                    install.append(path if path.startswith(("/", ".")) else f"./{path}")
        else:
            note = (
                f"\n  ({RUNTIME_DISTRIBUTION} is not on PyPI yet: install it first from an openenv-gen "
                "checkout, `pip install ./schemas ./runtime`, or from an index made with `openenv-gen publish runtime`)"
            )
    install.append(shown)
    return (
        "next: install it, then evaluate a model on it:\n"
        f"  {shlex.join(install)}\n"
        f"  vf-eval {shlex.quote(package)} -m MODEL --no-push{note}"
    )

"""The generator's use cases, each a straight line: source → spec → render → write/compare."""

from __future__ import annotations

from pathlib import Path

from openenvgen import catalog, sources
from openenvgen.errors import UsageError
from openenvgen.render import LOCK_FILE, render_package
from openenvgen.spec import EnvDefaults, EnvSpec, build_spec

RESERVED_NAMES = frozenset({"generate", "check", "list", "regen", "publish"})


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
    if name in RESERVED_NAMES:
        raise UsageError(f"{name!r} is a subcommand, not an env name")
    if base_url and schema_file:
        raise UsageError("pass --base-url or --schema-file, not both")
    entry = catalog.entries().get(name)
    if base_url:
        capture = sources.from_server(base_url, timeout=timeout)
    elif schema_file:
        capture = sources.from_schema_file(schema_file)
    elif entry is not None:
        capture = entry.capture()
    else:
        catalog.lookup(name)  # raises with the list of known names
        raise AssertionError("unreachable")
    defaults = entry.defaults if entry is not None else EnvDefaults()
    if app:
        defaults = defaults.model_copy(update={"app": app})
    return build_spec(
        capture,
        name=name,
        env_id=env_id or (entry.env_id if entry is not None else f"openenv/{name}"),
        package=package,
        defaults=defaults,
    )


def generate_package(name: str, *, out: Path | None = None, scaffold: bool = True, **source: object) -> Path:
    from openenvgen.writer import write_tree

    spec = resolve_spec(name, **source)  # type: ignore[arg-type]
    target = out or Path(spec.package)
    hook = None
    if (target / LOCK_FILE).is_file():
        # Regenerating in place never moves the version backwards (`regen` bumps it).
        from openenvgen.checking import SnapshotError, load_spec

        try:
            spec = spec.model_copy(update={"package_version": load_spec(target).package_version})
        except (SnapshotError, UsageError):
            pass
    elif scaffold:
        # A new package: its user-owned files (CHANGELOG.md, tests/) are scaffolded once.
        from openenvgen.regen import scaffold as scaffold_hook

        hook = scaffold_hook(spec)
    write_tree(render_package(spec), target, scaffold=hook)
    return target


def catalog_rows() -> list[tuple[str, str, str, str]]:
    """(name, env id, "MCP" or "typed", the action's fields or the tools) per catalog env.

    Fields read `name: type` (`name?: type` when optional; the base `metadata` field is
    left out); tools read `tool(arg, arg?)`.
    """
    rows = []
    for entry in catalog.entries().values():
        spec = build_spec(entry.capture(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        if spec.is_mcp:
            kind = "MCP"
            detail = ", ".join(f"{t.name}({_fields(t.input_schema, typed=False)})" for t in spec.tools or ())
        else:
            kind, detail = "typed", _fields(spec.action_schema, typed=True)
        rows.append((entry.name, entry.env_id, kind, detail))
    return rows


def _fields(schema: dict, *, typed: bool) -> str:
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in (schema.get("properties") or {}).items():
        if name == "metadata" and typed:
            continue
        label = name if name in required else f"{name}?"
        parts.append(f"{label}: {_type_name(prop)}" if typed else label)
    return ", ".join(parts)


def _type_name(prop: object) -> str:
    if not isinstance(prop, dict):
        return "any"
    kind = prop.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return "|".join(_type_name(p) for p in prop[key])
    if isinstance(prop.get("$ref"), str):
        return prop["$ref"].rsplit("/", 1)[-1]
    if "const" in prop or "enum" in prop:
        return "enum"
    return "any"

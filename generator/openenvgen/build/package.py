"""The generator's use cases, each a straight line: source → spec → render → write/compare."""

from __future__ import annotations

import os
from pathlib import Path

from openenvgen import catalog, sources
from openenvgen.errors import UsageError
from openenvgen.render import LOCK_FILE, render_package
from openenvgen.spec import EnvDefaults, EnvSpec, build_spec
from openenvgen_schemas.normalise import union_members

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


RUNTIME_DISTRIBUTION = "openenvgen-runtime"


def next_steps(target: Path) -> str:
    """The two commands that take a freshly generated package to a run: install, vf-eval.

    `openenvgen-runtime` is not on PyPI yet, so the install names it as a local directory
    when it is not installed already: this generator's own `runtime/` when it runs from a
    checkout, else a line saying where it comes from.
    """
    import shlex
    from importlib import metadata

    from openenvgen.render import spec_from_snapshot

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
        checkout = Path(__file__).resolve().parents[2]
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


def catalog_json() -> dict:
    """`list --json`. Stable keys: `envs`, a list in catalog order of `{name, env_id, package,
    action, fields, tools, members}`; `action` is "typed", "mcp" or "union"; a typed env has
    `fields` (`[{name, type, required}]`, the base `metadata` field left out); an MCP env has
    `tools` (`[{name, description, arguments: [{name, type, required}]}]`); a union env has
    `members` (`[{key, fields}]`, each without the shared tag); the others are null."""
    envs = []
    for entry in catalog.entries().values():
        spec = build_spec(entry.capture(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        members = None if spec.is_mcp else union_members(spec.action_schema)
        envs.append({
            "name": entry.name,
            "env_id": entry.env_id,
            "package": spec.package,
            "action": "mcp" if spec.is_mcp else "union" if members else "typed",
            "fields": None if spec.is_mcp or members else _field_list(spec.action_schema, skip_metadata=True),
            "tools": [
                {"name": t.name, "description": t.description, "arguments": _field_list(t.input_schema, skip_metadata=False)}
                for t in spec.tools or ()
            ] if spec.is_mcp else None,
            "members": [
                {"key": m.key, "fields": _field_list(_without(m.schema, m.tag_property), skip_metadata=True)} for m in members
            ] if members else None,
        })
    return {"envs": envs}


def _field_list(schema: dict, *, skip_metadata: bool) -> list[dict]:
    required = set(schema.get("required") or [])
    return [
        {"name": name, "type": _type_name(prop), "required": name in required}
        for name, prop in (schema.get("properties") or {}).items()
        if not (skip_metadata and name == "metadata")
    ]


def catalog_rows() -> list[tuple[str, str, str, str]]:
    """(name, env id, "MCP" or "typed", the action's fields or the tools) per catalog env.

    Fields read `name: type` (`name?: type` when optional; the base `metadata` field is
    left out); tools read `tool(arg, arg?)`.
    """
    rows = []
    for entry in catalog.entries().values():
        spec = build_spec(entry.capture(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        members = union_members(spec.action_schema)
        if spec.is_mcp:
            kind = "MCP"
            detail = ", ".join(f"{t.name}({_fields(t.input_schema, typed=False)})" for t in spec.tools or ())
        elif members:
            # One alternative each, by its key, with its own fields (not the shared tag).
            kind = "union"
            detail = " | ".join(f"{m.key}({_fields(_without(m.schema, m.tag_property), typed=False)})" for m in members)
        else:
            kind, detail = "typed", _fields(spec.action_schema, typed=True)
        rows.append((entry.name, entry.env_id, kind, detail))
    return rows


def _without(schema: dict, prop: str | None) -> dict:
    """`schema` without the property `prop` (and without the base `metadata` field)."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in (prop, "metadata")}
    return {**schema, "properties": props}


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

"""The generator's use cases, each a straight line: source → spec → render → write/compare."""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from openenvgen import catalog, sources
from openenvgen.errors import UsageError
from openenvgen.render import LOCK_FILE, render_package, spec_from_snapshot
from openenvgen.spec import EnvDefaults, EnvSpec, build_spec

RESERVED_NAMES = frozenset({"generate", "check", "list", "regen", "publish"})


def resolve_spec(
    name: str,
    *,
    base_url: str | None = None,
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
        capture = sources.from_server(base_url)
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


def generate_package(name: str, *, out: Path | None = None, **source: object) -> Path:
    from openenvgen.writer import write_tree

    spec = resolve_spec(name, **source)  # type: ignore[arg-type]
    target = out or Path(spec.package)
    write_tree(render_package(spec), target)
    return target


def catalog_rows() -> list[tuple[str, str, str, str]]:
    rows = []
    for entry in catalog.entries().values():
        spec = build_spec(entry.capture(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
        if spec.is_mcp:
            kind, detail = "MCP tools", ", ".join(t.name for t in spec.tools or ())
        else:
            props = spec.action_schema.get("properties", {})
            required = set(spec.action_schema.get("required", []))
            kind = "typed"
            detail = ", ".join(f"{p}{'' if p in required else '?'}" for p in props if p != "metadata")
        rows.append((entry.name, entry.env_id, kind, detail))
    return rows


@dataclass(frozen=True)
class Difference:
    path: str
    kind: str  # stale | missing | extra
    diff: str


def diff_package(root: Path) -> list[Difference]:
    """Compare a package on disk with a fresh render from its own snapshot."""
    snapshots = sorted(root.glob("*/snapshot.json"))
    if not snapshots:
        raise UsageError(f"{root}: no */snapshot.json; is this a generated package?")
    spec = spec_from_snapshot(snapshots[0].read_text("utf-8"))
    expected = render_package(spec)
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and "__pycache__" not in rel:
            found[rel] = path
    out: list[Difference] = []
    for rel, text in expected.items():
        if rel not in found:
            out.append(Difference(rel, "missing", ""))
            continue
        actual = found[rel].read_text("utf-8", errors="replace")
        if actual != text:
            diff = "".join(
                difflib.unified_diff(
                    actual.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
                )
            )
            out.append(Difference(rel, "stale", diff))
    locked = set(expected) - {LOCK_FILE}
    for rel in sorted(set(found) - set(expected)):
        # Files the lock does not list are user-owned unless they sit where generated ones do.
        if rel.startswith(f"{spec.module}/") and rel.endswith(".py") and rel not in locked:
            out.append(Difference(rel, "extra", ""))
    return out


def check_packages(paths: list[Path]) -> bool:
    stale = False
    for root in paths:
        differences = diff_package(root)
        for d in differences:
            stale = True
            print(f"{root}: {d.kind}: {d.path}", file=sys.stderr)
            if d.diff:
                sys.stderr.write(d.diff)
        if not differences:
            print(f"{root}: up to date")
    return stale

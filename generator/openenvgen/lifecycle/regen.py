"""Regeneration: `check --upstream`, `regen`, semver bumps, CHANGELOG entries, scaffolding.

`regen` re-renders a package with this generator, from its own snapshot, or with
`--from-upstream` from the environment's live schema (`--base-url`) or a saved capture
(`--schema-file`). The new spec keeps the package's name, env id and env defaults; only
what the server says (schemas, tools, metadata) comes from upstream. The version is
bumped by the largest impact in `modeldiff.diff_specs(old, new)`; when the model is
unchanged but this generator now writes different files, it is a patch; when nothing
differs, nothing is bumped or written (hand-edited generated files are restored as they
were, without a bump).

**CHANGELOG.md is user-owned and appended to.** It is scaffolded once (with copier, see
`scaffold`), and `regen` inserts one entry per new version right below its
`<!-- openenv-gen:changelog -->` marker (above the first `## ` heading if the marker is
gone; a new file if the user deleted it), leaving every other byte as it was. It is not in
the lock and `check` never looks at it, so `check` stays a pure function of snapshot.json:
the history is the user's document, which they may annotate, while the *current* state it
describes is always reproducible from the snapshot. Entries carry no dates, so the same
regeneration writes the same bytes.

**User-owned files** (anything not in the lock: the scaffolded `CHANGELOG.md`, `tests/`,
`<module>/custom.py`, `.copier-answers.yml`, and the README outside its generated markers)
survive every regeneration byte for byte; generated files are always rewritten. Copier
runs only when a package is created, and is imported only then. `custom.py` holds the
user's hooks, which the generated taskset loads; when the new schema removes (or renames)
a field or tool it mentions, the CHANGELOG entry lists where (`stale_hooks`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from openenvgen_schemas import modeldiff
from openenvgen_schemas.normalise import union_members

from openenvgen import __version__, sources
from openenvgen.checking import SnapshotError, load_spec, read_lock
from openenvgen.errors import GenError, SchemaError, UsageError
from openenvgen.render import LOCK_FILE, render_package, templates_dir
from openenvgen.spec import Capture, EnvSpec, build_spec

CHANGELOG = "CHANGELOG.md"
CHANGELOG_MARKER = "<!-- openenv-gen:changelog -->"
CUSTOM_MODULE = "custom.py"
"""The user-owned hooks module inside the import package (scaffolded once, never in the lock)."""


# --- where the upstream schema of each package comes from -----------------------------------


@dataclass(frozen=True)
class Upstream:
    kind: str  # "base_url" | "schema_file"
    value: str
    timeout: float = sources.TIMEOUT_S

    def capture(self) -> Capture:
        if self.kind == "base_url":
            return sources.from_server(self.value, timeout=self.timeout)
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
    roots: list[Path], base_urls: list[str], schema_files: list[str], *, option: str, timeout: float = sources.TIMEOUT_S
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
            out[root] = Upstream(kind, value, timeout)
    missing = [str(r) for r in roots if r not in out]
    if missing:
        raise UsageError(f"no --base-url (or --schema-file) for {', '.join(missing)}; pass NAME=URL for each package")
    return out


def upstream_spec(old: EnvSpec, upstream: Upstream) -> EnvSpec:
    """What the package would be now: upstream's schema with the package's own identity."""
    spec = build_spec(upstream.capture(), name=old.name, env_id=old.env_id, package=old.package, defaults=old.defaults)
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
            f"{root}: upstream drift ({self.diff.impact}; regen would make {self.version} → {self.next_version}) from {self.source}"
        )
        out += [f"{root}: warning: {warning}" for warning in self.diff.warnings]
        return out + [f"  {line}" for line in self.diff.lines()]

    def as_json(self) -> dict:
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
        notes = ()
        lock = read_lock(root) or {}
        if lock.get("schema_sha256") not in (None, old.schema_sha256):
            notes = (f"{LOCK_FILE} schema_sha256 differs from snapshot.json (run `openenv-gen check`)",)
        new = upstream_spec(old, upstreams[root])
        out.append(Drift(root, source, old.package_version, modeldiff.diff_specs(old, new), notes=notes))
    return out


def check_upstream(roots: list[Path], upstreams: dict[Path, Upstream], *, echo=print) -> bool:  # type: ignore[no-untyped-def]
    """Print each package's comparison with upstream; True on drift."""
    drifts = compare_upstream(roots, upstreams)
    for drift in drifts:
        for line in drift.lines():
            echo(line)
    return any(d.drifted for d in drifts)


# --- regen --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    root: Path
    old_version: str
    new_version: str
    diff: modeldiff.ModelDiff
    wrote: bool
    reason: str
    stale_hooks: tuple[str, ...] = ()
    """Where the package's custom.py mentions what this version removed (see `stale_hooks`)."""

    def summary(self) -> str:
        if not self.wrote:
            return f"{self.root}: up to date ({self.old_version})"
        if self.old_version == self.new_version:
            return f"{self.root}: rewritten ({self.reason}); version stays {self.new_version}"
        check = f"; check {CUSTOM_MODULE}, see {CHANGELOG}" if self.stale_hooks else ""
        return f"{self.root}: {self.old_version} → {self.new_version} ({self.reason}){check}"


def regen_package(root: Path, upstream: Upstream | None = None) -> Outcome:
    from openenvgen.checking import diff_package
    from openenvgen.writer import write_tree

    try:
        old = load_spec(root)
    except SnapshotError as e:
        raise SchemaError(f"{root}: {e}; restore it (e.g. from version control) to regenerate") from None
    new = upstream_spec(old, upstream) if upstream is not None else old
    diff = modeldiff.diff_specs(old, new)
    impact = diff.impact
    same_version = render_package(new)
    lock_on_disk = (root / LOCK_FILE).read_text("utf-8") if (root / LOCK_FILE).is_file() else None
    if impact is not None:
        reason = f"{impact}: {len(diff.changes)} model change{'s' if len(diff.changes) != 1 else ''}"
    elif lock_on_disk != same_version[LOCK_FILE]:
        impact, reason = "patch", f"regenerated by openenv-gen {__version__}; no model change"
    elif diff_package(root):
        write_tree(same_version, root)
        return Outcome(root, old.package_version, old.package_version, diff, True, "generated files restored")
    else:
        return Outcome(root, old.package_version, old.package_version, diff, False, "up to date")
    try:
        version = modeldiff.bump(old.package_version, impact)
    except ValueError as e:
        raise SchemaError(f"{root}: {e}") from None
    spec = new.model_copy(update={"package_version": version})
    stale = stale_hooks(root / old.module / CUSTOM_MODULE, old, new)
    entry = changelog_entry(spec, old.package_version, diff, upstream, stale)
    write_tree(render_package(spec), root, user_updates={CHANGELOG: lambda text: add_changelog_entry(text, entry, spec)})
    return Outcome(root, old.package_version, version, diff, True, reason, tuple(stale))


def changelog_entry(
    spec: EnvSpec, previous: str, diff: modeldiff.ModelDiff, upstream: Upstream | None, stale: Sequence[str] = ()
) -> str:
    source = "the live schema" if upstream is not None and upstream.kind == "base_url" else "a saved capture"
    lines = [f"## {spec.package_version}", ""]
    if diff:
        origin = f"Regenerated from {source} of `{spec.env_id}`" if upstream is not None else "Regenerated"
        lines.append(f"{origin}: a **{diff.impact}** change (was {previous}).")
        lines.append("")
        lines.append(diff.markdown())
    else:
        lines.append(f"Regenerated with openenv-gen {__version__} (was {previous}); the environment's model is unchanged.")
    if stale:
        lines += ["", f"**Check `{spec.module}/{CUSTOM_MODULE}`**: your hooks mention what this version removed.", ""]
        lines += [f"- {note}" for note in stale]
    return "\n".join(lines) + "\n"


def add_changelog_entry(existing: str | None, entry: str, spec: EnvSpec) -> str:
    """`existing` with `entry` inserted; every byte of `existing` is kept."""
    if existing is None:
        return f"# Changelog\n\n{CHANGELOG_MARKER}\n\n{entry}"
    lines = existing.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == CHANGELOG_MARKER:
            if not line.endswith("\n"):
                lines[i] = line + "\n"
            return "".join(lines[: i + 1]) + "\n" + entry + "".join(lines[i + 1 :])
    for i, line in enumerate(lines):
        if line.startswith("## "):
            return "".join(lines[:i]) + entry + "\n" + "".join(lines[i:])
    sep = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    return existing + sep + entry


# --- stale hooks in custom.py ----------------------------------------------------------------


def stale_hooks(path: Path, old: EnvSpec, new: EnvSpec) -> list[str]:
    """Where the user's hooks module mentions an observation or action field (or a tool)
    that `old` has and `new` does not, one Markdown line each.

    A static scan: every string literal in `path` (comments and docstrings aside) that
    names a removed field, or has one as a segment of a dotted path (`HIDDEN_FIELDS`), is
    reported. Hooks read observations as dicts, so string keys are where field names
    live (attribute names would mostly be false alarms: `trace.messages`). A renamed
    field is a removed one here, so `observation["feedback"]` in a renderer is caught
    when upstream renames it."""
    if not path.is_file():
        return []
    removed: dict[str, str] = {}
    for label, before, after in (
        ("observation field", old.observation_schema, new.observation_schema),
        ("reset observation field", old.reset_observation_schema or {}, new.reset_observation_schema or new.observation_schema),
        ("action field", old.action_schema, new.action_schema),
    ):
        for name in sorted(_property_names(before) - _property_names(after)):
            removed.setdefault(name, label)
    members_before = {m.key for m in union_members(old.action_schema) or []}
    members_after = {m.key for m in union_members(new.action_schema) or []}
    for name in sorted(members_before - members_after):
        removed.setdefault(name, "union action member")
    for name in sorted({t.name for t in old.tools or ()} - {t.name for t in new.tools or ()}):
        removed.setdefault(name, "tool")
    if not removed:
        return []
    import ast

    text = path.read_text("utf-8")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        return [f"`{CUSTOM_MODULE}` could not be checked: syntax error at line {e.lineno}"]
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: dict[tuple[int, str], str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docstrings:
            continue
        for name in {node.value, *node.value.split(".")} & removed.keys():
            found[(node.lineno, name)] = removed[name]
    return [
        f"line {line}: `{name}` — the {label} is gone in this version (renamed or removed)"
        for (line, name), label in sorted(found.items())
    ]


def _property_names(schema: object) -> set[str]:
    """Every property name anywhere in a JSON schema (nested objects and `$defs` too)."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names |= {str(name) for name in properties}
        for value in schema.values():
            names |= _property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _property_names(value)
    return names


# --- scaffolding (copier, once per package) -------------------------------------------------


def scaffold(spec: EnvSpec) -> Callable[[Path], None]:
    """A writer hook that runs the copier template in templates/scaffold into a new package."""

    def run(destination: Path) -> None:
        try:
            _run_copier(spec, destination)
        except Exception as e:  # copier's own errors: an internal failure here, exit 70
            raise GenError(f"scaffolding {spec.package} with copier failed: {type(e).__name__}: {e}") from None

    return run


def _run_copier(spec: EnvSpec, destination: Path) -> None:
    import copier  # slow to import: only when a package is created

    example = spec.defaults.example_action
    copier.run_copy(
        str(templates_dir() / "scaffold"),
        destination,
        data={
            "package": spec.package,
            "module": spec.module,
            "stem": spec.class_stem,
            "env_id": spec.env_id,
            "package_version": spec.package_version,
            "example_action": dict(example) if example is not None else None,
            # Template-only values (not questions, so not recorded as answers).
            "example_action_py": repr(dict(example)) if example is not None else "None",
            "openenvgen_version": __version__,
        },
        defaults=True,
        overwrite=False,
        skip_if_exists=["**"],
        quiet=True,
        settings=copier.Settings(),  # ignore the user's copier settings: same answers, same files
    )

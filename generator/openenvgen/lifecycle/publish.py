"""`openenv-gen publish`: check → list → build (PEP 517) → `twine check` → upload what is missing.

Every path is a generated package (it has a lock or `*/snapshot.json`), the runtime
distribution (`runtime/`, which has no snapshot: its files are sanity-checked and its
version must sit inside the range generated packages require) or one of its dependencies of
ours, `schemas/` (`openenvgen-schemas`) and `servers/` (`openenvgen-servers`), which go
first. In order, each step for every package before the next step starts: all packages are
checked (a stale one is refused, as `check` would report it); the index is asked which files
it already has (`index`), so an unreachable index fails before anything is built; all are
built (sdist, then the wheel from it) and pass `twine check --strict` (`distributions`);
then each missing file is uploaded on its own with `twine upload`. A file that appeared
meanwhile (the index answers 409, or 400 "already exists") is reported as skipped, so a
partially published version gets only its missing files and re-running is safe.

A line saying `uploaded` is printed only after twine exited 0 for that file.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from openenvgen.errors import GenerationError, StaleError, UsageError
from openenvgen.generation.on_disk import is_package
from openenvgen.generation.render import RUNTIME_DISTRIBUTION, RUNTIME_REQUIREMENT
from openenvgen.lifecycle.check import diff_package
from openenvgen.lifecycle.distributions import build_distributions, require_tools, twine_check, upload
from openenvgen.lifecycle.index import index_files, normalize, resolve_target

SCHEMAS_DISTRIBUTION = "openenvgen-schemas"
"""A dependency of ours of the runtime (and the generator): schema normalisation and diff."""
SERVERS_DISTRIBUTION = "openenvgen-servers"
"""The other one: talking to env servers and starting them (it depends on the schemas)."""
SHARED = {SCHEMAS_DISTRIBUTION: "openenvgen_schemas", SERVERS_DISTRIBUTION: "openenvgen_servers"}
"""The runtime's dependencies of ours, each with its import package, in publishing order."""
PUBLISHING_ORDER = [*SHARED, RUNTIME_DISTRIBUTION]
"""Which of ours goes first: each before what depends on it (generated packages come last)."""


@dataclass(frozen=True)
class Project:
    """A distribution to publish: its directory, name, version and whether it is generated."""

    root: Path
    name: str
    version: str
    generated: bool

    @property
    def label(self) -> str:
        """`name version`, as the report shows it."""
        return f"{self.name} {self.version}"


def load_project(root: Path) -> Project:
    """Read a directory's pyproject.toml; refuse anything but a generated package, runtime/, schemas/ or servers/."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(
            f"{root}: no pyproject.toml; publish takes generated package directories, runtime/, schemas/ or servers/"
        )
    try:
        data = tomllib.loads(pyproject.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise GenerationError(f"{pyproject}: not valid TOML ({e})") from None
    project = data.get("project")
    if not isinstance(project, dict):
        project = {}
    name, version = project.get("name"), project.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise GenerationError(f"{pyproject}: [project] has no static name and version")
    generated = is_package(root)
    if not generated and normalize(name) not in PUBLISHING_ORDER:
        raise UsageError(
            f"{root}: neither a generated package (no */snapshot.json) "
            f"nor {RUNTIME_DISTRIBUTION}, {SCHEMAS_DISTRIBUTION} or {SERVERS_DISTRIBUTION}"
        )
    return Project(root=root, name=name, version=version, generated=generated)


def stale_files(root: Path) -> list[str]:
    """`check` for one generated package: what differs from a fresh render of its snapshot.

    The only place publish runs the check, through the same function `check` uses.
    """
    return [f"{d.path} ({d.kind})" for d in diff_package(root)]


def ensure_publishable(project: Project) -> None:
    """Refuse a stale generated package; sanity-check the runtime (it has no snapshot)."""
    if project.generated:
        stale = stale_files(project.root)
        if stale:
            shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
            raise StaleError(
                f"{project.root} is stale: {shown}; see `openenv-gen check {project.root}` and regenerate it"
            )
        return
    package = SHARED.get(normalize(project.name))
    if package is not None:
        module = project.root / package / "__init__.py"
        if not module.is_file() or not (project.root / "README.md").is_file():
            folder = package.removeprefix("openenvgen_")
            raise GenerationError(f"{project.root}: no {package}/__init__.py or README.md; is this {folder}/?")
        return
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    module = project.root / "openenvgen_runtime" / "__init__.py"
    if not module.is_file() or not (project.root / "README.md").is_file():
        raise GenerationError(f"{project.root}: no openenvgen_runtime/__init__.py or README.md; is this runtime/?")
    try:
        version = Version(project.version)
    except InvalidVersion:
        raise GenerationError(f"{project.root}: version {project.version!r} is not a valid version") from None
    if not Requirement(RUNTIME_REQUIREMENT).specifier.contains(version, prereleases=True):
        raise GenerationError(
            f"{project.root}: {RUNTIME_DISTRIBUTION} {version} is outside the range generated packages "
            f"require ({RUNTIME_REQUIREMENT}); move that range with the version"
        )


@dataclass
class PublishOutcome:
    """The file names `publish` uploaded, found already on the index, or would upload (`--dry-run`)."""

    uploaded: list[str]
    skipped: list[str]
    would_upload: list[str]


def publish_packages(
    paths: Iterable[Path],
    *,
    repository_url: str | None = None,
    repository: str | None = None,
    index_url: str | None = None,
    dry_run: bool = False,
    dist_dir: Path | None = None,
    build_isolation: bool = True,
    echo: Callable[[str], None] = print,
) -> PublishOutcome:
    """`openenv-gen publish`: every step for every package before the next step starts."""
    roots = list(dict.fromkeys(Path(p) for p in paths))
    if not roots:
        raise UsageError("publish needs at least one package directory")
    require_tools()
    target = resolve_target(repository_url, repository, index_url)
    projects = [load_project(root) for root in roots]
    # Dependencies first: schemas, servers, the runtime, then the generated packages.
    projects.sort(key=lambda p: (p.generated, p.generated or PUBLISHING_ORDER.index(normalize(p.name))))
    for project in projects:
        ensure_publishable(project)
        echo(f"{project.root}: up to date ({project.label})")
    # Ask the index about every project before building or uploading anything: an
    # unreachable index fails fast, and nothing is uploaded without a listing.
    present = {project.name: index_files(target, project.name) for project in projects}

    outcome = PublishOutcome([], [], [])
    with tempfile.TemporaryDirectory(prefix="openenv-gen-publish-") as tmp:
        built: list[tuple[Project, list[Path]]] = []
        for i, project in enumerate(projects):
            files = build_distributions(project.root, Path(tmp) / str(i), isolation=build_isolation)
            echo(f"built {', '.join(f.name for f in files)}")
            built.append((project, files))
        twine_check([f for _, files in built for f in files])
        echo("twine check passed")
        if dist_dir is not None:
            dist_dir.mkdir(parents=True, exist_ok=True)
            for _, files in built:
                for f in files:
                    shutil.copy2(f, dist_dir / f.name)

        for project, files in built:
            listing = present[project.name]
            if listing is None:
                echo(f"{target.shown} does not list {project.name}; the upload itself will detect existing files")
            for f in files:
                if listing is not None and f.name.lower() in listing:
                    echo(f"skipped {f.name}: already on the index")
                    outcome.skipped.append(f.name)
                elif dry_run:
                    echo(f"would upload {f.name} to {target.shown}")
                    outcome.would_upload.append(f.name)
                elif upload(f, target):
                    echo(f"uploaded {f.name} to {target.shown}")
                    outcome.uploaded.append(f.name)
                else:
                    echo(f"skipped {f.name}: the index already has it")
                    outcome.skipped.append(f.name)
    if dry_run:
        echo(f"dry run: {len(outcome.would_upload)} to upload, {len(outcome.skipped)} already on the index")
    else:
        echo(f"done: {len(outcome.uploaded)} uploaded, {len(outcome.skipped)} already on the index")
    return outcome

"""Scaffolding: a new package's user-owned files, from the copier template in templates/scaffold.

`CHANGELOG.md`, `tests/`, `<module>/custom.py` (the user's hooks) and `.copier-answers.yml`
are written when a package is created; they are not in the lock, so every later
(re)generation carries them over byte for byte. The first render does not run copier (its
import alone costs more than the rest of generating a package): `render_scaffold` renders
the bundled template with Jinja2 the way copier's `run_copy` does (the scaffold tests
compare the two byte for byte), and the answers file records where the template lives
(`_src_path`, openenv-gen's git repository) and which release it came from (`_commit`, its
tag), which is what `copier update` needs: `openenv-gen regen --scaffold` runs it
(`lifecycle/scaffold_update.py`).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from openenvgen import __version__
from openenvgen.errors import GenError
from openenvgen.generation.layout import templates_dir

if TYPE_CHECKING:
    from typing import Any

    from openenvgen.spec import EnvSpec

SCAFFOLD_REPOSITORY = "https://github.com/openenv-gen/openenv-gen.git"
"""Where copier fetches the scaffold of a release (the repository's root copier.yml points into
templates/scaffold); recorded as `_src_path` in every new package's answers file."""

SOURCE_VARIABLE = "OPENENVGEN_SCAFFOLD_SRC"
"""Records another template repository instead (a fork, a mirror, a local clone for offline use)."""

ANSWERS_FILE = ".copier-answers.yml"


def scaffold_source() -> str:
    """The template repository a new package records: $OPENENVGEN_SCAFFOLD_SRC, else openenv-gen's."""
    source = os.environ.get(SOURCE_VARIABLE) or SCAFFOLD_REPOSITORY
    # A local clone is recorded by its absolute path: the package may be updated from elsewhere.
    return str(Path(source).resolve()) if Path(source).is_dir() else source


def release_tag(version: str = __version__) -> str:
    """The git tag of an openenv-gen release, which holds the scaffold it renders."""
    return f"v{version}"


def scaffold_answers(spec: EnvSpec) -> dict[str, Any]:
    """The answers to the template's questions for `spec` (what .copier-answers.yml records)."""
    from openenvgen.generation.codegen import observation_class

    example = spec.defaults.example_action
    return {
        "package": spec.package,
        "module": spec.module,
        "stem": spec.class_stem,
        "env_id": spec.env_id,
        "package_version": spec.package_version,
        # Keys sorted, as the answers file stores them, so copier's re-render of this
        # version (the base of its three-way merge) prints the same dict.
        "example_action": json.loads(json.dumps(dict(example), sort_keys=True)) if example is not None else None,
        # For the typed hook examples in custom.py.
        "observation_model": observation_class(spec),
    }


TEMPLATE_SETTINGS: dict[str, Any] = {
    "_answers_file": ANSWERS_FILE,
    "_templates_suffix": ".jinja",
    "_exclude": ["copier.yml", "copier.yaml", "~*", "*.py[co]", "__pycache__", ".DS_Store"],
    "_envops": {"keep_trailing_newline": True, "trim_blocks": True, "lstrip_blocks": True},
}
"""The settings of templates/scaffold/copier.yml that rendering reads, kept here so generating
a package needs no YAML parser (the scaffold tests check they match the file)."""


def render_scaffold(
    answers: Mapping[str, Any], *, src_path: str, commit: str, template: Path | None = None
) -> dict[str, str]:
    """The scaffold's files, `{relative path: text}`, as copier's `run_copy` writes them from
    `template` (default: the bundled one) at `commit` of `src_path`."""
    import jinja2

    template = template or templates_dir() / "scaffold"
    suffix, excluded = TEMPLATE_SETTINGS["_templates_suffix"], TEMPLATE_SETTINGS["_exclude"]
    envops = TEMPLATE_SETTINGS["_envops"]
    # Not optimized: it adds to the compile and saves these renders nothing (`render._environment`).
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template), optimized=False, **envops)
    context = {
        **answers,
        "_copier_answers": {"_commit": commit, "_src_path": src_path, **answers},
        "_copier_conf": {"answers_file": TEMPLATE_SETTINGS["_answers_file"]},
    }
    files = {}
    for path in sorted(template.rglob("*")):
        rel = path.relative_to(template)
        # Copier's exclude patterns here have no "/": each matches a file or folder name.
        if not path.is_file() or any(fnmatch.fnmatchcase(part, p) for part in rel.parts for p in excluded):
            continue
        # (Compiling a template costs far more than rendering it: plain names are used as they are.)
        parts = [env.from_string(part).render(context) if "{" in part else part for part in rel.parts]
        if not all(parts):  # copier skips a path whose name renders empty
            continue
        target = "/".join(parts)
        if target.endswith(suffix):
            files[target.removesuffix(suffix)] = env.get_template(rel.as_posix()).render(context)
        else:
            files[target] = path.read_text("utf-8")
    return files


def scaffold_files(spec: EnvSpec) -> dict[str, str]:
    """The scaffold of a new package for `spec`, `{relative path: text}` (`render_scaffold`
    with this release's answers, source and tag)."""
    try:
        return render_scaffold(scaffold_answers(spec), src_path=scaffold_source(), commit=release_tag())
    except Exception as e:  # a broken bundled template: an internal failure, exit 70
        raise GenError(f"scaffolding {spec.package} failed: {type(e).__name__}: {e}") from None


def scaffold_writer(files: Mapping[str, str]) -> Callable[[Path], None]:
    """A writer hook that writes a rendered scaffold into a new package (never over an existing file)."""

    def run(destination: Path) -> None:
        for rel, text in files.items():
            target = destination / rel
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)

    return run


def scaffold_hook(spec: EnvSpec) -> Callable[[Path], None]:
    """A writer hook that renders the scaffold into a new package (never over an existing file)."""
    return scaffold_writer(scaffold_files(spec))

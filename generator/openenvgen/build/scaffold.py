"""Scaffolding: a new package's user-owned files, made once by copier from templates/scaffold.

`CHANGELOG.md`, `tests/`, `<module>/custom.py` (the user's hooks) and
`.copier-answers.yml` are written when a package is created and never again: they are not
in the lock, so every later (re)generation carries them over byte for byte. Copier is slow
to import, so it is imported only when a package is created.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from openenvgen import __version__
from openenvgen.build.render import templates_dir
from openenvgen.errors import GenError
from openenvgen.spec import EnvSpec


def scaffold_hook(spec: EnvSpec) -> Callable[[Path], None]:
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

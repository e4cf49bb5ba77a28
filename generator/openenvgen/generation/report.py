"""What `openenv-gen NAME` prints after writing a package: how to install it and run it.

The package's name comes from its lock; whether the runtime is installed, from its metadata.
"""

from __future__ import annotations

import importlib.metadata
import os
import shlex
from pathlib import Path

from openenvgen.generation.layout import RUNTIME_DISTRIBUTION, read_lock


def next_steps(target: Path) -> str:
    """The two commands that take a freshly generated package to a run: install, vf-eval.

    `openenvgen-runtime` is not on PyPI yet, so the install names it as a local directory
    when it is not installed already: this generator's own `runtime/` when it runs from a
    checkout, else a line saying where it comes from. Run from or in a checkout, it installs
    with the checkout's pins (`-c constraints.txt`), as the README does.
    """
    package = _package_name(target)
    shown = target.as_posix() if target.is_absolute() or target.as_posix().startswith(".") else f"./{target.as_posix()}"
    install = ["pip", "install"]
    note = ""
    checkout = Path(__file__).resolve().parents[3]  # generator/openenvgen/generation/report.py
    pins = _constraints(checkout)
    if pins is not None:
        install += ["-c", os.path.relpath(pins)]
    if not _installed(RUNTIME_DISTRIBUTION):
        if (checkout / "runtime" / "pyproject.toml").is_file():
            # The runtime, and the code it shares with the generator when it is there.
            for local in ("schemas", "servers", "runtime"):
                if (checkout / local / "pyproject.toml").is_file():
                    install.append(_relative(checkout / local))
        else:
            note = (
                f"\n  ({RUNTIME_DISTRIBUTION} is not on PyPI yet: install it first from an openenv-gen "
                "checkout, `pip install ./schemas ./servers ./runtime`, or from an index made with "
                "`openenv-gen publish schemas servers runtime`)"
            )
    install.append(shown)
    return (
        "next: install it, then evaluate a model on it:\n"
        f"  {shlex.join(install)}\n"
        f"  vf-eval {shlex.quote(package)} -m MODEL --no-push{note}"
    )


def _package_name(target: Path) -> str:
    """The distribution name the package's lock records (its spec's); the folder's name
    when the lock cannot say."""
    package = (read_lock(target) or {}).get("package")
    return package if isinstance(package, str) else target.name


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _relative(path: Path) -> str:
    """`path` as a command line names it from here: relative, starting `./` or `../`."""
    shown = os.path.relpath(path)
    return shown if shown.startswith(("/", ".")) else f"./{shown}"


def _constraints(checkout: Path) -> Path | None:
    """The pins of the openenv-gen checkout this runs from (an editable install) or in (the
    README's first steps): its `constraints.txt`, which the README installs with."""
    for root in (checkout, Path.cwd()):
        if (root / "constraints.txt").is_file() and (root / "runtime" / "pyproject.toml").is_file():
            return root / "constraints.txt"
    return None

"""The package a command names: a package directory, an installed package, or a catalog name
(generated into a temporary directory first). `play` and `doctor` run the runtime on it."""

from __future__ import annotations

import contextlib
import importlib.util
import tempfile
from collections.abc import Iterator
from pathlib import Path

from openenvgen.errors import UsageError


@contextlib.contextmanager
def located(package: str) -> Iterator[tuple[str, Path | None]]:
    """(package id, folder to import it from, None when installed) for PACKAGE."""
    folder = Path(package)
    if folder.is_dir():
        yield package_id(folder), folder.resolve()
        return
    module = package.replace("-", "_")
    if module.isidentifier() and importlib.util.find_spec(module) is not None:
        yield module, None
        return
    from openenvgen.catalog.reader import did_you_mean, find, not_runnable

    entry = find(package)
    if entry is None:
        raise UsageError(
            not_runnable(package)
            or f"{package}: not a package directory, an installed package or a catalog name;{did_you_mean(package)} "
            "(see `openenv-gen list`)"
        )
    from openenvgen.generation.package import generate_package

    with tempfile.TemporaryDirectory(prefix="openenv-gen-package-") as scratch:
        written = generate_package(entry.name, out=Path(scratch) / entry.name, scaffold=False)
        yield package_id(written), written


def package_id(folder: Path) -> str:
    from openenvgen.generation.layout import LOCK_FILE, read_lock

    package = (read_lock(folder) or {}).get("package")
    if not isinstance(package, str):
        raise UsageError(f"{folder}: not a package openenv-gen generated (no readable {LOCK_FILE} naming it)")
    return package.replace("-", "_")

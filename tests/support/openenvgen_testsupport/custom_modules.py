"""Packages with a `custom.py` of a test's own: generated from a live server, copied from a
template, or a bare import package for the loader's static checks."""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.scripted_model import ScriptedChatModel

_ids = itertools.count()


def copy_package(template: Path, tmp_path: Path, custom: str | None = None) -> Path:
    """A copy of the template package (for vf-eval in a subprocess), with `custom` as its custom.py."""
    pkg = tmp_path / "guess"
    shutil.copytree(template, pkg)
    if custom is not None:
        (pkg / "guess_openenv" / "custom.py").write_text(textwrap.dedent(custom))
    return pkg


def generated_package(
    server: str, root: Path, custom: str | None = None, *, without_custom: bool = False, stem: str = "custom"
) -> tuple[str, Path]:
    """A package with its own import name (for in-process runs); `custom` written (or the
    scaffolded custom.py removed, as in a package from before it existed) before any import."""
    package_id = generate_from_server(stem, server, root)
    module_dir = root / package_id.removesuffix("-openenv").replace("-", "_") / package_id.replace("-", "_")
    if without_custom:
        (module_dir / "custom.py").unlink()
    elif custom is not None:
        (module_dir / "custom.py").write_text(textwrap.dedent(custom))
    return package_id, module_dir


def hook_package(tmp_path: Path, custom: str, models: str = "") -> tuple[str, Path]:
    """A bare import package holding only `custom.py` (and `models.py`, when given), for
    the loader's static checks."""
    name = f"hooks_{next(_ids)}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    if models:
        (package / "models.py").write_text(textwrap.dedent(models))
    (package / "custom.py").write_text(textwrap.dedent(custom))
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    return f"{name}.custom", package / "custom.py"


def messages(model: ScriptedChatModel) -> list[list[tuple[str, str]]]:
    """(role, text) of every message of every request, in arrival order per conversation."""
    by_conversation = model.conversations()
    return [
        [
            (m["role"], m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]))
            for m in body["messages"]
        ]
        for key in sorted(by_conversation)
        for body in by_conversation[key]
    ]


def unseeded(reset: dict[str, Any]) -> dict[str, Any]:
    """A task's reset kwargs without the `seed` the runtime may add to make runs reproducible."""
    return {k: v for k, v in reset.items() if k != "seed"}

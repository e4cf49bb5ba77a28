"""The one formatter of generated Python modules: ruff, as `ruff check --fix` and `ruff format`.

datamodel-code-generator writes the models unformatted; openenv-gen adds what it adds (the
shared models' import and `__all__`, pydantic's public `MISSING`) to that raw text and then
formats the whole module here, once: imports merged and sorted by ruff's isort, `__all__` by
RUF022, the layout by `ruff format`. The settings are the nearest pyproject.toml ruff finds
from `settings_dir` (for a package's models, `FORMAT_SETTINGS`: ruff's defaults, stated, so no
project's settings reach them, whichever folder openenv-gen runs in).

Templates are not run through it: the scaffold is also rendered by copier (`regen --scaffold`),
which runs no formatter, so every template writes its Python as ruff formats it by itself
(the `py` filter and the scaffold's `py` macro).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from openenvgen.errors import GenError

FORMAT_SETTINGS = Path(__file__).with_name("model_format")
"""Where ruff formats a package's models: its pyproject.toml (ruff's defaults, stated, with
import sorting and `__all__` sorting on) is the nearest one ruff finds."""


def ruff_binary() -> str:
    """The ruff executable beside this interpreter (the `ruff` dependency's), else on PATH."""
    beside = Path(sys.executable).parent / ("ruff.exe" if os.name == "nt" else "ruff")
    if beside.is_file():
        return str(beside)
    found = shutil.which("ruff")
    if found is None:
        raise GenError("ruff was not found (openenv-gen formats the models it generates with it)")
    return found


def format_module(source: str, settings_dir: Path = FORMAT_SETTINGS) -> str:
    """`source` as `ruff check --fix` (safe and unsafe fixes) and then `ruff format` leave it,
    with the settings nearest `settings_dir`; both read it on stdin."""
    ruff = ruff_binary()
    fixed = _run([ruff, "check", "--fix", "--unsafe-fixes", "--exit-zero", "--quiet", "-"], source, settings_dir)
    return _run([ruff, "format", "-"], fixed, settings_dir)


def _run(command: list[str], source: str, cwd: Path) -> str:
    result = subprocess.run(command, input=source.encode("utf-8"), capture_output=True, cwd=cwd, check=False)
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip() or "no output"
        raise GenError(f"{' '.join(command[1:3])} failed on a generated module: {detail.splitlines()[0]}")
    return result.stdout.decode("utf-8")

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
    with the settings nearest `settings_dir`. One pipe, `ruff check --fix - | ruff format -`,
    so the two ruff processes start side by side rather than one after the other."""
    ruff = ruff_binary()
    check = [ruff, "check", "--fix", "--unsafe-fixes", "--exit-zero", "--quiet", "-"]
    fmt = [ruff, "format", "-"]
    pipe = subprocess.PIPE
    fixing = subprocess.Popen(check, stdin=pipe, stdout=pipe, stderr=pipe, cwd=settings_dir)
    assert fixing.stdin is not None and fixing.stdout is not None and fixing.stderr is not None
    formatting = subprocess.Popen(fmt, stdin=fixing.stdout, stdout=pipe, stderr=pipe, cwd=settings_dir)
    fixing.stdout.close()  # the formatter holds the read end now
    # ruff check reads all of it before it writes: a module larger than the pipe's buffer waits
    # here only until ruff has started, never on the formatter.
    try:
        fixing.stdin.write(source.encode("utf-8"))
        fixing.stdin.close()
    except BrokenPipeError:  # ruff check stopped early: its exit code and stderr say why
        pass
    formatted, format_errors = formatting.communicate()
    fix_errors = fixing.stderr.read()
    fixing.wait()
    for command, process, errors in ((check, fixing, fix_errors), (fmt, formatting, format_errors)):
        if process.returncode != 0:
            detail = (errors.decode("utf-8", "replace").strip() or "no output").splitlines()[0]
            raise GenError(f"ruff {command[1]} failed on a generated module: {detail}")
    return formatted.decode("utf-8")

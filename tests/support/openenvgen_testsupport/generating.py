"""Running the generator as its users do, and reading back what it wrote.

`gen` runs the installed `openenv-gen` CLI in a subprocess (its exit code, stdout and stderr
are what a user sees); `import_generated` renders a package in-process and imports its
models module; `file_tree` reads a written package byte for byte, for comparisons.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from openenvgen.generation.render import render_package
from openenvgen.spec import EnvSpec
from openenvgen_testsupport.paths import OPENENV_GEN

_module_ids = itertools.count()


def gen(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `openenv-gen ARGS` (in `cwd`, with `env` added to os.environ); its result, output as text."""
    return subprocess.run(
        [OPENENV_GEN, *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=120
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    """`result` exited `code` with a single `openenv-gen: error: ...` line on stderr containing `fragment`."""
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("openenv-gen: error: ")
    assert fragment in lines[0]


def file_tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by its relative POSIX path, as bytes (bytecode and egg-info left out)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
    }


def import_generated(spec: EnvSpec, root: Path) -> ModuleType:
    """Write the package for `spec` under `root` and import its `models` module under a unique name."""
    files = render_package(spec)
    package = root / spec.package
    for rel, text in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text, "utf-8")
    name = f"_gen{next(_module_ids)}_{spec.module}_models"
    module_spec = importlib.util.spec_from_file_location(name, package / spec.module / "models.py")
    assert module_spec and module_spec.loader
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module

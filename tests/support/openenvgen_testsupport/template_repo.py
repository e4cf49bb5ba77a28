"""A local git repository standing in for openenv-gen's own as the scaffold's copier template.

It holds what copier reads of the real one (the root copier.yml and templates/scaffold/),
tagged like a release, so `copier copy`/`copier update` run offline against it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from openenvgen import __version__
from openenvgen_testsupport.paths import ROOT

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}
FIRST_TAG = f"v{__version__}"
"""The tag this openenv-gen records for a package it scaffolds (its release's)."""


def git(*args: str, cwd: Path) -> str:
    """Run git in `cwd` with a fixed identity (no global config needed); its stdout."""
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1"}
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def commit_all(repo: Path, message: str, tag: str | None = None) -> None:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    if tag:
        git("tag", tag, cwd=repo)


def template_repo(path: Path) -> Path:
    """A git repository at `path` with this checkout's scaffold template, tagged FIRST_TAG."""
    (path / "templates").mkdir(parents=True)
    shutil.copy2(ROOT / "copier.yml", path / "copier.yml")
    shutil.copytree(ROOT / "templates" / "scaffold", path / "templates" / "scaffold")
    git("init", "-q", cwd=path)
    commit_all(path, "template version 1", FIRST_TAG)
    return path


def scaffold_file(repo: Path, name: str) -> Path:
    """A file of the template in `repo` by its name in templates/scaffold (e.g. `CHANGELOG.md.jinja`)."""
    return repo / "templates" / "scaffold" / name

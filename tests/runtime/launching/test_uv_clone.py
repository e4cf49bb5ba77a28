"""A UV server's command and its `git+URL` project, made by the runtime (OpenEnv keeps its own
builders private): the command `UVProvider` runs, and a shallow clone, or one line saying why not."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.uv_provider import GIT_URL_PREFIX, clone_git_project


def test_a_git_project_is_cloned_to_a_new_folder(tmp_path: Path) -> None:
    repo = tmp_path / "env"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'env'\n")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "env"], check=True)
    folder = Path(clone_git_project(f"{GIT_URL_PREFIX}{repo.as_uri()}", 60))
    try:
        assert folder != repo and (folder / "pyproject.toml").read_text() == "[project]\nname = 'env'\n"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_project_that_cannot_be_cloned_is_one_line_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    missing = tmp_path / "nowhere"
    with pytest.raises(LaunchError, match=f"could not clone {missing.as_uri()}: ") as failed:
        clone_git_project(f"{GIT_URL_PREFIX}{missing.as_uri()}", 60)
    assert "\n" not in str(failed.value)
    assert not list(temp.iterdir())

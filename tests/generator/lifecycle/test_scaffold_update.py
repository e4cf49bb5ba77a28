"""`openenv-gen regen --scaffold`: a package scaffolded by one release takes the next release's
scaffold changes with the user's edits kept (copier's three-way update), offline, from a local
git repository standing in for openenv-gen's; conflicts and an unreachable template are
reported in one line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from openenvgen.generation.scaffold import SOURCE_VARIABLE
from openenvgen_testsupport.generating import assert_one_line_error, file_tree, gen
from openenvgen_testsupport.template_repo import FIRST_TAG, commit_all, git, scaffold_file, template_repo

NEXT_TAG = "v0.2.0"
CUSTOM = "wordle_openenv/custom.py"
NEW_HOOK_EXAMPLE = "# @vf.metric\n# async def reply_length(trace) -> float:\n"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A template repository at release 1, a workspace (git) with a package scaffolded from it,
    then release 2 of the template: a changed hook example and a new CHANGELOG layout."""
    root = tmp_path_factory.mktemp("scaffold-update")
    repo = template_repo(root / "openenv-gen")
    workspace = root / "workspace"
    workspace.mkdir()
    git("init", "-q", cwd=workspace)
    result = gen("wordle", "--out", str(workspace / "pkg"), env={SOURCE_VARIABLE: str(repo)})
    assert result.returncode == 0, result.stderr
    commit_all(workspace, "generated")

    custom = scaffold_file(repo, "{{ module }}/custom.py.jinja")
    text = custom.read_text()
    assert "# @vf.reward(weight=0.1)\n" in text
    text = text.replace("# @vf.reward(weight=0.1)\n", "# @vf.reward(weight=0.25)\n")
    custom.write_text(text.replace("\n# --- Prompts", "#\n" + NEW_HOOK_EXAMPLE + "\n# --- Prompts", 1))
    changelog = scaffold_file(repo, "CHANGELOG.md.jinja")
    text = changelog.read_text()
    assert text.startswith("# Changelog\n")
    changelog.write_text(text.replace("# Changelog\n", "# {{ package }}: changes\n", 1))
    commit_all(repo, "template version 2", NEXT_TAG)
    return workspace


@pytest.fixture
def pkg(base: Path, tmp_path: Path) -> Path:
    """A copy of the workspace (its git history included); the package in it."""
    workspace = tmp_path / "workspace"
    shutil.copytree(base, workspace)
    return workspace / "pkg"


def _update(pkg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return gen("regen", "--scaffold", "--scaffold-ref", NEXT_TAG, *args, str(pkg))


def test_the_next_scaffold_arrives_and_the_users_edits_survive(pkg: Path) -> None:
    custom = pkg / CUSTOM
    user_prompt = 'SYSTEM_PROMPT = "You are a careful Wordle player."\n'
    text = custom.read_text().replace('# SYSTEM_PROMPT = "You are playing openenv/wordle.', "# was: ")
    custom.write_text(text + "\n" + user_prompt)
    changelog = pkg / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\nNote of mine about 0.1.0.\n")
    tests_before = (pkg / "tests" / "test_wordle_openenv.py").read_bytes()
    commit_all(pkg.parent, "my hooks")

    result = _update(pkg)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{pkg}: scaffold {FIRST_TAG} → {NEXT_TAG}, your edits kept (review with git diff)",
        f"{pkg}: up to date (0.1.0)",
    ]
    after = custom.read_text()
    # The scaffold's changes ...
    assert "# @vf.reward(weight=0.25)\n" in after and "weight=0.1)" not in after
    assert NEW_HOOK_EXAMPLE in after
    assert changelog.read_text().startswith("# wordle-openenv: changes\n")
    # ... and the user's, together.
    assert after.endswith(user_prompt) and "# was: " in after
    assert changelog.read_text().endswith("\nNote of mine about 0.1.0.\n")
    assert (pkg / "tests" / "test_wordle_openenv.py").read_bytes() == tests_before
    assert yaml.safe_load((pkg / ".copier-answers.yml").read_text())["_commit"] == NEXT_TAG
    assert gen("check", str(pkg)).returncode == 0

    # Once committed, the package is up to date with that release.
    commit_all(pkg.parent, "scaffold update")
    again = _update(pkg)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"{pkg}: scaffold up to date ({NEXT_TAG})"


def test_a_conflict_is_left_inline_and_reported_in_one_line(pkg: Path) -> None:
    custom = pkg / CUSTOM
    custom.write_text(custom.read_text().replace("# @vf.reward(weight=0.1)\n", "# @vf.reward(weight=0.5)\n"))
    commit_all(pkg.parent, "my weight")

    result = _update(pkg)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"{pkg}: scaffold {FIRST_TAG} → {NEXT_TAG} with conflicts in {CUSTOM}: resolve the <<<<<<< markers "
        "(git diff shows them), then run regen again"
    ]
    text = custom.read_text()
    assert "<<<<<<< before updating" in text and "# @vf.reward(weight=0.5)" in text and "weight=0.25" in text
    assert NEW_HOOK_EXAMPLE in text  # the rest of the update applied
    assert (pkg / "CHANGELOG.md").read_text().startswith("# wordle-openenv: changes\n")
    assert git("ls-files", "--unmerged", cwd=pkg).strip()  # git knows it is unresolved


def test_an_unreachable_template_is_one_line_and_writes_nothing(pkg: Path, tmp_path: Path) -> None:
    answers = pkg / ".copier-answers.yml"
    gone = tmp_path / "no-such-repository"
    answers.write_text(answers.read_text().replace(f'_src_path: "{_src_path(pkg)}"', f'_src_path: "{gone}"'))
    assert str(gone) in answers.read_text()
    commit_all(pkg.parent, "moved template")
    before = file_tree(pkg.parent)

    result = _update(pkg)
    assert_one_line_error(result, 69, f"cannot reach the scaffold template {gone}")
    assert "nothing was written" in result.stderr
    assert file_tree(pkg.parent) == before
    assert result.stdout == ""


def test_a_missing_tag_a_dirty_package_and_no_git_are_one_line_each(pkg: Path, tmp_path: Path) -> None:
    result = gen("regen", "--scaffold", "--scaffold-ref", "v9.9.9", str(pkg))
    assert_one_line_error(result, 69, "has no tag v9.9.9; nothing was written")

    (pkg / CUSTOM).write_text("uncommitted\n")
    assert_one_line_error(_update(pkg), 73, "has uncommitted changes")
    assert (pkg / CUSTOM).read_text() == "uncommitted\n"

    outside = tmp_path / "outside-git"
    shutil.copytree(pkg, outside)
    assert_one_line_error(_update(outside), 73, "is not in a git repository")

    assert_one_line_error(gen("regen", "--scaffold-ref", NEXT_TAG, str(pkg)), 64, "--scaffold-ref needs --scaffold")


def _src_path(pkg: Path) -> str:
    return str(yaml.safe_load((pkg / ".copier-answers.yml").read_text())["_src_path"])

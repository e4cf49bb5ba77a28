"""`regen --scaffold`: bring a newer release's scaffold into a package with `copier update`.

A package's `.copier-answers.yml` records the template repository (`_src_path`) and the
release tag it was scaffolded from (`_commit`). Copier re-renders that old version, takes
the difference to the package as the user's edits, renders the new version and applies
the edits on top (a three-way merge); where both changed the same lines it leaves git-style
conflict markers. Copier insists on a package committed in git, so nothing the user wrote
can be lost: `git diff` shows the update and `git checkout` undoes it. Everything that can
fail before copier writes (the answers, git, the template's reachability and tags) is
checked first for every package, so such a failure writes nothing.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from openenvgen.errors import GenError, OutputError, SourceError, UsageError
from openenvgen.generation.scaffold import ANSWERS_FILE

GIT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ScaffoldPlan:
    """A package whose scaffold can be updated: its template source and the two tags."""

    root: Path
    src_path: str
    old: str
    new: str


@dataclass(frozen=True)
class ScaffoldUpdate:
    """What `copier update` did to one package."""

    plan: ScaffoldPlan
    conflicts: tuple[str, ...]

    def summary(self) -> str:
        """The one line `regen --scaffold` prints for the package."""
        root, old, new = self.plan.root, self.plan.old, self.plan.new
        if old == new:
            return f"{root}: scaffold up to date ({new})"
        if self.conflicts:
            return (
                f"{root}: scaffold {old} → {new} with conflicts in {', '.join(self.conflicts)}: "
                "resolve the <<<<<<< markers (git diff shows them), then run regen again"
            )
        return f"{root}: scaffold {old} → {new}, your edits kept (review with git diff)"


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # fail, never prompt, for a private URL
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, env=env, check=False
        )
    except FileNotFoundError:
        raise UsageError("git is not installed; copier needs it to update a scaffold") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {args[0]} took over {GIT_TIMEOUT_S:.0f} s in {cwd}") from None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _answers(root: Path) -> dict[str, object]:
    import yaml

    path = root / ANSWERS_FILE
    try:
        answers = yaml.safe_load(path.read_text("utf-8"))
    except (yaml.YAMLError, OSError) as e:
        raise OutputError(f"{path}: unreadable ({type(e).__name__}); restore it from git") from None
    if not isinstance(answers, dict) or not answers.get("_src_path") or not answers.get("_commit"):
        raise UsageError(
            f"{path} records no template source and release (_src_path, _commit): it was scaffolded by an "
            "earlier openenv-gen, whose scaffold copier cannot update"
        )
    return answers


def plan_scaffold_update(root: Path, ref: str) -> ScaffoldPlan | None:
    """Check, without writing, that copier can update `root`'s scaffold to tag `ref`; None for a
    package without one (generated with --no-scaffold)."""
    if not (root / ANSWERS_FILE).is_file():
        return None
    answers = _answers(root)
    plan = ScaffoldPlan(root, str(answers["_src_path"]), str(answers["_commit"]), ref)
    if plan.old == plan.new:
        return plan  # up to date: copier will not run
    if _git("rev-parse", "--show-toplevel", cwd=root).returncode != 0:
        raise OutputError(f"{root} is not in a git repository: copier updates only a committed package")
    status = _git("status", "--porcelain", "--", ".", cwd=root)
    if status.stdout.strip():
        raise OutputError(f"{root} has uncommitted changes: commit or stash them first (copier's update needs that)")
    tags = [f"refs/tags/{tag}" for tag in dict.fromkeys((plan.old, plan.new))]
    listed = _git("ls-remote", "--tags", plan.src_path, *tags, cwd=root)
    if listed.returncode != 0:
        raise SourceError(
            f"{root}: cannot reach the scaffold template {plan.src_path} (git: {_last_line(listed.stderr)}); "
            "nothing was written"
        )
    found = {line.split("\t")[-1] for line in listed.stdout.splitlines()}
    missing = [tag.removeprefix("refs/tags/") for tag in tags if tag not in found]
    if missing:
        raise SourceError(
            f"{root}: the scaffold template {plan.src_path} has no tag {', '.join(missing)}; nothing was written"
        )
    return plan


def update_scaffold(plan: ScaffoldPlan) -> ScaffoldUpdate:
    """Run `copier update` on a planned package; conflicts are left inline, as git marks them."""
    if plan.old == plan.new:
        return ScaffoldUpdate(plan, ())
    import copier  # slow to import: only here

    try:
        copier.run_update(
            plan.root,
            vcs_ref=plan.new,
            defaults=True,
            overwrite=True,
            skip_answered=True,
            quiet=True,
            conflict="inline",
            settings=copier.Settings(),  # ignore the user's copier settings: same answers, same files
        )
    except Exception as e:
        raise GenError(
            f"{plan.root}: copier update failed: {type(e).__name__}: {_last_line(str(e))} "
            "(`git diff` shows what it changed, `git checkout -- .` in the package undoes it)"
        ) from None
    unmerged = _git("ls-files", "--unmerged", "--full-name", "--", ".", cwd=plan.root).stdout
    top = Path(_git("rev-parse", "--show-toplevel", cwd=plan.root).stdout.strip())
    conflicts = sorted(
        {(top / line.split("\t", 1)[1]).relative_to(plan.root.resolve()).as_posix() for line in unmerged.splitlines()}
    )
    return ScaffoldUpdate(plan, tuple(conflicts))

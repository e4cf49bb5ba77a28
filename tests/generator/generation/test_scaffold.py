"""The scaffold of a new package: rendered without copier, byte for byte as copier renders it,
with the template's source and release recorded for `copier update`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from openenvgen.generation.package import resolve_spec
from openenvgen.generation.scaffold import (
    SCAFFOLD_REPOSITORY,
    SOURCE_VARIABLE,
    TEMPLATE_SETTINGS,
    release_tag,
    render_scaffold,
    scaffold_answers,
)
from openenvgen_testsupport.generating import file_tree, gen
from openenvgen_testsupport.paths import ROOT
from openenvgen_testsupport.template_repo import FIRST_TAG, template_repo

SCAFFOLDED = (".copier-answers.yml", "CHANGELOG.md", "tests/test_{module}.py", "{module}/custom.py")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return template_repo(tmp_path_factory.mktemp("template") / "openenv-gen")


def test_the_renderer_reads_the_templates_own_settings() -> None:
    config = yaml.safe_load((ROOT / "templates" / "scaffold" / "copier.yml").read_text())
    settings = {key: value for key, value in config.items() if key.startswith("_") and key != "_min_copier_version"}
    assert settings == TEMPLATE_SETTINGS
    assert not any("/" in pattern for pattern in settings["_exclude"])
    # The repository's root copier.yml makes the repository itself the template, for copier update.
    root_config = (ROOT / "copier.yml").read_text()
    assert "\n_subdirectory: templates/scaffold\n" in root_config
    assert root_config.endswith("\n---\n!include templates/scaffold/copier.yml\n")


# wordle: a typed action; echo: MCP tools; chess and coding: other example actions.
@pytest.mark.parametrize("env", ["wordle", "echo", "chess", "coding"])
def test_the_scaffold_is_what_copier_renders_byte_for_byte(repo: Path, env: str, tmp_path: Path) -> None:
    import copier

    answers = scaffold_answers(resolve_spec(env))
    copier.run_copy(
        str(repo), tmp_path, data=answers, defaults=True, vcs_ref=FIRST_TAG, quiet=True, settings=copier.Settings()
    )
    by_copier = file_tree(tmp_path)
    mine = render_scaffold(answers, src_path=str(repo), commit=FIRST_TAG)
    assert {rel: text.encode() for rel, text in mine.items()} == by_copier
    assert set(by_copier) == {rel.format(module=answers["module"]) for rel in SCAFFOLDED}


def test_a_new_package_records_where_its_scaffold_comes_from(tmp_path: Path) -> None:
    assert release_tag() == FIRST_TAG
    pkg = tmp_path / "wordle-openenv"
    assert gen("wordle", "--out", str(pkg), env={SOURCE_VARIABLE: ""}).returncode == 0
    answers = yaml.safe_load((pkg / ".copier-answers.yml").read_text())
    assert answers == {
        "_commit": FIRST_TAG,
        "_src_path": SCAFFOLD_REPOSITORY,
        "env_id": "openenv/wordle",
        "example_action": {"message": "[crane]"},
        "module": "wordle_openenv",
        "observation_model": "TextArenaObservation",
        "package": "wordle-openenv",
        "package_version": "0.1.0",
        "stem": "Wordle",
    }
    expected = render_scaffold(scaffold_answers(resolve_spec("wordle")), src_path=SCAFFOLD_REPOSITORY, commit=FIRST_TAG)
    tree = file_tree(pkg)
    assert {rel: tree[rel] for rel in expected} == {rel: text.encode() for rel, text in expected.items()}
    # A relative local source is recorded absolute: the package may be updated from anywhere.
    local = tmp_path / "clone"
    local.mkdir()
    other = tmp_path / "other"
    assert gen("wordle", "--out", str(other), cwd=tmp_path, env={SOURCE_VARIABLE: "clone"}).returncode == 0
    assert yaml.safe_load((other / ".copier-answers.yml").read_text())["_src_path"] == str(local.resolve())


def test_generating_a_new_package_does_not_import_copier(tmp_path: Path) -> None:
    probe = f"""
import sys
from pathlib import Path
from openenvgen.generation.package import generate_package
target = generate_package("wordle", out=Path({str(tmp_path / "pkg")!r}))
print((target / "wordle_openenv" / "custom.py").is_file(), "copier" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "False"]

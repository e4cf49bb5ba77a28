"""`openenv-gen NAME`'s fast path: its arguments read as typer reads them, and the generation
memo, which answers a repeated generation without pydantic, Jinja or typer, writes exactly
what a full run writes, and notices any change to the package, the record or the generator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from openenvgen.cli import SUBCOMMANDS, app, fast_generate_args
from openenvgen.generation import layout, memo
from openenvgen_testsupport.generating import file_tree
from openenvgen_testsupport.paths import ROOT

# `openenv-gen ARGS` in a fresh interpreter that says on stderr, last, which of the heavy
# packages the run imported.
_PROBE = """
import atexit, sys
heavy = ("pydantic", "jinja2", "typer", "datamodel_code_generator")
atexit.register(lambda: sys.stderr.write("\\nimported: " + ",".join(m for m in heavy if m in sys.modules) + "\\n"))
from openenvgen.cli import main
sys.argv = ["openenv-gen", *sys.argv[1:]]
main()
"""


@pytest.fixture(scope="module")
def models_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding Wordle's models module and nothing else: a test's copy of it starts with
    full runs that do not run the model generator."""
    cache = tmp_path_factory.mktemp("models") / "cache"
    run("wordle", "--no-scaffold", "--out", str(cache.parent / "pkg"), cache=cache)
    shutil.rmtree(cache / "generations")
    return cache


def fresh_cache(models_cache: Path, tmp_path: Path) -> Path:
    shutil.copytree(models_cache, tmp_path / "cache")
    return tmp_path / "cache"


def run(*args: str, cache: Path | str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`openenv-gen ARGS` with the cache folder `cache`; its result, and the heavy packages it imported."""
    env = {**os.environ, "OPENENV_GEN_CACHE": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    assert result.returncode == 0, result.stderr
    label, _, imported = result.stderr.strip().splitlines()[-1].partition(":")
    assert label == "imported", result.stderr
    return result, [m for m in imported.strip().split(",") if m]


# --- the arguments ---------------------------------------------------------------------------

ACCEPTED = [
    ["wordle"],
    ["wordle", "--out", "pkg"],
    ["wordle", "-o", "a/b/"],
    ["wordle", "--out=x", "--out", "y"],
    ["echo", "--no-scaffold", "--package", "my-echo", "--env-id", "me/echo", "--app", "m.server:app"],
    ["reasoning_gym", "--env-id=o/r", "--no-scaffold", "--no-scaffold", "--app=a:b"],
]
LEFT_TO_TYPER = [
    [],
    ["--help"],
    ["wordle", "--help"],
    ["wordle", "-h"],
    ["--out", "x", "wordle"],
    ["generate", "wordle"],
    ["check"],
    ["wordle", "--base-url", "http://127.0.0.1:1"],
    ["wordle", "--schema-file", "s.json"],
    ["wordle", "--timeout", "3"],
    ["wordle", "--project", "p"],
    ["wordle", "--out"],
    ["wordle", "--out", "-x"],
    ["wordle", "--out="],
    ["wordle", "-ox"],
    ["wordle", "-o=x"],
    ["wordle", "extra"],
    ["wordle", "--", "x"],
    ["Wordle"],
    ["wordle", "--version"],
    ["wordle", "--no-scaffold=1"],
]


def test_the_fast_path_knows_every_subcommand() -> None:
    assert set(typer.main.get_command(app).commands) == SUBCOMMANDS  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_fast_arguments_are_what_typer_makes_of_them(args: list[str]) -> None:
    group = typer.main.get_command(app)
    assert args[0] not in group.commands  # type: ignore[attr-defined]  # typer runs `generate` with them
    params = group.commands["generate"].make_context("generate", list(args)).params  # type: ignore[attr-defined]
    fast = fast_generate_args(args)
    assert fast is not None
    assert {
        "name": params["name"],
        "out": params["out"],
        "env_id": params["env_id"],
        "package": params["package"],
        "app": params["app_path"],
        "no_scaffold": params["no_scaffold"],
        "others": [params[k] for k in ("base_url", "schema_file", "project")],
    } == {
        **fast,
        "out": Path(str(fast["out"])) if fast.get("out") else None,
        "env_id": fast.get("env_id"),
        "package": fast.get("package"),
        "app": fast.get("app"),
        "others": [None, None, None],
    }


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=lambda a: " ".join(a) or "nothing")
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert fast_generate_args(args) is None


# --- the memo --------------------------------------------------------------------------------


def test_a_repeated_generation_is_replayed_byte_for_byte(models_cache: Path, tmp_path: Path) -> None:
    """The second generation of a catalog env, into a new folder, imports none of the heavy
    packages and writes what a full run writes (scaffold included) and prints the same; a
    damaged record is never replayed."""
    cache = fresh_cache(models_cache, tmp_path)
    first, imported = run("wordle", "--out", str(tmp_path / "a"), cache=cache)
    assert "pydantic" in imported and "jinja2" in imported and "typer" not in imported
    assert "datamodel_code_generator" not in imported  # (the models came from the copied cache)
    again, imported = run("wordle", "--out", str(tmp_path / "b"), cache=cache)
    assert imported == []
    assert again.stdout == first.stdout.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert file_tree(tmp_path / "a") == file_tree(tmp_path / "b")
    assert (tmp_path / "b" / "wordle_openenv" / "custom.py").is_file()
    # The default --out, the package's name, comes from the record too.
    _, imported = run("wordle", cache=cache, cwd=tmp_path)
    assert imported == [] and file_tree(tmp_path / "wordle-openenv") == file_tree(tmp_path / "a")
    # A record whose file no longer has its lock's sha256 is not written: a full run is.
    (path,) = (cache / "generations").glob("*.json")
    record = json.loads(path.read_text())
    (variant,) = record["new"].values()
    variant["files"]["wordle_openenv/taskset.py"] += "# damaged\n"
    path.write_text(json.dumps(record))
    _, imported = run("wordle", "--out", str(tmp_path / "d"), cache=cache)
    assert "jinja2" in imported and file_tree(tmp_path / "d") == file_tree(tmp_path / "a")
    # Without a scaffold is another record.
    _, imported = run("wordle", "--no-scaffold", "--out", str(tmp_path / "e"), cache=cache)
    assert "jinja2" in imported and not (tmp_path / "e" / "CHANGELOG.md").exists()


def test_regenerating_an_unchanged_package_in_place_writes_nothing(models_cache: Path, tmp_path: Path) -> None:
    """In place, a package holding exactly its lock's files is left as it is (not even swapped);
    any change to a generated file, or text of the user's in the README, is a full run."""
    cache, pkg = fresh_cache(models_cache, tmp_path), tmp_path / "pkg"
    run("wordle", "--out", str(pkg), cache=cache)
    (pkg / "NOTES.md").write_text("mine")
    before, inode = file_tree(pkg), pkg.stat().st_ino
    result, imported = run("wordle", "--out", str(pkg), cache=cache)
    assert imported == [] and pkg.stat().st_ino == inode and file_tree(pkg) == before
    assert result.stdout.startswith(f"wrote {pkg}\n")
    taskset = pkg / "wordle_openenv" / "taskset.py"
    taskset.write_text(taskset.read_text() + "# edited\n")
    _, imported = run("wordle", "--out", str(pkg), cache=cache)
    assert "jinja2" in imported and file_tree(pkg) == before  # regenerated
    readme = pkg / "README.md"
    readme.write_text(readme.read_text() + "\nMy notes.\n")
    _, imported = run("wordle", "--out", str(pkg), cache=cache)
    assert "jinja2" in imported and readme.read_text().endswith("\nMy notes.\n")
    # Without the user's text, the package is as its lock says again: a no-op.
    readme.write_text(before["README.md"].decode())
    _, imported = run("wordle", "--out", str(pkg), cache=cache)
    assert imported == [] and file_tree(pkg) == before


@pytest.fixture
def generator_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the generator's package and templates that `fingerprint` hashes instead."""
    copy = tmp_path / "copy"
    shutil.copytree(layout.package_dir(), copy / "openenvgen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", copy / "templates")
    monkeypatch.setattr(memo, "package_dir", lambda: copy / "openenvgen")
    monkeypatch.setattr(memo, "templates_dir", lambda: copy / "templates")
    return copy


def test_the_fingerprint_sees_every_change_to_the_generator(generator_copy: Path, tmp_path: Path) -> None:
    """By content: a touched file is the same generator; a changed one is not, even with its
    size and modification time put back (its ctime moves), and whether or not the hash was
    kept under the files' `stat`."""
    kept = tmp_path / "fingerprints"
    template = generator_copy / "templates" / "package" / "taskset.py.j2"
    old = os.stat(template)
    base = memo.fingerprint()
    assert memo.fingerprint(kept) == base and not kept.exists()  # (too fresh to be kept: computed again)
    text = template.read_text()
    template.write_text(text.replace("\n", "\r", 1))  # the same size
    os.utime(template, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert memo.fingerprint() != base and memo.fingerprint(kept) != base
    template.write_text(text)
    os.utime(template, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert memo.fingerprint() == base
    (generator_copy / "openenvgen" / "catalog" / "data" / "snapshots" / "wordle.json").write_text("{}")
    assert memo.fingerprint() != base


def test_the_kept_fingerprint_is_read_back_while_the_files_are_unchanged(
    generator_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "fingerprints"
    monkeypatch.setattr(memo, "_SETTLED_NS", -(10**18))  # every file counts as settled
    base = memo.fingerprint(kept)
    (entry,) = kept.iterdir()
    entry.write_text("0" * 64)  # what a later run reads, proving it was read
    assert memo.fingerprint(kept) == "0" * 64
    # Any change to a file's stat (here a write of the same bytes) and the hash is taken again.
    cli = generator_copy / "openenvgen" / "cli.py"
    cli.write_bytes(cli.read_bytes())
    assert memo.fingerprint(kept) == base

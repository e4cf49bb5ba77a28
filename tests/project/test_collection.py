"""Every test module on disk is collected: pytest skips folders whose names match its
`norecursedirs` (by default `build`, `dist`, `venv`, dot-folders) without a word, so a test
folder so named would never run. This asks a pytest of its own for the suite's node ids, as
`make test` and CI collect them, and compares their modules with the files under tests/."""

from __future__ import annotations

import subprocess
import sys

from openenvgen_testsupport.paths import ROOT, TESTS

# Data, not tests: captured servers' answers and the toy projects tests start.
NOT_TESTS = ("fixtures",)


def modules_on_disk() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in TESTS.rglob("test_*.py")
        if not set(path.relative_to(TESTS).parts) & {*NOT_TESTS, "__pycache__"}
    }


def collected_modules() -> set[str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0, f"collection failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return {line.split("::", 1)[0] for line in run.stdout.splitlines() if "::" in line}


def test_every_test_module_on_disk_is_collected() -> None:
    on_disk = modules_on_disk()
    assert len(on_disk) > 50, on_disk  # the walk found the suite, not an empty folder
    missing = on_disk - collected_modules()
    assert not missing, f"test modules on disk that pytest never collects: {sorted(missing)}"


def test_no_test_folder_bears_a_name_pytest_skips() -> None:
    """The folder names pytest's default `norecursedirs` hides, refused at the source."""
    hidden = {"build", "dist", "venv", "node_modules", "CVS", "_darcs", "{arch}"}
    folders = {
        path.relative_to(ROOT).as_posix()
        for path in TESTS.rglob("*")
        if path.is_dir() and path.name in hidden and not set(path.relative_to(TESTS).parts) & set(NOT_TESTS)
    }
    assert not folders, f"pytest never walks into these test folders: {sorted(folders)}"

"""Skips are loud, and CI cannot pass by skipping: tests/conftest.py's hooks, run on a tiny
test file in a pytest of its own whose DOCKER_HOST points at a socket nobody serves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from openenvgen_testsupport.paths import ROOT, TESTS
from openenvgen_testsupport.skips import REQUIRE_DOCKER

TINY = """
import pytest

SUMMARY = ("module note: what this module cannot test here",)


@pytest.mark.docker
def test_needs_docker():
    pass


@pytest.mark.swarm
def test_needs_swarm():
    pass


def test_plain():
    pass
"""
DEAD_SOCKET_LINE = "SKIPPED docker and swarm tests: they need a Docker daemon: no Docker daemon answers `docker info`"


def run_tiny(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")  # its hooks, as the suite runs them
    (tmp_path / "test_tiny.py").write_text(TINY)
    environ = {k: v for k, v in os.environ.items() if k != REQUIRE_DOCKER}
    environ |= {"DOCKER_HOST": f"unix://{tmp_path}/nobody.sock", **env}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore::pytest.PytestUnknownMarkWarning",
            *options,
            "test_tiny.py",
        ],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def summary_section(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "not tested on this machine" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("=="))
    return [line for line in lines[start + 1 : end] if line.strip()]


def test_without_a_daemon_docker_tests_skip_with_one_summary_line(tmp_path: Path) -> None:
    proc = run_tiny(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("=") and "1 passed, 2 skipped" in proc.stdout.splitlines()[-1]
    section = summary_section(proc.stdout)
    assert section[0] == "module note: what this module cannot test here"
    # Two tests skipped for one reason: one line.
    assert len(section) == 2 and section[1].startswith(DEAD_SOCKET_LINE), section
    assert "nobody.sock" in section[1]


def test_on_xdist_workers_the_summary_lines_are_printed_once(tmp_path: Path) -> None:
    """As `make test` runs: notes made on the workers reach the controller's summary."""
    proc = run_tiny(tmp_path, "-n", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 2 skipped" in proc.stdout.splitlines()[-1], proc.stdout
    section = summary_section(proc.stdout)
    assert section[0] == "module note: what this module cannot test here"
    assert len(section) == 2 and section[1].startswith(DEAD_SOCKET_LINE), section


def test_with_the_ci_variable_a_missing_daemon_fails_the_run(tmp_path: Path) -> None:
    proc = run_tiny(tmp_path, **{REQUIRE_DOCKER: "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed, 2 errors" in proc.stdout.splitlines()[-1], proc.stdout
    assert "skipped" not in proc.stdout.splitlines()[-1]
    failures = [line for line in proc.stdout.splitlines() if line.startswith("docker and swarm tests cannot run here")]
    assert len(failures) == 2 and all(f"({REQUIRE_DOCKER}=1 requires them)" in line for line in failures), proc.stdout


def test_ci_sets_the_variable_for_its_test_run() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    exported = lines.index(f"export {REQUIRE_DOCKER}=1")
    assert exported < lines.index("make test")

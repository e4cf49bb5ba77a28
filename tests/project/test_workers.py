"""`make test` runs on pytest-xdist workers with `--dist loadgroup` and the groups
tests/conftest.py gives: whole modules per worker, the Docker-driving tests as one group.
Shown on a small tree laid out like the suite, run by a pytest of its own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from openenvgen_testsupport.paths import TESTS

MODULE = """
import time

import pytest
{mark}

@pytest.mark.parametrize("n", range(5))
def test_one(n):
    time.sleep(0.2)  # long enough for xdist's own load scheduling to spread a module's tests
"""


def run_tree(root: Path, modules: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """pytest with the suite's conftest on `modules` (path -> its pytestmark line) under `root`."""
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")  # makes `root` pytest's rootdir
    for path, mark in modules.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(MODULE.format(mark=mark))
    shutil.copy(TESTS / "conftest.py", root / "tests" / "conftest.py")
    environ = {**os.environ, "DOCKER_HOST": f"unix://{root}/nobody.sock"}
    environ.pop("OPENENVGEN_REQUIRE_DOCKER", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", *options]
    command += ["-W", "ignore::pytest.PytestUnknownMarkWarning"]
    return subprocess.run(command, cwd=root, env=environ, capture_output=True, text=True, timeout=300)


def test_docker_modules_share_one_worker_and_each_module_stays_on_one(tmp_path: Path) -> None:
    docker = "pytestmark = pytest.mark.docker"
    modules = {
        "tests/e2e/test_docker.py": docker,
        "tests/e2e/test_swarm.py": "pytestmark = pytest.mark.swarm",
        "tests/e2e/test_multinode.py": "pytestmark = pytest.mark.multinode",
        **{f"tests/unit/test_m{i}.py": "" for i in range(6)},
    }
    proc = run_tree(tmp_path, modules, "-n", "2", "--dist", "loadgroup")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module in re.findall(r"^\[(gw\d)\] .*? (tests/\S+?\.py)::", proc.stdout, re.MULTILINE):
        workers[module].add(worker)
    assert set(workers) == set(modules), proc.stdout
    assert all(len(on) == 1 for on in workers.values()), dict(workers)
    docker_workers = {w for m in modules if m.startswith("tests/e2e/") for w in workers[m]}
    assert len(docker_workers) == 1, dict(workers)
    assert {w for on in workers.values() for w in on} == {"gw0", "gw1"}, "both workers took work"

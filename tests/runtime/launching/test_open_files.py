"""The open-file limit: raised to the hard limit once where a run starts, and a run that even
the hard limit cannot hold fails before any episode, in one line.

Each case runs `vf-eval` (or a fresh interpreter) with its limits set in the child only
(`preexec_fn`), so this process's are never changed.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from openenvgen_runtime.launching import open_files
from openenvgen_testsupport.adapters import marked_processes, uv_taskset
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT
from openenvgen_testsupport.rollout import VF_EVAL, write_eval_config
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

HARD = 4096


def _limited(soft: int, hard: int) -> Callable[[], None]:
    def set_limits() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return set_limits


@pytest.fixture(autouse=True)
def hard_limit_room() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < HARD:
        pytest.skip(f"this process's hard open-file limit is {hard}; these cases lower it to {HARD} in a child")


def test_the_soft_limit_is_raised_to_the_hard_one_once() -> None:
    code = (
        "import resource\n"
        "from openenvgen_runtime.launching import open_files\n"
        "first = open_files.raise_soft_limit()\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "again = open_files.raise_soft_limit()\n"
        "print(first.soft, first.hard, again == first, resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, preexec_fn=_limited(256, HARD)
    ).stdout.split()
    assert out == [str(HARD), str(HARD), "True", "300"]  # raised once; a second call changes nothing


def test_the_estimate_and_its_one_line_error() -> None:
    assert open_files.planned_open_files(1024, 4) == open_files.BASE + 1024 * open_files.PER_EPISODE + 32
    out_of_files = OSError(errno.EMFILE, "Too many open files")
    try:
        raise RuntimeError("tuple index out of range") from out_of_files
    except RuntimeError as e:
        named = open_files.too_many_open_files(e)
    assert named is not None and str(named).startswith("out of open files (Too many open files; soft limit ")
    assert open_files.too_many_open_files(RuntimeError("other")) is None


def _vf_eval(guess_pkg: str, tmp_path: Path, model_url: str, taskset: dict, limits: tuple[int, int]):
    path = write_eval_config(guess_pkg, model_url=model_url, out_dir=tmp_path, taskset=taskset)
    env = {**os.environ, "SCRIPTED_API_KEY": "scripted", "NO_COLOR": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [VF_EVAL, "@", str(path), "--no-rich"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
        preexec_fn=_limited(*limits),
    )


def test_a_run_the_hard_limit_cannot_hold_fails_before_any_episode_in_one_line(guess_pkg: str, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with serve_app(model) as model_url:
        run = _vf_eval(guess_pkg, tmp_path, str(model_url), uv_taskset(marker, max_in_flight=1024), (256, 512))
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    needed = open_files.planned_open_files(1024, 4)
    assert line == (
        f"error: 1024 episodes in flight on 4 launched server(s) need about {needed} open files, but this "
        "process may open at most 512 (hard limit 512); raise the hard limit "
        f"(`ulimit -Hn {needed}` as root, `nofile` in /etc/security/limits.conf, or LimitNOFILE= for a systemd "
        "service, or `--ulimit nofile=N:N` for a container) or play fewer episodes at once"
    )
    assert "starting test/guess-env" not in run.stderr  # nothing was launched
    assert model.requests == [] and marked_processes(marker) == []


def test_a_run_the_hard_limit_holds_raises_the_soft_limit_and_plays(guess_pkg: str, tmp_path: Path) -> None:
    model = ScriptedChatModel(Script(['{"guess": 7}']))
    with (
        serve_app(model) as model_url,
        serve_app_subprocess(UV_FIXTURE_APP, cwd=UV_FIXTURE_PROJECT, ready_path="/health") as env_url,
    ):
        # 512 in flight need more than the soft 256, and fewer than the hard 4,096.
        taskset = {"base_url": str(env_url), "max_in_flight": 512}
        run = _vf_eval(guess_pkg, tmp_path, str(model_url), taskset, (256, HARD))
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(model.requests) >= 1

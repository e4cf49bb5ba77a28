"""`openenvgen_servers.processes` on real processes: a server's group stopped whole, and `find_uv`.

Each group is a leader (as `uv run` is) that starts a child (as uvicorn is) and then
reports the child's pid. A process is "running" while `/proc` shows it in any state but
zombie: an orphan whose parent died is reparented to PID 1, which in a container without an
init may never reap it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenvgen_servers.processes import find_uv, stop_process_group

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")

# The leader starts the child given as its argument, waits until the child has set its signal
# handlers, prints the child's pid and sleeps; it exits on SIGTERM unless told to ignore it.
LEADER = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    if sys.argv[2] == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    print(child.pid, flush=True)
    time.sleep(120)
    """
)
CHILD = "import time; print('ready', flush=True); time.sleep(120)"
CHILD_IGNORING_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"
)


def state(pid: int) -> str | None:
    """The process's state letter in `/proc` (`S` sleeping, `Z` zombie, ...); None once it is reaped."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return text[text.rindex(")") + 2]


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie has stopped; it only waits to be reaped)."""
    return state(pid) not in (None, "Z", "X")


@contextlib.contextmanager
def group(child: str, *, leader: str = "exit") -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A leader in its own session with one child: (leader, child pid); SIGKILLed if a test leaves it."""
    process = subprocess.Popen(
        [sys.executable, "-c", LEADER, child, leader], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    child_pid = None
    try:
        child_pid = int(process.stdout.readline())  # type: ignore[union-attr]
        assert running(process.pid) and running(child_pid)
        yield process, child_pid
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()  # type: ignore[union-attr]
        if child_pid is not None:
            with contextlib.suppress(ChildProcessError):  # ours only under `orphans_left_unreaped`
                os.waitpid(child_pid, 0)


PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def orphans_left_unreaped() -> Iterator[None]:
    """Orphans made in the block become this process's children, left as zombies until `group`
    reaps them: as under a PID 1 that never reaps (a container without an init)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def test_a_group_that_exits_on_sigterm_is_stopped_at_once() -> None:
    with group(CHILD) as (leader, child):
        started = time.monotonic()
        stop_process_group(leader, grace=10.0)
        assert time.monotonic() - started < 3.0, "waited for the grace period although the group had exited"
        assert leader.returncode == -signal.SIGTERM
        assert not running(child)


def test_members_left_as_zombies_nobody_reaps_do_not_hold_the_stop_up() -> None:
    with orphans_left_unreaped(), group(CHILD) as (leader, child):
        started = time.monotonic()
        stop_process_group(leader, grace=10.0)
        assert state(child) == "Z", "the child was reaped after all: this test proves nothing"
        assert time.monotonic() - started < 3.0, "a zombie counted as a running member of the group"


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    with group(CHILD_IGNORING_SIGTERM) as (leader, child):
        started = time.monotonic()
        stop_process_group(leader, grace=1.0)
        elapsed = time.monotonic() - started
        assert leader.returncode == -signal.SIGTERM  # the leader went at once; its child did not
        assert not running(child)
        assert 1.0 <= elapsed < 5.0, f"took {elapsed:.2f}s with a 1s grace period"


def test_a_leader_that_ignores_sigterm_is_killed_with_its_group() -> None:
    with group(CHILD, leader="ignore") as (leader, child):
        stop_process_group(leader, grace=1.0)
        assert leader.returncode == -signal.SIGKILL
        assert not running(child)


def test_a_group_already_gone_returns_at_once() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait(timeout=30)
    started = time.monotonic()
    stop_process_group(process, grace=10.0)
    assert time.monotonic() - started < 1.0
    assert process.returncode == 0


def test_a_process_not_leading_its_own_group_is_stopped_alone() -> None:
    """Started without `start_new_session`, it shares the caller's group: only it is signalled."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    assert os.getpgid(process.pid) == os.getpgrp()
    stop_process_group(process, grace=5.0)
    assert process.returncode == -signal.SIGTERM  # and this test process is still here to see it


def uv_in(folder: Path) -> Path:
    """An executable named `uv` in `folder` (created)."""
    folder.mkdir()
    path = folder / "uv"
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_uv_prefers_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path, beside = uv_in(tmp_path / "bin"), uv_in(tmp_path / "venv")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setattr(sys, "executable", str(beside.parent / "python"))
    assert find_uv() == str(on_path)


def test_find_uv_falls_back_to_the_one_beside_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    beside = uv_in(tmp_path / "venv")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(beside.parent / "python"))
    assert find_uv() == str(beside)


def test_find_uv_finds_nothing_where_there_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "uv").write_text("not executable")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "python"))
    assert find_uv() is None

"""How a Swarm service's task states become a launch failure (`task_failure`): a rejected
task at once; failed tasks only once Swarm's restarts have failed too, so a passing start
failure (moby/moby#48783) does not end a launch that Swarm would have carried."""

from __future__ import annotations

from typing import Any

from openenvgen_runtime.launching.docker_cli import FAILED_TASKS, task_failure

REMOUNT = "starting container failed: unable to remount dir as readonly: device or resource busy"


def task(state: str, err: str = "", at: str = "2026-12-06T12:00:00Z") -> dict[str, Any]:
    return {"Status": {"State": state, "Err": err, "Timestamp": at}, "DesiredState": "running"}


def test_a_rejected_task_is_a_failure_at_once() -> None:
    tasks = [task("running"), task("rejected", "No such image: nope:latest")]
    assert task_failure(tasks) == "rejected: No such image: nope:latest"


def test_failed_starts_are_a_failure_only_once_swarms_restarts_failed_too() -> None:
    tasks = [task("running"), task("failed", REMOUNT)]
    assert task_failure(tasks) is None
    exits = [task("failed", f"task: non-zero exit ({n})", at=f"2026-12-06T12:00:0{n}Z") for n in (3, 5, 4)]
    assert len(exits) == FAILED_TASKS
    assert task_failure(exits[:-1]) is None
    assert task_failure(exits) == "failed: task: non-zero exit (5)"  # the latest


def test_tasks_without_an_error_are_no_failure() -> None:
    assert task_failure([task("failed"), task("shutdown"), task("pending"), task("running")] * 3) is None
    assert task_failure([]) is None

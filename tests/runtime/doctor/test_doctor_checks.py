"""The doctor's checks on purpose-built OpenEnv servers (`doctor_envs`, real `create_app` apps on
loopback): each check catches its fault, and a good server passes them all.

One package is generated from the good server and measured against each server (they share a
schema). The runtime's doctor runs in this process (`run.diagnose`), with few episodes and short
timeouts; the good server goes through the whole command, `openenv-gen doctor`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from openenvgen_runtime.doctor import run
from openenvgen_schemas.doctor_report import DoctorReport, Thresholds
from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.doctor_envs import SESSIONS, SLOW_STEP_S, make_doctor_app
from openenvgen_testsupport.generating import gen
from openenvgen_testsupport.servers import serve_app

QUICK = run.Options(episodes=4, group_size=2, max_steps=4, replays=1, capacity_bound=2, timeout=5.0, progress=False)
"""Few episodes; a capacity bound under the servers' 4 sessions, so no release probe runs."""


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(module name, directory) of the package generated from the good server."""
    root = tmp_path_factory.mktemp("doctor")
    with serve_app(make_doctor_app("good"), ready_path="/health") as url:
        package_id = generate_from_server("line", url, root)
    module = package_id.replace("-", "_")
    return module, next(p for p in root.iterdir() if (p / module).is_dir())


def diagnose(module: str, fault: str, options: run.Options = QUICK) -> DoctorReport:
    taskset = run.find_taskset(module)
    with serve_app(make_doctor_app(fault), ready_path="/health") as url:
        config = run.make_config(taskset, {"base_url": url})
        return asyncio.run(run.diagnose(taskset, config, options))


def verdicts(report: DoctorReport) -> dict[str, str]:
    return {check.name: check.verdict for check in report.checks}


def check(report: DoctorReport, name: str) -> Any:
    return next(c for c in report.checks if c.name == name)


def test_a_server_that_ignores_seeds_fails_determinism(package: tuple[str, Path]) -> None:
    report = diagnose(package[0], "ignores_seed")
    found = check(report, "determinism")
    assert found.verdict == "fail", found
    mismatch = found.data.mismatches[0]
    assert (mismatch.step, mismatch.field) == (0, "observation.target")
    assert verdicts(report)["schema_fidelity"] == "pass"


def test_a_server_that_refuses_valid_actions_fails_schema_fidelity(package: tuple[str, Path]) -> None:
    report = diagnose(package[0], "refuses_action")
    found = check(report, "schema_fidelity")
    assert found.verdict == "fail"
    refused = found.data.refused[0]
    assert "this server takes no" in refused.message
    assert json.loads(refused.action)["direction"] in ("left", "right")
    assert verdicts(report)["episodes"] == "fail"  # every episode ended refused


def test_a_constant_reward_warns(package: tuple[str, Path]) -> None:
    report = diagnose(package[0], "constant_reward")
    found = check(report, "rewards")
    assert found.verdict == "warn"
    assert found.data.groups and all(group.variance == 0 for group in found.data.groups)
    assert "zero variance" in found.summary


def test_a_slow_step_fails_latency(package: tuple[str, Path]) -> None:
    options = run.Options(
        episodes=1,
        max_steps=2,
        replays=0,
        capacity_bound=1,
        timeout=5.0,
        progress=False,
        thresholds=Thresholds(step_p95_warn_ms=50, step_p95_fail_ms=SLOW_STEP_S * 1000 / 2),
    )
    report = diagnose(package[0], "slow_step", options)
    found = check(report, "latency")
    assert found.verdict == "fail"
    assert found.data.step.p50_ms >= SLOW_STEP_S * 1000
    assert verdicts(report)["capacity"] == "pass"


def test_a_server_that_keeps_vanished_sessions_fails_session_release(package: tuple[str, Path]) -> None:
    options = run.Options(
        episodes=1,
        max_steps=1,
        replays=0,
        capacity_bound=8,
        timeout=5.0,
        progress=False,
        thresholds=Thresholds(release_wait_s=3.0),
    )
    report = diagnose(package[0], "leaks_sessions", options)
    assert check(report, "capacity").data.capacity == SESSIONS
    found = check(report, "session_release")
    assert found.verdict == "fail"
    assert (found.data.vanished, found.data.released) == (SESSIONS, 0)


def test_a_good_server_passes_every_check_through_the_command(package: tuple[str, Path], tmp_path: Path) -> None:
    module, folder = package
    html = tmp_path / "report.html"
    with serve_app(make_doctor_app("good"), ready_path="/health") as url:
        result = gen(
            "doctor",
            str(folder),
            "--base-url",
            url,
            "--episodes",
            "4",
            "--group-size",
            "2",
            "--capacity-bound",
            "8",
            "--timeout",
            "5",
            "--threshold",
            "release_wait_s=10",
            "--json",
            "--html",
            str(html),
        )
    assert result.returncode == 0, result.stderr
    report = DoctorReport.model_validate_json(result.stdout)
    assert verdicts(report) == dict.fromkeys(verdicts(report), "pass"), [c.summary for c in report.checks]
    assert len(report.checks) == 7 and report.launch == "base_url" and report.episodes == 4
    assert check(report, "capacity").data.capacity == SESSIONS
    assert check(report, "session_release").data.released == SESSIONS
    assert report.thresholds.release_wait_s == 10
    assert "<svg" in html.read_text("utf-8")


def test_a_bad_threshold_is_one_line_and_nothing_runs(package: tuple[str, Path]) -> None:
    result = gen("doctor", str(package[1]), "--threshold", "step_p95=3")
    assert result.returncode == 64
    assert result.stderr.count("\n") == 1 and "--threshold 'step_p95=3'" in result.stderr

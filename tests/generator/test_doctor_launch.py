"""`openenv-gen doctor PACKAGE_DIR` with no `--base-url`: the command launches the env itself, as
the package's taskset would (OpenEnv's UV provider running the UV fixture env's project), reports
the server's start-up time beside the other checks, and stops the server afterwards, whether the
env started or not: no process of it is left. Each run is a real `openenv-gen` process."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from openenvgen_schemas.doctor_report import DoctorReport
from openenvgen_testsupport.adapters import generate_uv_fixture_package, marked_processes
from openenvgen_testsupport.generating import gen
from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT

pytestmark = pytest.mark.rollout


@pytest.fixture(scope="module")
def package_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doctor-launch")
    package_id = generate_uv_fixture_package(root)
    return next(p for p in root.iterdir() if (p / package_id.replace("-", "_")).is_dir())


def _launch_settings(marker: str, **env_vars: str) -> list[str]:
    """`--set` keys a user writes in the taskset config to launch the fixture env's project;
    its processes carry `marker` in their environment."""
    provider = {
        "project_path": str(UV_FIXTURE_PROJECT),
        "app": UV_FIXTURE_APP,
        "env_vars": {"OPENENVGEN_TEST_MARKER": marker, **env_vars},
    }
    return ["--set", 'env="test/guess-env"', "--set", f"provider_kwargs={json.dumps(provider)}"]


def test_doctor_launches_the_env_reports_its_start_up_and_stops_it(package_dir: Path) -> None:
    marker = uuid.uuid4().hex
    result = gen(
        "doctor",
        str(package_dir),
        *_launch_settings(marker),
        "--set",
        "startup_timeout=90",
        "--episodes",
        "2",
        "--group-size",
        "2",
        "--capacity-bound",
        "4",
        "--timeout",
        "10",
        "--threshold",
        "release_wait_s=10",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = DoctorReport.model_validate_json(result.stdout)
    checks = {check.name: check for check in report.checks}
    assert (report.launch, report.env_id, report.episodes) == ("uv", "test/guess-env", 2)
    latency = checks["latency"].data
    assert latency.startup_s is not None and latency.startup_s > 0
    assert f"start-up {latency.startup_s:.1f} s" in checks["latency"].summary
    assert latency.step.p50_ms > 0 and latency.reset.p50_ms > 0
    # The fixture app holds one session: the second is refused, and a vanished client's is freed.
    assert checks["capacity"].data.capacity == 1
    release = checks["session_release"].data
    assert (release.vanished, release.released) == (1, 1), checks["session_release"].summary
    assert checks["determinism"].verdict == "pass" and checks["schema_fidelity"].verdict == "pass"
    assert "starting the env" in result.stderr  # the progress bar's first stage
    assert marked_processes(marker) == []


def test_an_env_that_fails_to_start_is_one_line_exit_69_and_nothing_left(package_dir: Path) -> None:
    marker = uuid.uuid4().hex
    result = gen(
        "doctor",
        str(package_dir),
        *_launch_settings(marker, GUESS_ENV_CRASH="1"),
        "--set",
        "startup_timeout=60",
        "--json",
    )
    assert result.returncode == 69, result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("openenv-gen: error: doctor: test/guess-env (uv): server exited with code 1")
    assert "crashing on purpose" in errors[0]  # the log's last line, not a dangling "its log:"
    assert marked_processes(marker) == []

"""`openenv-gen doctor` on a catalog package: the checked-in Connect Four package against its
replay server (the recorded session, served by OpenEnv's `create_app` on loopback), the
report the docs show. The replay pays one reward whatever the policy does, so the reward
check warns; every other check passes, and the page renders."""

from __future__ import annotations

from pathlib import Path

from openenvgen import catalog
from openenvgen_schemas.doctor_report import DoctorReport
from openenvgen_testsupport.generating import gen
from openenvgen_testsupport.paths import GENERATED
from openenvgen_testsupport.replay_env import make_replay_app
from openenvgen_testsupport.servers import serve_app


def test_doctor_on_the_connect4_package_against_its_replay(tmp_path: Path) -> None:
    replay = make_replay_app(catalog.lookup("connect4").env_folder)
    html = tmp_path / "doctor.html"
    with serve_app(replay.app, ready_path="/health") as url:
        result = gen(
            "doctor",
            str(GENERATED / "connect4-openenv"),
            "--base-url",
            url,
            "--timeout",
            "10",
            "--json",
            "--html",
            str(html),
        )
    assert result.returncode == 0, result.stderr
    assert "openenv/connect4_env" in html.read_text("utf-8")
    report = DoctorReport.model_validate_json(result.stdout)
    assert report.env_id == "openenv/connect4_env" and report.episodes == 8
    verdicts = {check.name: check.verdict for check in report.checks}
    assert verdicts.pop("rewards") == "warn"
    assert set(verdicts.values()) == {"pass"}, report.checks
    capacity, release = (next(c.data for c in report.checks if c.name == n) for n in ("capacity", "session_release"))
    assert capacity.capacity == 8 and release.released == release.vanished == 8
    # What the replay took is what the doctor sent: the catalog's example action each time.
    assert replay.log.actions and all(action == {"column": 3} for action in replay.log.actions)

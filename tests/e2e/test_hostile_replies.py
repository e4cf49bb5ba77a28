"""Every class of bad reply (`hostile_faults.FAULTS`) from a real hostile env server, through
the runtime's episode loop under `vf-eval` and through the served path (verifiers'
`serve_env` + `EnvClient`): each episode ends as its class's documented outcome, with one
line naming the field; no score or metric is NaN or infinite; traces stay small; the benign
episodes beside the hostile ones all finish; and the run ends in bounded time, hung servers
included. Real servers on loopback, a scripted model."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport import served
from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.hostile_faults import FAULTS, Fault
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app, serve_app_subprocess

pytestmark = pytest.mark.rollout

REPLY_TIMEOUT = 3.0
BENIGN = 4
"""Benign tasks played beside the hostile ones in each run."""
RESET_FAULT = Fault.REWARD_NAN
"""Also played on the reset reply (`fault_on="reset"`): a reset that breaks the contract."""


def tasks() -> list[dict[str, Any]]:
    """One task per fault class (on the step replies), one with a bad reset reply, and
    `BENIGN` plain ones between them."""
    hostile = [{"fault": fault.value} for fault in Fault] + [{"fault": RESET_FAULT.value, "fault_on": "reset"}]
    return hostile + [{} for _ in range(BENIGN)]


def expected(reset: dict[str, Any], refuse_frames: bool) -> str:
    """The stop condition a task must end with."""
    fault = reset.get("fault")
    if fault is None:
        return "env_done"
    outcome = FAULTS[Fault(fault)].outcome
    if outcome == "ok" or (outcome == "bounded" and not refuse_frames):
        return "env_done"
    return "env_protocol_error" if outcome == "bounded" else outcome


def check_error(reset: dict[str, Any], error: dict[str, Any] | Any) -> None:
    """One line naming the field (or the frame, for one that could not be read at all)."""
    kind, message = (error["type"], error["message"]) if isinstance(error, dict) else (error.type, error.message)
    if kind == "EnvLost":
        return
    assert kind == "EnvProtocolError", (reset, kind, message[:300])
    field = FAULTS[Fault(reset["fault"])].field or "frame"
    assert "\n" not in message and len(message) < 300, message[:300]
    assert f": {field}" in message or ": frame:" in message, (reset, message)


def all_finite(numbers: Any) -> bool:
    return all(isinstance(n, int | float) and math.isfinite(n) for n in numbers)


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    # Its own process: a 60 MB frame being written never holds up this process's servers.
    with serve_app_subprocess(
        "openenvgen_testsupport.hostile_env:make_hostile_app", factory=True, ready_path="/health"
    ) as url:
        yield str(url)


@pytest.fixture(scope="module")
def hostile_pkg(hostile_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return generate_from_server("hostile", hostile_url, tmp_path_factory.mktemp("pkgs"), env_id="test/hostile")


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    # vf-eval and the served workers run in processes of their own: they find the generated
    # package where it was written, and this tree's code first, as this process does.
    paths = [p for p in sys.path if "pkgs" in p] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def test_every_bad_reply_ends_its_own_episode_under_vf_eval(hostile_pkg: str, hostile_url: str, tmp_path: Path) -> None:
    resets = tasks()
    taskset = {"base_url": hostile_url, "resets": resets, "reply_timeout": REPLY_TIMEOUT, "max_reply_mb": 100}
    model = ScriptedChatModel(Script(["hello"]))
    started = time.monotonic()
    with serve_app(model) as model_url:
        run = run_eval(
            hostile_pkg, model_url=str(model_url), out_dir=tmp_path, taskset=taskset, max_concurrent=32, timeout=240
        )
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-4000:]
    by_idx = {e["task"]["data"]["idx"]: e for e in run.episodes}
    assert sorted(by_idx) == list(range(len(resets)))
    for idx, reset in enumerate(resets):
        (trace,) = by_idx[idx]["traces"]
        assert trace["stop_condition"] == expected(reset, refuse_frames=False), (reset, trace["stop_condition"])
        score = trace["rewards"]["openenv_reward"]["score"]
        assert all_finite([score, *trace["metrics"].values()]), (reset, score, trace["metrics"])
        if trace["stop_condition"] in ("env_protocol_error", "env_lost"):
            check_error(reset, trace["errors"][0])
        else:
            assert not trace["errors"], (reset, trace["errors"])
    # The 60 MB observation was cut: every trace together stays small, and what the model read too.
    size = sum(path.stat().st_size for path in tmp_path.glob("*/traces.jsonl"))
    assert size < 5 * 2**20, size
    assert max(len(str(body)) for body in model.requests) < 400_000
    assert elapsed < 200, elapsed


def test_every_bad_reply_ends_its_own_episode_on_the_served_path(
    hostile_pkg: str, hostile_url: str, tmp_path: Path
) -> None:
    # The frame bound at its default (32 MiB) and refusing: the 60 MB reply is refused.
    config = served.env_config(
        hostile_pkg,
        {"base_url": hostile_url, "resets": tasks(), "reply_timeout": REPLY_TIMEOUT, "observation_overflow": "refuse"},
    )
    task_data = served.client_tasks(config)
    model = ScriptedChatModel(Script(["hello"]))
    started = time.monotonic()
    with serve_app(model) as model_url, served.env_server(config, tmp_path / "env-server.log") as server:
        episodes = served.play(server.address, str(model_url), task_data, timeout=120)
    assert time.monotonic() - started < 200
    for data, episode in zip(task_data, episodes, strict=True):
        assert not isinstance(episode, BaseException), (data["reset"], episode)
        (trace,) = episode.traces
        reset = data["reset"]
        assert trace.stop_condition == expected(reset, refuse_frames=True), (reset, trace.stop_condition)
        score = trace.rewards["openenv_reward"].score
        assert all_finite([score, *trace.metrics.values()]), (reset, score)
        assert episode.ok == (trace.stop_condition == "env_done"), reset
        if not episode.ok:
            check_error(reset, trace.errors[0])

"""Full verifiers rollouts of the generated Wordle package: real vf-eval, real harness,
a real OpenEnv server and a scripted model server, all on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.paths import GENERATED
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout

PACKAGE = "wordle-openenv"


@pytest.fixture(scope="module", autouse=True)
def generated_package_installed() -> None:
    """The rollouts must exercise the checked-in generated package, installed."""
    import wordle_openenv

    root = GENERATED / PACKAGE
    assert Path(wordle_openenv.__file__).resolve().is_relative_to(root), f"install it: pip install -e {root}"


def _play(script: list[str], tmp_path: Path, resets: list[dict], **taskset):
    model = ScriptedChatModel(Script(script))
    with serve_app(make_wordle_app(), ready_path="/health") as env_url, serve_app(model) as model_url:
        run = run_eval(
            PACKAGE,
            model_url=str(model_url),
            out_dir=tmp_path,
            taskset={"base_url": str(env_url), "resets": resets, **taskset},
        )
    assert run.returncode == 0, run.stderr[-4000:]
    return run, model


def test_winning_script_earns_the_win_reward(tmp_path: Path) -> None:
    # The second reply is fenced JSON: both reply forms reach the env as typed actions.
    run, model = _play(["[slate]", '```json\n{"message": "[crane]"}\n```'], tmp_path, [{"secret": "crane"}])
    assert run.printed == [(1.0, "env_done")]
    (trace,) = run.traces
    assert trace["stop_condition"] == "env_done"
    assert trace["rewards"]["openenv_reward"]["score"] == 1.0
    assert trace["metrics"]["env_steps"] == 2
    # The chat opened with the reset observation and the live action schema.
    first_user = [m for m in model.requests[0]["messages"] if m["role"] == "user"][0]
    content = first_user["content"] if isinstance(first_user["content"], str) else json.dumps(first_user["content"])
    assert "Observation:" in content and "Action schema:" in content and '"message"' in content
    assert "metadata" not in content.split("Action schema:")[1]


def test_losing_script_earns_nothing(tmp_path: Path) -> None:
    run, _ = _play(["[slate]"], tmp_path, [{"secret": "crane", "max_guesses": 3}])
    assert run.printed == [(0.0, "env_done")]
    (trace,) = run.traces
    assert trace["rewards"]["openenv_reward"]["score"] == 0.0
    assert trace["metrics"]["env_steps"] == 3


def test_each_reset_is_one_task(tmp_path: Path) -> None:
    run, _ = _play(
        ["[crane]"], tmp_path, [{"secret": "crane"}, {"secret": "slate"}, {"secret": "crane"}], max_servers=1
    )
    by_task = sorted(
        (e["task"]["data"]["idx"], e["traces"][0]["rewards"]["openenv_reward"]["score"]) for e in run.episodes
    )
    assert by_task == [(0, 1.0), (1, 0.0), (2, 1.0)]

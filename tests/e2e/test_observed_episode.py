"""What reaches the model, end to end: a package generated from a real server whose
observations carry an image (base64 and env-served), an env system prompt and the answer
in `metadata`, played with real `vf-eval` and a scripted model on loopback; and tasks
read from an env's Task API."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.media_envs import PICTURE_SYSTEM_PROMPT, make_picture_app, make_task_api_app
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout


def generated_packages_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """vf-eval runs in its own process: it finds the packages where the tests wrote them."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if "pkgs" in p))


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    generated_packages_importable(monkeypatch)


@pytest.fixture(scope="module")
def picture_server() -> Any:
    with serve_app(make_picture_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def picture_pkg(picture_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return generate_from_server("picture", picture_server, tmp_path_factory.mktemp("pkgs"), env_id="test/picture-quiz")


def _play(pkg: str, tmp_path: Path, script: list[str], **taskset: Any) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(Script(script))

    with serve_app(model) as model_url:
        run = run_eval(pkg, model_url=str(model_url), out_dir=tmp_path, taskset=taskset)
    assert run.returncode == 0, run.stderr[-4000:]
    return run, model


def test_images_reach_the_model_as_parts_and_metadata_never_does(
    picture_pkg: str, picture_server: str, tmp_path: Path
) -> None:
    run, model = _play(picture_pkg, tmp_path, ["green", "blue"], base_url=picture_server, resets=[{"colour": "blue"}])
    (trace,) = run.traces
    assert trace["stop_condition"] == "env_done" and trace["rewards"]["openenv_reward"]["score"] == 1.0
    first = model.requests[0]["messages"]
    # The env's system prompt leads the system message; the action format follows.
    assert first[0]["role"] == "system" and first[0]["content"].startswith(PICTURE_SYSTEM_PROMPT + "\n\n")
    assert "Reply with exactly one action" in first[0]["content"]
    user = first[1]["content"]
    assert isinstance(user, list)
    text = "".join(p.get("text", "") for p in user if p["type"] == "text")
    images = [p["image_url"]["url"] for p in user if p["type"] == "image_url"]
    assert len(images) == 2 and all(url.startswith("data:image/png;base64,") for url in images)
    # The answer is in metadata (and the PNG's colour): no text the model reads names it.
    assert "metadata" not in text and "blue" not in text and "answer" not in text.split("Action schema:")[0]
    assert "system_prompt" not in text and "<image/png" in text
    for body in model.requests:
        for message in body["messages"]:
            assert "difficulty" not in json.dumps(message)
    # The final observation, without media, and its numbers as metrics.
    final = trace["info"]["openenv"]
    assert final["won"] is True and final["metadata"]["answer"] == "blue"
    assert final["image_base64"].endswith("base64 characters omitted>")
    assert trace["metrics"]["score"] == 2.5 and trace["metrics"]["attempts"] == 2.0
    assert trace["metrics"]["metadata.difficulty"] == 2.0 and trace["metrics"]["env_steps"] == 2


def test_tasks_are_seeded_and_named_by_env_id_not_url(picture_pkg: str, picture_server: str, tmp_path: Path) -> None:
    run, _ = _play(picture_pkg, tmp_path, ["red"], base_url=picture_server, resets=[{}, {}, {"seed": 7}])
    by_idx = {e["task"]["data"]["idx"]: e["task"]["data"] for e in run.episodes}
    assert [by_idx[i]["reset"] for i in range(3)] == [{"seed": 0}, {"seed": 1}, {"seed": 7}]
    assert [by_idx[i]["name"] for i in range(3)] == [
        "test/picture-quiz#0",
        "test/picture-quiz#1",
        "test/picture-quiz#2",
    ]


def test_hidden_fields_per_run(picture_pkg: str, picture_server: str, tmp_path: Path) -> None:
    _, model = _play(
        picture_pkg,
        tmp_path,
        ["red"],
        base_url=picture_server,
        resets=[{"colour": "red"}],
        hidden_fields=["score", "image_asset_path"],
    )
    user = model.requests[0]["messages"][1]["content"]
    text = "".join(p.get("text", "") for p in user if p["type"] == "text")
    assert '"score"' not in text and "image_asset_path" not in text and '"attempts"' in text
    assert sum(p["type"] == "image_url" for p in user) == 1


def test_a_split_from_the_task_api_becomes_the_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_app(make_task_api_app(), ready_path="/health") as url:
        pkg = generate_from_server("counting", str(url), tmp_path / "pkgs", env_id="test/counting")
        generated_packages_importable(monkeypatch)
        run, _ = _play(pkg, tmp_path / "run", ["1"], base_url=str(url), split="test", split_range="1:3")
    data = sorted((e["task"]["data"] for e in run.episodes), key=lambda d: d["idx"])
    assert [d["reset"]["index"] for d in data] == [1, 2] and all(d["reset"]["split"] == "test" for d in data)
    assert [d["name"] for d in data] == ["test/counting#test:1", "test/counting#test:2"]

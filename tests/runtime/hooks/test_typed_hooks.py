"""Typed hooks: a `custom.py` renderer, reward or metric gets the package's generated
observation models, checked at import, recorded on the trace only when asked for, rescored
the same by `vf-replay`, and kept (with the server's values) when an observation drifts."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from openenv.core.env_server import create_app

from openenvgen_runtime.hooks.extensions import ExtensionError, load_extension
from openenvgen_runtime.hooks.typed_hooks import INFO_KEY
from openenvgen_testsupport.adapters import OPENENV_GEN, load_env, run_all
from openenvgen_testsupport.custom_modules import copy_package, generated_package, hook_package
from openenvgen_testsupport.fixture_envs import (
    WordGuessAction,
    WordGuessEnvironment,
    WordGuessObservation,
    wordle_feedback,
)
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

MODELS = """\
    from pydantic import BaseModel


    class BoardObservation(BaseModel):
        board: list[str]
        done: bool = False
        reward: float | None = None
"""

# --- checked at import ---------------------------------------------------------------------

BAD_ANNOTATIONS = [
    (
        "import verifiers.v1 as vf\nfrom pydantic import BaseModel\n\n\nclass Mine(BaseModel):\n    x: int\n\n\n"
        "@vf.reward\ndef r(observation: Mine) -> float:\n    return 1.0\n",
        "reward r: 'observation' is annotated Mine, which is not one of the package's models",
    ),
    (
        "import verifiers.v1 as vf\n\n\n@vf.metric\ndef m(observations: int) -> float:\n    return 1.0\n",
        "metric m: 'observations' is annotated int; make it list[<model>]",
    ),
    (
        "from __future__ import annotations\n\nimport verifiers.v1 as vf\n\n\n"
        "@vf.reward\ndef r(observation: Missing) -> float:\n    return 1.0\n",
        "reward r: an annotation names Missing, which is not defined",
    ),
    (
        "def render_observation(observation: int) -> str:\n    return ''\n",
        "render_observation: 'observation' is annotated int; annotate it with the package's observation model",
    ),
    (
        "import verifiers.v1 as vf\n\n\n@vf.reward\ndef r(observatoin) -> float:\n    return 1.0\n",
        "reward r takes 'observatoin', but a reward is given only task, trace, runtime, observation, observations",
    ),
]


@pytest.mark.parametrize(
    ("source", "message"),
    BAD_ANNOTATIONS,
    ids=["foreign-model", "not-a-list", "undefined-name", "renderer-int", "misspelt"],
)
def test_a_typed_hook_the_package_cannot_honour_fails_at_import(tmp_path: Path, source: str, message: str) -> None:
    module, custom = hook_package(tmp_path, source, MODELS)
    __import__(module.rpartition(".")[0] + ".models")
    with pytest.raises(ExtensionError) as raised:
        load_extension(module)
    assert str(raised.value).startswith(f"{custom}: {message}")
    assert "\n" not in str(raised.value)


def test_what_a_typed_hook_asks_for_decides_what_is_recorded_and_what_verifiers_passes(tmp_path: Path) -> None:
    module, _ = hook_package(
        tmp_path,
        """\
        from collections.abc import Sequence

        import verifiers.v1 as vf

        from .models import BoardObservation


        def render_observation(observation: BoardObservation) -> str:
            return "".join(observation.board)


        @vf.reward
        def last(observation: BoardObservation, task) -> float:
            return 1.0


        @vf.metric
        def every(observations: Sequence[BoardObservation], trace) -> float:
            return 1.0


        @vf.metric
        def untyped(observation: dict) -> float:
            return 1.0


        @vf.metric
        def plain(trace) -> float:
            return 1.0
        """,
        MODELS,
    )
    extension = load_extension(module)
    assert extension.typed_renderer and extension.records == "all"
    assert {h.fn.__name__: h.asks for h in extension.scores} == {
        "last": {"observation": True},
        "every": {"observations": True},
        "untyped": {"observation": False},
        "plain": {},
    }
    # verifiers reads a hook's signature to pass it arguments: it is never asked for an
    # observation, and a hook that reads them gets the trace they are read from.
    signatures = {fn.__name__: list(inspect.signature(fn).parameters) for fn in extension.hooks("metric")}
    assert signatures == {"every": ["trace"], "untyped": ["trace"], "plain": ["trace"]}
    (last,) = extension.hooks("reward")
    assert list(inspect.signature(last).parameters) == ["task", "trace"]


def test_an_unannotated_renderer_still_gets_a_dict(tmp_path: Path) -> None:
    module, _ = hook_package(tmp_path, "def render_observation(observation):\n    return ''\n", MODELS)
    extension = load_extension(module)
    assert not extension.typed_renderer and extension.records == ""


# --- played: typed renderer, typed rewards, hidden fields ------------------------------------

TYPED = """\
    from collections.abc import Sequence

    import verifiers.v1 as vf

    from .models import WordGuessObservation

    HIDDEN_FIELDS = {"feedback"}


    def render_observation(observation: WordGuessObservation) -> str:
        return f"{type(observation).__name__}: {observation.prompt} | {observation.feedback or '-'}"


    @vf.reward(weight=0.5)
    def greens(observation: WordGuessObservation) -> float:
        return observation.feedback.count("G") / 5


    @vf.metric
    def guesses(observations: Sequence[WordGuessObservation]) -> dict[str, float]:
        return {"observed": float(len(observations)), "reset_first": float(observations[0].feedback == "")}
"""


def _play(server: str, tmp_path: Path, custom: str, script: list[str]) -> tuple[list[Any], ScriptedChatModel]:
    package, _ = generated_package(server, tmp_path, custom, stem="typed")
    model = ScriptedChatModel(Script(script))
    with serve_app(model) as model_url:
        env = load_env(package, {"base_url": server, "resets": [{"secret": "crane"}]})
        episodes = asyncio.run(run_all(env, str(model_url)))
    return episodes, model


def _user_texts(model: ScriptedChatModel) -> list[str]:
    (conversation,) = model.conversations().values()
    return [m["content"] for m in conversation[-1]["messages"] if m["role"] == "user"]


def test_typed_hooks_read_the_episode_as_the_package_models(wordle_server: str, tmp_path: Path) -> None:
    (episode,), model = _play(wordle_server, tmp_path, TYPED, ["[slate]", "[crate]", "[crane]"])
    trace = episode.traces[0]
    assert not trace.errors, trace.errors
    assert {k: (v.score, v.weight) for k, v in trace.rewards.items()} == {
        "openenv_reward": (1.0, 1.0),
        "greens": (1.0, 0.5),  # the winning guess: five greens, read from the typed last observation
    }
    assert trace.metrics["observed"] == 4.0 and trace.metrics["reset_first"] == 1.0  # reset + 3 steps
    # The renderer got the model (the reset observation's, then the step's), hidden field included.
    texts = _user_texts(model)
    assert texts[0].startswith("Observation:\nWordGuessObservation: Guess the secret 5-letter word")
    assert "| -" in texts[0]
    assert "Wrong guess [slate]" in texts[1] and f"| {wordle_feedback('slate', 'crane')}" in texts[1]
    recorded = trace.info[INFO_KEY]
    assert [e["kind"] for e in recorded] == ["reset", "step", "step", "step"]
    assert recorded[-1]["done"] is True and recorded[-1]["reward"] == 1.0


def test_a_hidden_field_never_reaches_the_model_through_the_default_rendering(
    wordle_server: str, tmp_path: Path
) -> None:
    custom = 'HIDDEN_FIELDS = {"feedback"}\n'
    (episode,), model = _play(wordle_server, tmp_path, custom, ["[slate]", "[crane]"])
    assert not episode.traces[0].errors
    texts = _user_texts(model)
    assert len(texts) == 2 and all('"prompt"' in t and '"feedback"' not in t for t in texts)
    assert INFO_KEY not in episode.traces[0].info  # no hook asks: nothing more is recorded


def test_only_the_last_observation_is_recorded_when_no_hook_asks_for_all(wordle_server: str, tmp_path: Path) -> None:
    custom = (
        "import verifiers.v1 as vf\n\n\n@vf.metric\ndef won(observation) -> float:\n"
        "    return float(observation.reward or 0)\n"
    )
    (episode,), _ = _play(wordle_server, tmp_path, custom, ["[slate]", "[crane]"])
    trace = episode.traces[0]
    assert trace.metrics["won"] == 1.0
    assert [e["kind"] for e in trace.info[INFO_KEY]] == ["step"]


# --- an observation that does not validate, mid-episode ---------------------------------------


class DriftingWordGuessEnvironment(WordGuessEnvironment):
    """Sends `feedback` as a number from the second step on: a drift no schema shows."""

    def step(self, *args: Any, **kwargs: Any) -> WordGuessObservation:  # type: ignore[override]
        observation = super().step(*args, **kwargs)
        if self._state.step_count >= 2:
            return WordGuessObservation.model_construct(**{**dict(observation), "feedback": 12345})
        return observation


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the drifting server's own
def test_an_observation_that_does_not_validate_keeps_the_episode_and_the_server_values(
    wordle_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(
        DriftingWordGuessEnvironment,
        WordGuessAction,
        WordGuessObservation,
        env_name="wordle_fixture",
        max_concurrent_envs=8,
    )
    package, _ = generated_package(wordle_server, tmp_path, TYPED, stem="drift")
    model = ScriptedChatModel(Script(["[slate]", "[crate]", "[brine]", "[crane]"]))
    with serve_app(app, ready_path="/health") as drifting, serve_app(model) as model_url:
        env = load_env(package, {"base_url": str(drifting), "resets": [{"secret": "crane"}]})
        with caplog.at_level(logging.WARNING, logger="openenvgen_runtime.hooks.typed_observations"):
            (episode,) = asyncio.run(run_all(env, str(model_url)))
    trace = episode.traces[0]
    # The renderer and the metric got the drifted observations; the reward over the last
    # one raised (a number has no `count`): that is the hook's own failure, named as such.
    texts = _user_texts(model)
    assert any("| 12345" in t for t in texts)
    assert trace.metrics["observed"] == 5.0
    assert trace.stop_condition == "env_done"
    warnings = [r.getMessage() for r in caplog.records if "does not match" in r.getMessage()]
    assert len(warnings) == 1, warnings  # reported once, though every later observation drifts
    assert "does not match WordGuessObservation at feedback: Input should be a valid string" in warnings[0]
    assert any("reward greens raised AttributeError" in str(e) for e in trace.errors)


# --- rescored offline: vf-replay gives the same scores -----------------------------------------


def test_vf_replay_rescores_typed_hooks_from_the_saved_trace(
    wordle_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template"
    made = subprocess.run(
        [OPENENV_GEN, "guess", "--base-url", wordle_server, "--out", str(template)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    pkg = copy_package(template, tmp_path, TYPED)
    monkeypatch.setenv("PYTHONPATH", str(pkg))
    model = ScriptedChatModel(Script(["[slate]", "[crane]"]))
    out = tmp_path / "run"
    out.mkdir()
    with serve_app(model) as model_url:
        run = run_eval("guess-openenv", model_url=str(model_url), out_dir=out, taskset={"base_url": wordle_server})
    assert run.returncode == 0, run.stderr[-4000:]
    (source,) = [p.parent for p in out.glob("*/traces.jsonl")]
    replayed = tmp_path / "replayed"
    replay = subprocess.run(
        [str(Path(sys.executable).with_name("vf-replay")), str(source), "--no-rich", "--output-dir", str(replayed)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert replay.returncode == 0, replay.stderr[-4000:]
    live = _scores(source / "traces.jsonl")
    offline = _scores(replayed / "traces.jsonl")
    # Every score comes back the same: the hooks' and the runtime's own (the env's reward,
    # the final observation's numbers, its step and invalid-reply counts).
    assert offline == live
    assert {"openenv_reward", "greens", "observed", "reset_first", "env_steps", "invalid_actions"} <= set(live)
    assert live["greens"] == [1.0] and live["openenv_reward"] == [1.0]


def _scores(traces: Path) -> dict[str, list[float]]:
    by_name: dict[str, list[float]] = {}
    for line in traces.read_text().splitlines():
        for trace in json.loads(line)["traces"]:
            for name, value in {**trace["rewards"], **trace["metrics"]}.items():
                by_name.setdefault(name, []).append(value["score"] if isinstance(value, dict) else value)
    return by_name


# --- the Customising page's example, against the Connect4 package ------------------------------


def test_the_customising_page_example_scores_a_connect4_board(tmp_path: Path) -> None:
    page = (Path(__file__).parents[3] / "docs" / "guides" / "customising.md").read_text()
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    package = tmp_path / "connect4-openenv"
    shutil.copytree(Path(__file__).parents[3] / "generated" / "connect4-openenv", package)
    (package / "connect4_openenv" / "custom.py").write_text(example)
    # The installed connect4_openenv may be imported already (by another test): this copy
    # must be the one imported, and the installed one back in place afterwards.
    installed = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "connect4_openenv"}
    sys.path.insert(0, str(package))
    try:
        from connect4_openenv.taskset import Connect4Task  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(package))
        for name in [k for k in sys.modules if k.split(".")[0] == "connect4_openenv"]:
            del sys.modules[name]
        sys.modules.update(installed)
    extension = Connect4Task.EXTENSION
    assert extension.typed_renderer and extension.records == "all"
    board = [[0] * 7 for _ in range(6)]
    for row in (5, 4, 3):
        board[row][3] = 1
    board[2][3] = -1
    recorded = [
        {"kind": "reset", "observation": {"board": [[0] * 7 for _ in range(6)], "legal_actions": [0]}, "done": False},
        {"kind": "step", "observation": {"board": board, "legal_actions": [0, 1]}, "reward": 0.0, "done": True},
    ]
    trace = SimpleNamespace(info={INFO_KEY: recorded})
    (centre,) = extension.hooks("reward", Connect4Task.OBSERVATION_MODELS)
    (moves,) = extension.hooks("metric", Connect4Task.OBSERVATION_MODELS)
    assert asyncio.run(centre(trace=trace)) == 0.5
    assert asyncio.run(moves(trace=trace)) == 1.0
    typed = Connect4Task.OBSERVATION_MODELS.typed(recorded[1])
    assert extension.render(typed).splitlines()[2:] == ["...O...", "...X...", "...X...", "...X..."]

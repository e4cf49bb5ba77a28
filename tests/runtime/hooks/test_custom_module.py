"""A generated package's user-owned `custom.py`: hooks for rewards, metrics, prompts,
observation rendering and tasks, checked at import, played through real vf-eval against
a real OpenEnv server, and kept byte for byte (and still in effect) by `regen`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from openenv.core.env_server import create_app
from openenv.core.env_server.types import Observation
from pydantic import Field

from openenvgen_runtime.hooks.extensions import NO_EXTENSION, ExtensionError, HookError, load_extension
from openenvgen_runtime.turn.observations import ObservationView
from openenvgen_testsupport.adapters import OPENENV_GEN, load_env, run_all
from openenvgen_testsupport.custom_modules import copy_package, generated_package, hook_package, messages, unseeded
from openenvgen_testsupport.fixture_envs import WordGuessAction, WordGuessEnvironment, make_wordle_app, wordle_feedback
from openenvgen_testsupport.rollout import VF_EVAL, run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout


# --- a changed upstream: the fixture Wordle with `feedback` renamed to `hints` ---------------


class HintObservation(Observation):
    prompt: str = Field(..., description="Instructions or the result of the last guess.")
    hints: str = Field("", description="Per-letter feedback for the last guess.")


class HintWordGuessEnvironment(WordGuessEnvironment):
    @staticmethod
    def _renamed(observation: Any) -> HintObservation:
        return HintObservation(
            prompt=observation.prompt, hints=observation.feedback, done=observation.done, reward=observation.reward
        )

    def reset(self, *args: Any, **kwargs: Any) -> HintObservation:  # type: ignore[override]
        return self._renamed(super().reset(*args, **kwargs))

    def step(self, *args: Any, **kwargs: Any) -> HintObservation:  # type: ignore[override]
        return self._renamed(super().step(*args, **kwargs))


def make_hint_app() -> Any:
    return create_app(
        HintWordGuessEnvironment, WordGuessAction, HintObservation, env_name="wordle_fixture", max_concurrent_envs=8
    )


# --- helpers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(wordle_server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scaffolded package from the live server, never imported here: tests copy it."""
    out = tmp_path_factory.mktemp("template") / "guess"
    proc = subprocess.run(
        [OPENENV_GEN, "guess", "--base-url", wordle_server, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return out


# --- static checks: a broken custom.py fails at import, in one line ---------------------------

BROKEN = [
    ("def render_observation(observation)\n    return ''\n", ":1: syntax error: expected ':'"),
    (
        "import verifiers.v1 as vf\n\n@vf.reward(weight=0.5)\nasync def brevity(completion):\n    return 1.0\n",
        "reward brevity takes 'completion', but a reward is given only task, trace, runtime",
    ),
    (
        "import verifiers.v1 as vf\n\n@vf.metric\ndef openenv_reward(trace):\n    return 1.0\n",
        "'openenv_reward' is recorded by the runtime",
    ),
    (
        "import verifiers.v1 as vf\n\n@vf.reward(weight=float('nan'))\nasync def r(trace):\n    return 1.0\n",
        "reward r: weight must be a finite number",
    ),
    ("SYSTEM_PROMPT = ['not', 'text']\n", "SYSTEM_PROMPT must be a str, not list"),
    ("ACTION_HINT = 3\n", "ACTION_HINT must be a str, not int"),
    ("SYSTEM_PROMT = 'typo'\n", "SYSTEM_PROMT is not a hook; did you mean SYSTEM_PROMPT?"),
    (
        "def Render_Observation(observation):\n    return ''\n",
        "Render_Observation is not a hook; did you mean render_observation?",
    ),
    ("HIDDEN_FIELDS = 'metadata'\n", "HIDDEN_FIELDS must be a set (or list) of field names"),
    (
        "def render_observation(observation, width):\n    return ''\n",
        "render_observation must take one argument: render_observation(observation)",
    ),
    (
        "async def render_observation(observation):\n    return ''\n",
        "render_observation must be a plain function, not async",
    ),
    ("RESETS = [{'seed': 1}, 'seed=2']\n", "RESETS item 1 must be a dict of reset kwargs"),
    ("RESETS = []\n", "RESETS must be a non-empty list"),
    ("RESETS = [{}]\ndef build_resets(config):\n    return [{}]\n", "set RESETS or build_resets, not both"),
    ("def build_resets():\n    return [{}]\n", "build_resets must take one argument: build_resets(config)"),
    ("import json\n\nBOARD = json.loads('{')\n", ":3: importing it raised JSONDecodeError"),
]


@pytest.mark.parametrize(("source", "message"), BROKEN, ids=[m.split(":")[-1].strip()[:40] for _, m in BROKEN])
def test_a_broken_custom_module_fails_at_import_in_one_line(tmp_path: Path, source: str, message: str) -> None:
    module, path = hook_package(tmp_path, source)
    with pytest.raises(ExtensionError) as raised:
        load_extension(module)
    text = str(raised.value)
    assert "\n" not in text
    assert text.startswith(str(path)), text
    assert message in text


def test_imported_names_are_not_taken_for_misspelt_hooks(tmp_path: Path) -> None:
    module, _ = hook_package(
        tmp_path,
        """\
        from openenvgen_runtime.turn.prompts import system_prompt

        SYSTEM_PROMPT = "Play well."
        """,
    )
    assert load_extension(module).system_prompt == "Play well."


def test_hooks_that_misbehave_while_playing_fail_with_one_line(tmp_path: Path) -> None:
    module, path = hook_package(
        tmp_path,
        """\
        import verifiers.v1 as vf

        HIDDEN_FIELDS = ["board.solution", "debug"]


        def render_observation(observation):
            return observation.get("turn")


        @vf.reward(weight=2)
        def label(trace):
            return "high"


        @vf.metric
        async def keyed(task):
            return {"env_steps": 1.0}
        """,
    )
    extension = load_extension(module)
    observation = {"board": {"solution": "crane", "cells": [{"solution": 1, "x": 2}]}, "debug": 1, "turn": 3}
    # A dotted path hides a nested field, not its siblings (and not a same-named field elsewhere).
    view = ObservationView(hidden_fields=extension.hidden_fields)
    assert view.visible(observation) == {"board": {"cells": [{"solution": 1, "x": 2}]}, "turn": 3}
    with pytest.raises(HookError) as rendered:
        extension.render({"turn": 3})
    assert str(rendered.value) == f"{path}: render_observation returned int, not str"
    (label,) = extension.hooks("reward")
    assert (label.__name__, label._vf_weight) == ("label", 2)
    with pytest.raises(HookError) as scored:
        asyncio.run(label(trace=None))
    assert str(scored.value) == f"{path}: reward label returned 'high', not a number"
    (keyed,) = extension.hooks("metric")
    with pytest.raises(HookError, match="returned 'env_steps', a name the runtime records itself"):
        asyncio.run(keyed(task=None))


def test_no_custom_module_sets_no_hooks(tmp_path: Path) -> None:
    module, path = hook_package(tmp_path, "")
    path.unlink()
    assert load_extension(module) is NO_EXTENSION


def test_a_syntax_error_stops_vf_eval_with_one_line_before_any_episode(template: Path, tmp_path: Path) -> None:
    pkg = copy_package(template, tmp_path, "import verifiers.v1 as vf\n\nHIDDEN_FIELDS = {'metadata'\n")
    # The documented command; nothing is listening on port 9, and nothing needs to be.
    proc = subprocess.run(
        [VF_EVAL, "guess-openenv", "-m", "scripted-model", "--no-push", "--env.taskset.base-url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(pkg), "NO_COLOR": "1"},
    )
    custom = pkg / "guess_openenv" / "custom.py"
    assert proc.returncode != 0
    assert (proc.stdout + proc.stderr).strip() == f"{custom}:3: syntax error: '{{' was never closed"


# --- hooks unset: the package behaves exactly as one without custom.py ------------------------


def test_the_scaffolded_module_changes_no_prompt_and_no_score(wordle_server: str, tmp_path: Path) -> None:
    scaffolded, scaffolded_dir = generated_package(wordle_server, tmp_path)
    bare, bare_dir = generated_package(wordle_server, tmp_path, without_custom=True)
    assert "# @vf.reward(weight=0.1)" in (scaffolded_dir / "custom.py").read_text()
    assert not (bare_dir / "custom.py").exists()

    results = []
    for package in (scaffolded, bare):
        model = ScriptedChatModel(Script(["[slate]", "[crane]"]))
        with serve_app(model) as model_url:
            env = load_env(package, {"base_url": wordle_server, "resets": [{"secret": "crane"}, {"secret": "slate"}]})
            episodes = asyncio.run(run_all(env, str(model_url)))
        scores = sorted(
            (e.traces[0].task.data.idx, {k: v.value for k, v in e.traces[0].rewards.items()}, e.traces[0].metrics)
            for e in episodes
        )
        results.append((messages(model), scores))
    assert results[0][0] == results[1][0]  # every message of every request, byte for byte
    assert (
        results[0][1]
        == results[1][1]
        == [
            (0, {"openenv_reward": 1.0}, results[0][1][0][2]),
            (1, {"openenv_reward": 1.0}, results[0][1][1][2]),
        ]
    )
    assert results[0][1][0][2]["env_steps"] == 2


# --- every hook, through vf-eval, then regenerated from a changed server ---------------------

EVERY_HOOK = """\
    import verifiers.v1 as vf

    SYSTEM_PROMPT = "Guess the five-letter word. Reply with [word] and nothing else."
    HIDDEN_FIELDS = {"metadata"}


    def render_observation(observation):
        fields = ",".join(sorted(observation))
        return f"PROMPT: {observation['prompt']}\\nFEEDBACK: {observation.get('feedback') or '-'}\\nFIELDS: {fields}"


    def build_resets(config):
        return [{"secret": "crane"}, {"secret": "crane", "max_guesses": 1}]


    @vf.reward(weight=0.5)
    async def brevity(trace) -> float:
        replies = [m.content or "" for m in trace.messages if m.role == "assistant"]
        return 1.0 if replies and all(len(r) <= 10 for r in replies) else 0.0


    @vf.metric
    def guesses(trace) -> float:
        return float(sum(1 for m in trace.messages if m.role == "assistant"))


    @vf.reward(weight=0.0)
    async def fragile(task) -> float:
        return 1.0 / (task.reset.get("max_guesses", 6) - 1)
"""
SYSTEM = "Guess the five-letter word. Reply with [word] and nothing else."


def _play_every_hook(
    pkg: Path, server: str, out: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, ScriptedChatModel]:
    monkeypatch.setenv("PYTHONPATH", str(pkg))
    model = ScriptedChatModel(Script(["[slate]", "[crane]"]))
    with serve_app(model) as model_url:
        run = run_eval("guess-openenv", model_url=str(model_url), out_dir=out, taskset={"base_url": server})
    assert run.returncode == 0, run.stderr[-4000:]
    return run, model


def _check_every_hook(run: Any, model: ScriptedChatModel, feedback_field: str, feedback_shown: str) -> None:
    by_reset = {json.dumps(unseeded(e["task"]["data"]["reset"]), sort_keys=True): e["traces"][0] for e in run.episodes}
    assert set(by_reset) == {'{"secret": "crane"}', '{"max_guesses": 1, "secret": "crane"}'}  # build_resets

    # The win: the env's reward plus the weighted custom reward, and the custom metric.
    won = by_reset['{"secret": "crane"}']
    assert won["stop_condition"] == "env_done" and not won["errors"]
    assert {k: (v["score"], v["weight"]) for k, v in won["rewards"].items()} == {
        "openenv_reward": (1.0, 1.0),
        "brevity": (1.0, 0.5),
        "fragile": (0.2, 0.0),
    }
    assert won["metrics"]["guesses"] == 2.0 and won["metrics"]["env_steps"] == 2
    assert (1.5, "env_done") in run.printed

    # A reward that raises fails its episode, recorded with the file and the hook; the run goes on.
    broken = by_reset['{"max_guesses": 1, "secret": "crane"}']
    assert len(broken["errors"]) == 1
    assert (
        "custom.py: reward fragile raised ZeroDivisionError: float division by zero" in broken["errors"][0]["message"]
    )

    # What the model read: the custom system prompt and the rendered observation.
    conversations = model.conversations()
    assert len(conversations) == 2
    for conversation in conversations.values():
        messages = conversation[-1]["messages"]
        assert messages[0] == {"role": "system", "content": SYSTEM}
        first = messages[1]["content"]
        assert first.startswith("Observation:\nPROMPT: Guess the secret 5-letter word")
        assert f"\nFEEDBACK: -\nFIELDS: {feedback_field},prompt\n" in first
        assert "metadata" not in first.split("Action schema:")[0]
    (win,) = [c for key, c in conversations.items() if "at most 6 guesses" in key]
    after_slate = win[-1]["messages"][3]["content"]
    assert after_slate.startswith(
        f"Observation:\nPROMPT: Wrong guess [slate]. 5 guesses left.\nFEEDBACK: {feedback_shown}\n"
    )


def test_every_hook_through_vf_eval_and_after_regen(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = copy_package(template, tmp_path, EVERY_HOOK)
    custom = pkg / "guess_openenv" / "custom.py"
    before = custom.read_bytes()
    with serve_app(make_wordle_app(), ready_path="/health") as server:
        run, model = _play_every_hook(pkg, str(server), tmp_path / "before", monkeypatch)
    _check_every_hook(run, model, "feedback", wordle_feedback("slate", "crane"))

    # `check` ignores custom.py: it is not in the lock.
    lock = json.loads((pkg / "openenv-gen.lock").read_text())
    assert "guess_openenv/custom.py" not in lock["files"]
    check = subprocess.run([OPENENV_GEN, "check", str(pkg)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr

    # Upstream renames `feedback` to `hints`: regen keeps custom.py byte for byte and says
    # in the changelog entry where it reads the field that is gone.
    with serve_app(make_hint_app(), ready_path="/health") as changed:
        regen = subprocess.run(
            [OPENENV_GEN, "regen", str(pkg), "--from-upstream", "--base-url", str(changed)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert regen.returncode == 0, regen.stderr
        assert "→ 1.0.0" in regen.stdout and "check custom.py, see CHANGELOG.md" in regen.stdout
        assert custom.read_bytes() == before
        entry = (pkg / "CHANGELOG.md").read_text().split("## 1.0.0", 1)[1].split("\n## ", 1)[0]
        line = 1 + before.decode().splitlines().index(
            next(ln for ln in before.decode().splitlines() if "observation.get('feedback')" in ln)
        )
        assert "**Check `guess_openenv/custom.py`**" in entry
        assert f"- line {line}: `feedback` — the observation field is gone in this version" in entry
        assert "hints" in (pkg / "guess_openenv" / "snapshot.json").read_text()

        # Played again against the changed server: every hook still in effect.
        run, model = _play_every_hook(pkg, str(changed), tmp_path / "after", monkeypatch)
    # The renderer reads `feedback`, which is gone (the changelog said so): it shows "-".
    _check_every_hook(run, model, "hints", "-")


# --- the hooks that replace the package's own defaults ------------------------------------------


def test_action_hint_and_a_task_list(wordle_server: str, tmp_path: Path) -> None:
    hinted, _ = generated_package(
        wordle_server,
        tmp_path,
        """\
        import verifiers.v1 as vf

        ACTION_HINT = "Wrap your guess in square brackets."
        RESETS = [{"secret": "crane"}, {"secret": "slate", "max_guesses": 2}]


        @vf.reward(weight=0.5)
        async def brevity(trace):
            return 1.0
        """,
    )
    bare, _ = generated_package(wordle_server, tmp_path, without_custom=True)
    tasks = list(load_env(hinted, {"base_url": wordle_server}).taskset)
    (default,) = list(load_env(bare, {"base_url": wordle_server}).taskset)
    assert [unseeded(t.data.reset) for t in tasks] == [{"secret": "crane"}, {"secret": "slate", "max_guesses": 2}]
    assert {t.data.system_prompt for t in tasks} == {
        default.data.system_prompt + "\n\nWrap your guess in square brackets."
    }
    # Beside the runtime's own (the env's summed reward, weight 1).
    assert [(fn.__name__, fn._vf_weight) for fn in tasks[0].hooks("reward")] == [
        ("brevity", 0.5),
        ("openenv_reward", 1.0),
    ]
    # The command line still wins: an explicit task list, a reward's weight.
    overrides = {
        "base_url": wordle_server,
        "resets": [{"secret": "plumb"}],
        "task": {"rewards": {"brevity": {"weight": 2.0}}},
    }
    (explicit,) = list(load_env(hinted, overrides).taskset)
    assert unseeded(explicit.data.reset) == {"secret": "plumb"}
    assert [(fn.__name__, fn._vf_weight) for fn in explicit.hooks("reward")] == [
        ("brevity", 2.0),
        ("openenv_reward", 1.0),
    ]


def test_a_renderer_that_raises_fails_only_its_episode(wordle_server: str, tmp_path: Path) -> None:
    package, module_dir = generated_package(
        wordle_server,
        tmp_path,
        """\
        RESETS = [{"secret": "crane"}, {"secret": "slate"}]


        def render_observation(observation):
            if "Wrong" in observation["prompt"]:
                return observation["board"]
            return observation["prompt"]
        """,
    )
    model = ScriptedChatModel(Script(["[crane]"]))
    with serve_app(model) as model_url:
        env = load_env(package, {"base_url": wordle_server})
        episodes = asyncio.run(run_all(env, str(model_url)))
    by_secret = {e.traces[0].task.data.reset["secret"]: e for e in episodes}
    assert by_secret["crane"].ok and by_secret["crane"].traces[0].rewards["openenv_reward"].score == 1.0
    failed = by_secret["slate"]
    assert not failed.ok
    (error,) = failed.traces[0].errors
    assert f"{module_dir / 'custom.py'}: render_observation raised KeyError: 'board'" in error.message


def test_stale_hook_notes_come_from_code_not_comments(template: Path, tmp_path: Path) -> None:
    from openenvgen.generation.on_disk import load_spec
    from openenvgen.lifecycle.changelog import stale_hooks

    old = load_spec(template)
    observation = json.loads(json.dumps(old.observation_schema))
    observation["properties"].pop("feedback")
    new = old.model_copy(update={"observation_schema": observation})
    custom = tmp_path / "custom.py"
    custom.write_text(
        '"""Renders feedback."""\n'
        '# observation["feedback"] is read below\n'
        'HIDDEN_FIELDS = {"feedback.colour", "prompt"}\n'
        "def render_observation(o):\n"
        "    return f\"{o['feedback']} {o.get('prompt')}\"\n"
    )
    gone = "`feedback` — the observation field is gone in this version (renamed or removed)"
    assert stale_hooks(custom, old, new) == [f"line 3: {gone}", f"line 5: {gone}"]
    assert stale_hooks(custom, old, old) == []
    assert stale_hooks(tmp_path / "missing.py", old, new) == []


def test_generating_over_the_package_keeps_custom_py(template: Path, wordle_server: str, tmp_path: Path) -> None:
    pkg = copy_package(template, tmp_path, "ACTION_HINT = 'mine'\n")
    proc = subprocess.run(
        [OPENENV_GEN, "guess", "--base-url", wordle_server, "--out", str(pkg)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (pkg / "guess_openenv" / "custom.py").read_text() == "ACTION_HINT = 'mine'\n"
    # The taskset's Task loads custom.py beside it (AdapterTask.__init_subclass__).
    assert "class GuessTask(AdapterTask)" in (pkg / "guess_openenv" / "taskset.py").read_text()

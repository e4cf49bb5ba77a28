"""TRL trains on a generated package: a real `GRPOTrainer` (TRL from the registry) runs
training steps on CPU with `environment_factory` set to the package's generated class
(`<module>.trl.environment_class`), against a real OpenEnv server (the Wordle fixture,
served in this process so the test reads what reached it).

The model is made in the test (`openenvgen_testsupport.tiny_model`: a tiny Qwen3, a
tokenizer trained here, TRL's bundled Qwen3 chat template), taught the prompt TRL builds:
the dataset row's prompt says which word to guess, and the model answers with a call of the
package's tool carrying that word. So TRL's own tool-call loop calls the generated method,
the env steps (counted on the server), and the rewards TRL logs are the env's scores
(compared, step by step, with the rewards the server gave). Nothing is left running: the
script closes the class when training ends (`contextlib.closing`, as the TRL page writes it),
and every session it opened is closed on the server right after.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import statistics
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from openenv.core.env_server import create_app

from openenvgen_testsupport.adapters import generate_from_server, wait_for
from openenvgen_testsupport.fixture_envs import (
    WordGuessAction,
    WordGuessEnvironment,
    WordGuessObservation,
    extract_guess,
)
from openenvgen_testsupport.servers import serve_app
from openenvgen_testsupport.tiny_model import ToolCall, cpu_grpo_config, tiny_tool_caller, tool_methods

pytestmark = [pytest.mark.rollout, pytest.mark.timeout(600)]

WORDS = {"Guess crane.": "crane", "Guess slate.": "slate"}
"""Dataset prompts and the word each teaches; the fixture's secret is "crane" (reward 1)."""
STEPS = 2
BATCH = 4
GENERATIONS = 2


class Served:
    """What reached the server: each episode (a reset) with its guesses and rewards."""

    lock = threading.Lock()
    episodes: list[dict[str, Any]] = []


class RecordingWordle(WordGuessEnvironment):
    """The Wordle fixture, recording every reset and step it serves on `Served`."""

    def reset(self, *args: Any, **kwargs: Any) -> WordGuessObservation:
        observation = super().reset(*args, **kwargs)
        self._record: dict[str, Any] = {"guesses": [], "rewards": []}
        with Served.lock:
            Served.episodes.append(self._record)
        return observation

    def close(self) -> None:
        record = getattr(self, "_record", None)
        if record is not None:
            record["closed"] = True  # its session ended (OpenEnv closes a session's env)
        super().close()

    def step(self, action: WordGuessAction, timeout_s: float | None = None, **kwargs: Any) -> WordGuessObservation:
        observation = super().step(action, timeout_s=timeout_s, **kwargs)
        with Served.lock:
            self._record["guesses"].append(extract_guess(action.message))
            self._record["rewards"].append(observation.reward or 0.0)
        return observation


def recording_app() -> FastAPI:
    return create_app(
        RecordingWordle, WordGuessAction, WordGuessObservation, env_name="wordle_fixture", max_concurrent_envs=16
    )


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_app(recording_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def environment_class(server: str, tmp_path_factory: pytest.TempPathFactory) -> type:
    package = generate_from_server("wordle", server, tmp_path_factory.mktemp("pkgs"))
    trl_module = importlib.import_module(f"{package.replace('-', '_')}.trl")
    return trl_module.environment_class(base_url=server)  # type: ignore[no-any-return]


def child_processes() -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text().split()
        children.update(int(pid) for pid in text)
    return children


def test_grpo_trains_on_the_generated_class(environment_class: type, tmp_path: Path) -> None:
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import GRPOTrainer

    children_before = child_processes()
    probe = environment_class()
    (tool,) = tool_methods(probe)
    (parameter,) = get_json_schema(tool)["function"]["parameters"]["properties"]
    # The observation TRL appends to the row's prompt is the class's own reset text.
    observation = probe.reset()
    assert isinstance(observation, str) and observation
    replies = [tool(**{parameter: f"[{word}]"}) for word in ("slate", "crane")]
    lessons = [
        (prompt + observation, ToolCall(tool.__name__, {parameter: f"[{word}]"})) for prompt, word in WORDS.items()
    ]
    tiny = tiny_tool_caller(tool_methods(probe), lessons, replies, steps=150)
    assert tiny.final_loss < 0.05, tiny.final_loss

    rows = [[{"role": "user", "content": prompt}] for prompt in WORDS] * (STEPS * BATCH // GENERATIONS // len(WORDS))
    dataset = Dataset.from_dict({"prompt": rows})
    args = cpu_grpo_config(str(tmp_path / "out"), steps=STEPS, batch=BATCH, generations=GENERATIONS)
    first_episode = len(Served.episodes)
    trainer = GRPOTrainer(
        model=tiny.model,
        processing_class=tiny.tokenizer,
        args=args,
        train_dataset=dataset,
        reward_funcs=[environment_class.metrics],  # the env's metrics in TRL's logs; adds 0 to rewards
        environment_factory=environment_class,
    )
    with contextlib.closing(environment_class):
        trainer.train()

    episodes = Served.episodes[first_episode:]
    assert len(episodes) == STEPS * BATCH, episodes
    # TRL's tool-call loop called the generated method: the env stepped, with the taught words.
    assert {guess for e in episodes for guess in e["guesses"]} == set(WORDS.values()), episodes
    # The env's scores are the rewards TRL logs: its column for the class, step by step.
    column = f"rewards/{environment_class.__name__}/mean"
    logged = [entry[column] for entry in trainer.state.log_history if column in entry]
    served = [
        statistics.mean(sum(e["rewards"]) for e in episodes[step * BATCH : (step + 1) * BATCH]) for step in range(STEPS)
    ]
    assert logged == pytest.approx(served), (logged, served)
    # The env's metrics reach TRL's logs: the steps each batch's episodes took, as served.
    logged_steps = [
        entry[f"{environment_class.__name__}/env_steps"] for entry in trainer.state.log_history if column in entry
    ]
    served_steps = [
        statistics.mean(len(e["guesses"]) for e in episodes[step * BATCH : (step + 1) * BATCH]) for step in range(STEPS)
    ]
    assert logged_steps == pytest.approx(served_steps), (logged_steps, served_steps)
    assert 0.0 < statistics.mean(served) < 1.0, served  # both words guessed: rewards differ
    # Nothing left: the sessions of episodes still open when training ended (a wrong guess
    # does not end one) were closed by the class's close, and no process was started.
    assert wait_for(lambda: all(e.get("closed") for e in episodes), timeout=10), episodes
    assert child_processes() == children_before


BAD_ROWS = [
    # (dataset prompt, reset seed, the argument the model sends or None to send none)
    ("Say it.", 0, "apple"),  # benign: reward 1.0
    ("Wrong type.", 0, 5),  # an int for a str field: refused by the action model, nothing stepped
    ("No field.", 0, None),  # the required field missing: refused likewise
    ("Bad reward.", 1, "river"),  # the server's reward is NaN: an env protocol error
    ("Hang.", 2, "stone"),  # the server never answers the step: lost after reply_timeout
]
"""The hostile server's faults by seed: 1 = reward_nan, 2 = step_hangs (`hostile_env`)."""


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[str]:
    from openenvgen_testsupport.hostile_env import make_hostile_app

    with serve_app(make_hostile_app({1: "reward_nan", 2: "step_hangs"}), ready_path="/health") as url:
        yield str(url)


def test_bad_calls_end_their_episode_and_training_goes_on(
    hostile_server: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wrong types, a missing field, a NaN reward and a hung server, each taught to the model
    for one row: each a clean outcome of its episode (no call of a tool method raises into
    TRL's step), the benign row still scores, and training runs its steps."""
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import GRPOTrainer

    from openenvgen_runtime.trl.environment import TrlEnvironment

    raised: list[BaseException] = []
    tool_call = TrlEnvironment._tool_call

    def watched(self: TrlEnvironment, action: Any, arguments: dict[str, Any]) -> str:
        try:
            return tool_call(self, action, arguments)
        except BaseException as e:
            raised.append(e)
            raise

    # TRL's tools/failure_frequency also counts the sampled model's own slips (a tool name that
    # does not exist, arguments that are no object), which never reach a method: ours are watched.
    monkeypatch.setattr(TrlEnvironment, "_tool_call", watched)

    package = generate_from_server("hostile", hostile_server, tmp_path_factory.mktemp("pkgs"))
    trl_module = importlib.import_module(f"{package.replace('-', '_')}.trl")
    environment_class = trl_module.environment_class(base_url=hostile_server, reply_timeout=5)
    probe = environment_class()
    (tool,) = tool_methods(probe)
    (parameter,) = get_json_schema(tool)["function"]["parameters"]["properties"]
    lessons, replies = [], []
    for prompt, seed, value in BAD_ROWS:
        observation = probe.reset(seed=seed)
        lessons.append((prompt + observation, ToolCall(tool.__name__, {} if value is None else {parameter: value})))
        if seed == 0:
            replies.append(tool(**({} if value is None else {parameter: value})))
    assert all(isinstance(r, str) and r for r in replies), replies
    tiny = tiny_tool_caller(tool_methods(probe), lessons, replies, steps=150)
    assert tiny.final_loss < 0.05, tiny.final_loss

    dataset = Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": p}] for p, _, _ in BAD_ROWS], "seed": [s for _, s, _ in BAD_ROWS]}
    )
    args = cpu_grpo_config(
        str(tmp_path / "out"), steps=STEPS, batch=len(BAD_ROWS) * GENERATIONS, generations=GENERATIONS
    )
    trainer = GRPOTrainer(
        model=tiny.model,
        processing_class=tiny.tokenizer,
        args=args,
        train_dataset=dataset,
        environment_factory=environment_class,
    )
    with contextlib.closing(environment_class):
        trainer.train()

    steps = [entry for entry in trainer.state.log_history if "tools/failure_frequency" in entry]
    assert trainer.state.global_step == STEPS and len(steps) == STEPS, trainer.state.log_history
    assert all(entry["tools/call_frequency"] > 0 for entry in steps), steps
    assert raised == [], raised
    column = f"rewards/{environment_class.__name__}/mean"
    # Of the five rows, only the benign one can score (1.0); the failed episodes are NaN, left out.
    assert all(0.0 <= entry[column] <= 1.0 for entry in steps), steps

"""A generated package's TRL class against real OpenEnv servers, called as TRL calls it.

TRL 1.16's `GRPOTrainer(environment_factory=Cls)` makes `Cls()` (no arguments), calls
`reset(**row)` with the dataset row, then the tool methods the model calls with the
arguments it wrote, then `get_reward()`. Each test here makes those calls itself, on the
fixture servers (in this process, so what they step is counted on the server's side), the
hostile server (a NaN reward, a hung step) and a UV launch (nothing left running).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import math
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from openenvgen_runtime.trl import EPISODE_OVER, runner
from openenvgen_testsupport.adapters import generate_from_server, marked_processes, uv_taskset, wait_for
from openenvgen_testsupport.custom_modules import generated_package
from openenvgen_testsupport.fixture_envs import WordGuessEnvironment, make_wordle_app, wordle_feedback
from openenvgen_testsupport.hostile_env import make_hostile_app
from openenvgen_testsupport.servers import serve_app


def _trl(package_id: str) -> Any:
    return importlib.import_module(package_id.replace("-", "_") + ".trl")


def _tool(env: Any) -> Any:
    """The one tool method of a typed-action env's class (named after the env), bound to `env`."""
    (name,) = [
        n
        for n, _ in inspect.getmembers(type(env), inspect.isfunction)
        if n not in ("reset", "get_reward") and n[0] != "_"
    ]
    return getattr(env, name)


@pytest.fixture
def server_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every guess the in-process Wordle fixture servers step, in order."""
    steps: list[str] = []
    step = WordGuessEnvironment.step

    def counted(self: WordGuessEnvironment, action: Any, *args: Any, **kwargs: Any) -> Any:
        steps.append(action.message)
        return step(self, action, *args, **kwargs)

    monkeypatch.setattr(WordGuessEnvironment, "step", counted)
    return steps


@pytest.fixture(scope="module")
def hostile_pkg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The hostile env's package and its server: seed 1 answers steps with a NaN reward,
    seed 2 never answers a step."""
    with serve_app(make_hostile_app({1: "reward_nan", 2: "step_hangs"}), ready_path="/health") as url:
        yield generate_from_server("hostile", str(url), tmp_path_factory.mktemp("pkgs")), str(url)


def test_a_wordle_episode_through_the_generated_class(wordle_pkg: str, server_steps: list[str]) -> None:
    with serve_app(make_wordle_app(), ready_path="/health") as url:
        cls = _trl(wordle_pkg).environment_class(base_url=str(url), resets=[{"secret": "crane"}])
        env = cls()  # as TRL makes it: no arguments, nothing started
        opening = env.reset(prompt=[{"role": "user", "content": "play"}], seed=0)
        assert opening.startswith("Observation:\n") and "Guess the secret 5-letter word" in opening
        assert "Action schema" not in opening  # the schema is the tools', as in the verifiers tools path
        wordle = _tool(env)
        first = wordle(message="[slate]")
        assert "Wrong guess [slate]" in first and "Reward for your last action: 0" in first
        last = wordle(message="[crane]")
        assert "Correct! The word was crane." in last and last.endswith(EPISODE_OVER)
        assert server_steps == ["[slate]", "[crane]"]
        assert env.get_reward() == 1.0
        # After the end: a clear message, nothing stepped.
        assert wordle(message="[slate]") == EPISODE_OVER
        assert server_steps == ["[slate]", "[crane]"]
        # The same instance plays the next rollout (TRL reuses instances across steps).
        assert "Guess the secret" in env.reset(seed=1)
        assert env.get_reward() == 0.0


CUSTOM_REWARDS = """\
    from collections.abc import Sequence

    import verifiers.v1 as vf

    from .models import WordGuessObservation


    @vf.reward(weight=0.5)
    def greens(observation: WordGuessObservation) -> float:
        return observation.feedback.count("G") / 5


    @vf.reward(weight=0.25)
    def guesses(observations: Sequence[WordGuessObservation]) -> float:
        return float(len(observations))
"""


def test_get_reward_is_the_verifiers_score_custom_rewards_included(wordle_server: str, tmp_path: Any) -> None:
    package, _ = generated_package(wordle_server, tmp_path, CUSTOM_REWARDS, stem="trlcustom")
    env = _trl(package).environment_class(base_url=wordle_server, resets=[{"secret": "crane"}])()
    env.reset(seed=0)
    _tool(env)(message="[slate]")
    assert _tool(env)(message="[crane]").endswith(EPISODE_OVER)
    # openenv_reward 1 + greens 0.5 x 1 (five greens at the end) + guesses 0.25 x 3 (reset and two steps)
    assert env.get_reward() == 1.0 + 0.5 + 0.75
    env.reset(seed=1)
    _tool(env)(message="[slate]")
    assert env.get_reward() == 0.5 * wordle_feedback("slate", "crane").count("G") / 5 + 0.25 * 2


def test_a_custom_reward_that_raises_makes_the_episode_unscorable(wordle_server: str, tmp_path: Any) -> None:
    custom = "import verifiers.v1 as vf\n\n\n@vf.reward\ndef broken() -> float:\n    raise RuntimeError('boom')\n"
    package, _ = generated_package(wordle_server, tmp_path, custom, stem="trlbroken")
    env = _trl(package).environment_class(base_url=wordle_server)()
    env.reset(seed=0)
    _tool(env)(message="[slate]")
    assert math.isnan(env.get_reward())


def test_bad_calls_get_the_verifiers_path_feedback_and_step_nothing(wordle_pkg: str, server_steps: list[str]) -> None:
    with serve_app(make_wordle_app(), ready_path="/health") as url:
        cls = _trl(wordle_pkg).environment_class(base_url=str(url), max_invalid_actions=2)
        env = cls()
        env.reset(seed=0)
        wordle = _tool(env)
        missing = wordle()
        assert missing == (
            "That reply is not a valid action: message: Field required\n"
            "Reply again with one valid action (2 retries left)."
        )
        wrong_type = wordle(message=5)
        assert "message: Input should be a valid string" in wrong_type and "(1 retry left)" in wrong_type
        assert server_steps == []
        # A valid call resets the streak; then max_invalid_actions + 1 in a row end the episode.
        assert "Wrong guess" in wordle(message="[slate]")
        wordle(message="[slate]", extra=1)
        wordle(message=None)
        ended = wordle(guess="crane")
        assert "guess: Extra inputs are not permitted" in ended and ended.endswith(EPISODE_OVER)
        assert wordle(message="[crane]") == EPISODE_OVER
        assert server_steps == ["[slate]"] and env.get_reward() == 0.0
        # The episode's metrics reach TRL's logs through the class's zero reward function.
        logged: dict[str, float] = {}
        zeros = cls.metrics(prompts=["p"], environments=[env], log_metric=logged.__setitem__)
        assert zeros == [0.0]
        assert logged[f"{cls.__name__}/env_steps"] == 1.0 and logged[f"{cls.__name__}/invalid_actions"] == 5.0


def test_unknown_reset_keys_are_refused_with_one_line(wordle_pkg: str, wordle_server: str) -> None:
    env = _trl(wordle_pkg).environment_class(base_url=wordle_server)()
    with pytest.raises(ValueError, match=r"unknown dataset column\(s\) 'answer'; a row may hold episode_id, seed") as e:
        env.reset(seed=0, answer="crane")
    assert "\n" not in str(e.value)


def test_a_nan_reward_and_a_hung_server_end_only_their_episode(hostile_pkg: tuple[str, str]) -> None:
    package, url = hostile_pkg
    cls = _trl(package).environment_class(base_url=url, reply_timeout=2)
    nan, hung, fine = cls(), cls(), cls()
    for env, seed in ((nan, 1), (hung, 2), (fine, 0)):
        assert "Observation:" in env.reset(seed=seed)
    failed = _tool(nan)(message="hello")
    assert failed.startswith("The environment failed (") and "reward" in failed and failed.endswith(EPISODE_OVER)
    assert math.isnan(nan.get_reward())  # unscorable for TRL: out of the group's baseline
    lost = _tool(hung)(message="hello")
    assert "lost the environment session" in lost and math.isnan(hung.get_reward())
    assert _tool(hung)(message="hello") == EPISODE_OVER
    # The episode beside them goes on and scores.
    assert "Observation:" in _tool(fine)(message="hello")
    assert fine.get_reward() == 0.0


def test_making_the_class_and_instances_starts_nothing(guess_pkg: str) -> None:
    marker = f"trl-{uuid.uuid4().hex}"
    cls = _trl(guess_pkg).environment_class(**uv_taskset(marker))
    cls(), cls()
    assert marked_processes(marker) == []


def test_close_leaves_nothing_running_right_after_training_however_it_ends(guess_pkg: str) -> None:
    """`with contextlib.closing(Env):` around `trainer.train()`, as the TRL page writes it:
    interrupted (Ctrl-C) here, the class's open episode is ended and its servers are gone
    when the block is left, in the training process; a later reset starts a new pool."""
    marker = f"trl-{uuid.uuid4().hex}"
    cls = _trl(guess_pkg).environment_class(**uv_taskset(marker))
    playing, idle = cls(), cls()
    with pytest.raises(KeyboardInterrupt), contextlib.closing(cls):
        playing.reset(seed=0)
        assert marked_processes(marker), "the UV server did not start"
        raise KeyboardInterrupt
    assert marked_processes(marker) == []
    assert _tool(playing)() == EPISODE_OVER and math.isnan(playing.get_reward())  # its session was closed
    assert "Observation:" in idle.reset(seed=1)
    assert marked_processes(marker)
    cls.close()
    assert marked_processes(marker) == []


@pytest.mark.parametrize("ending", ["return", "raise", "sigint", "sigterm"])
def test_nothing_is_left_running_however_training_ends(guess_pkg: str, ending: str) -> None:
    """A UV launch from a TRL class in a child process, which ends as `trainer.train()` may:
    returning, raising, interrupted (Ctrl-C) or terminated; its servers go with it."""
    marker = f"trl-{uuid.uuid4().hex}"
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        sys.path[:0] = {sys.path!r}
        from {guess_pkg.replace("-", "_")}.trl import environment_class
        env = environment_class(**{uv_taskset(marker)!r})()
        env.reset(seed=0)
        print("started", flush=True)
        if {ending!r} == "raise":
            raise RuntimeError("training failed")
        if {ending!r} in ("sigint", "sigterm"):
            time.sleep(120)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
        assert marked_processes(marker), "the UV server did not start"
        if ending in ("sigint", "sigterm"):
            os.kill(child.pid, signal.SIGINT if ending == "sigint" else signal.SIGTERM)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0 if ending != "return" else child.returncode == 0
    assert wait_for(lambda: marked_processes(marker) == [], timeout=30), f"left running: {marked_processes(marker)}"


def test_the_runner_closes_its_pools_and_can_start_again() -> None:
    closed: list[str] = []

    async def closer() -> None:
        closed.append("pool")

    async def answer() -> int:
        return 42

    assert runner.run(answer()) == 42
    runner.on_close(closer)
    runner.close()
    runner.close()  # a second close finds nothing
    assert closed == ["pool"]
    assert runner.run(answer()) == 42


def test_a_union_action_is_one_tool_per_member_with_its_bounds_enforced(tmp_path: Any) -> None:
    from transformers.utils import get_json_schema

    from openenvgen_testsupport.union_envs import make_union_app

    with serve_app(make_union_app(), ready_path="/health") as url:
        package = generate_from_server("counter", str(url), tmp_path)
        env = _trl(package).environment_class(base_url=str(url))()
        assert {"peek", "add", "submit"} <= set(dir(env))
        add = get_json_schema(env.add)["function"]
        assert add["parameters"]["required"] == ["amount"] and "kind" not in add["parameters"]["properties"]
        assert "at least 1; at most 5" in add["parameters"]["properties"]["amount"]["description"]
        assert "Reach 7" in env.reset(seed=0)
        refused = env.add(amount=9)  # a bound the schema's type cannot carry: the action model enforces it
        assert refused.startswith("That reply is not a valid action: not a valid add action: amount:")
        assert "added 3" in env.add(amount=3) and "added 4" in env.add(amount=4)
        assert '"total": 7' in env.peek()
        assert "won" in env.submit(total=7) and env.get_reward() == 1.0


def test_an_mcp_env_is_one_typed_method_per_tool(mcp_pkg: str, mcp_server: str) -> None:
    env = _trl(mcp_pkg).environment_class(base_url=mcp_server)()
    assert {"echo_message", "add", "fail"} <= set(dir(env))
    # Its reset says what to do in `metadata`, which the model never reads (as in the verifiers path).
    assert env.reset(seed=0) == "Observation:\n{}"
    assert "hello" in env.echo_message(message="hello")
    refused = env.add(a=1)  # checked against the tool's generated argument model: nothing sent
    assert refused.startswith("That reply is not a valid action: arguments for 'add': b: Field required")
    assert "40" in env.add(a=20, b=20) and env.get_reward() == 0.0
    won = env.add(a=40, b=2)
    assert won.endswith(EPISODE_OVER) and env.get_reward() == 1.0

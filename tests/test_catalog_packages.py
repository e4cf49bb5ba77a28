"""The checked-in packages for the official OpenEnv envs (generated/*), end to end.

Per catalog env: the package is checked in, installed and loadable by verifiers; its
README shows its action space, an example action and the `vf-eval` command; the example
action is valid for the generated model and for the server's own model; the replay
server (tests/support/replay_env.py, serving the recordings in tests/fixtures/recordings)
has the captured schema, metadata and tools, so generating from it live yields the
checked-in package; and one scripted
episode, played by verifiers against that replay server, ends with `env_done` and the
replayed rewards.

The rollouts run in one process through verifiers' own eval runner, all seven at once:
`vf-eval @ eval.toml` parses the file into the same `EvalConfig` and calls the same
`run_eval` (tests/test_rollout.py runs the command itself), so this is its rollout
without seven interpreter start-ups.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenvgen import catalog
from openenvgen.pipeline import resolve_spec
from openenvgen.render import LOCK_FILE, render_package
from openenvgen.spec import EnvSpec
from tests.conftest import CORPUS, ROOT
from tests.support.replay_env import RECORDINGS, Recording, Replay, load_recording, make_replay_app, wire_action
from tests.support.scripted_model import ScriptedChatModel, message_text
from tests.support.servers import serve_app

OFFICIAL = ("wordle", "echo", "connect4", "chess", "maze", "coding", "reasoning_gym")


@dataclass(frozen=True)
class Case:
    """One scripted episode: the recorded session it replays and the model's replies."""

    episode: str
    """Prefix of the recorded session's files ("" or "kwargs_")."""
    replies: list[str]
    """The recorded actions, in the reply forms a model writes (raw value, JSON, fenced)."""


def _fenced(value: Any, lang: str = "json") -> str:
    return f"```{lang}\n{json.dumps(value) if lang == 'json' else value}\n```"


CASES = {
    "wordle": Case("", ["[crane]", _fenced({"message": "[slate]"})]),
    "echo": Case(
        "",
        [
            json.dumps({"tool": "echo_message", "arguments": {"message": "hello corpus"}}),
            _fenced({"tool": "echo_with_length", "arguments": {"message": "hello"}}),
        ],
    ),
    "connect4": Case("", ['{"column": 3}']),
    "chess": Case("", ["g8h6", _fenced({"move": "e2e5"})]),
    "maze": Case("", ["3", '{"action": 1}']),
    "coding": Case(
        "",
        [_fenced("x = 6 * 7\nprint(x)", "python"), json.dumps({"code": "print(x + 1)\nimport math\nprint(math.sqrt(16))"})],
    ),
    # The session recorded with reset kwargs (dataset, config, seed, size).
    "reasoning_gym": Case("kwargs_", ["10"]),
}


def spec_of(name: str) -> EnvSpec:
    return resolve_spec(name)


def package_dir(name: str) -> Path:
    return ROOT / "generated" / spec_of(name).package


def recording_of(name: str) -> Recording:
    return load_recording(catalog.lookup(name).corpus, episode=CASES[name].episode)


def taskset_of(name: str) -> Any:
    """The installed package's taskset class, as verifiers loads it."""
    from verifiers.v1.utils.loaders import taskset_class

    return taskset_class(spec_of(name).package)


def test_every_catalog_env_has_a_checked_in_package() -> None:
    assert set(OFFICIAL) <= set(catalog.entries())
    assert set(CASES) == set(OFFICIAL)
    assert sorted(p.name for p in (ROOT / "generated").iterdir() if p.is_dir()) == sorted(
        spec_of(name).package for name in catalog.entries()
    )


@pytest.mark.parametrize("name", OFFICIAL)
def test_package_is_checked_in_and_installed(name: str) -> None:
    spec = spec_of(name)
    root = package_dir(name)
    assert json.loads((root / LOCK_FILE).read_text())["env_id"] == spec.env_id
    module = importlib.import_module(spec.module)
    assert Path(module.__file__).resolve().is_relative_to(root), f"install it: pip install -e {root}"
    from verifiers.v1.utils.loaders import taskset_config_type

    assert taskset_of(name).__module__ == f"{spec.module}.taskset"
    config = taskset_config_type(spec.package)(id=spec.package)
    assert (config.env, config.provider_kwargs) == (spec.env_id, {"app": spec.defaults.app})
    assert config.resets == [dict(r) for r in spec.defaults.resets]


@pytest.mark.parametrize("name", OFFICIAL)
def test_readme_explains_the_action_space(name: str) -> None:
    spec = spec_of(name)
    readme = (package_dir(name) / "README.md").read_text()
    assert f"vf-eval {spec.package} -m MODEL --no-push" in readme
    assert f"```json\n{json.dumps(spec.defaults.example_action, indent=2)}\n```" in readme
    assert spec.defaults.action_hint and spec.defaults.action_hint in readme
    names = [t.name for t in spec.tools or ()] or [p for p in spec.action_schema["properties"] if p != "metadata"]
    for item in names:
        assert f"| `{item}` |" in readme


@pytest.mark.parametrize("name", OFFICIAL)
def test_example_action_is_valid_for_the_generated_and_the_server_model(name: str) -> None:
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenvgen_runtime import ActionSpace

    from tests.support.corpus_models import SERVER_ACTIONS

    spec = spec_of(name)
    taskset = taskset_of(name)
    example = spec.defaults.example_action
    assert example is not None
    # Exactly what happens to a model reply: parsed, then validated by the generated models.
    space = ActionSpace(
        action_model=taskset.ACTION_MODEL,
        action_schema=spec.action_schema,
        tool_arguments=dict(taskset.TOOL_ARGUMENTS) if taskset.IS_MCP else None,
        tools=[t.model_dump() for t in spec.tools] if spec.tools else None,
    )
    action = space.parse(json.dumps(example))
    taskset.ACTION_MODEL.model_validate(action)
    if spec.is_mcp:
        assert action == {"type": "call_tool", "tool_name": example["tool"], "arguments": example["arguments"]}
        CallToolAction.model_validate(action)
    else:
        assert action == example
        SERVER_ACTIONS[catalog.lookup(name).corpus].model_validate(action)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")
def test_recordings_are_copies_of_the_corpus() -> None:
    copied = sorted(p.relative_to(RECORDINGS) for p in RECORDINGS.rglob("*.*") if p.name != "README.md")
    assert {p.parts[0] for p in copied} == {entry.corpus for entry in catalog.entries().values()}
    for rel in copied:
        assert (RECORDINGS / rel).read_bytes() == (CORPUS / rel).read_bytes(), rel


def test_catalog_follows_upstream_conventions() -> None:
    for entry in catalog.entries().values():
        # The installed package's app: `uv run --project` does not cd into the env.
        assert entry.defaults.app == f"{entry.corpus}.server.app:app"
        # Spaces are `openenv/<env dir>`; TextArena is published per game.
        expected = "openenv/wordle" if entry.corpus == "textarena_env" else f"openenv/{entry.corpus}"
        assert entry.env_id == expected
    # The reasoning_gym tasks start from the captured reset's kwargs and differ by seed.
    resets = catalog.lookup("reasoning_gym").defaults.resets
    assert resets[0] == recording_of("reasoning_gym").reset_kwargs
    assert len({r["seed"] for r in resets}) == len(resets)


# ---------------------------------------------------------------------------
# The replay servers have the captured schema
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", OFFICIAL)
def test_replay_server_speaks_like_the_capture(name: str) -> None:
    replay = make_replay_app(catalog.lookup(name).corpus, episode=CASES[name].episode)
    recording = replay.recording
    with serve_app(replay.app, ready_path="/health") as url:
        schema = httpx.get(f"{url}/schema").json()
        assert schema["action"] == recording.schema["action"]
        assert schema["observation"] == recording.schema["observation"]
        assert httpx.get(f"{url}/metadata").json() == recording.metadata
        if recording.is_mcp:
            request = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
            tools = httpx.post(f"{url}/mcp", json=request).json()["result"]["tools"]
            assert [(t["name"], t["description"], t["input_schema"]) for t in tools] == [
                (t["name"], t["description"], t["input_schema"]) for t in recording.tools or ()
            ]
        live = resolve_spec(name, base_url=str(url))
    # Generating from the live replay server gives the checked-in package: the same spec,
    # the same code and README (the snapshot keeps the server's key order, which for tool
    # schemas depends on the FastMCP version).
    assert live == spec_of(name)
    assert live.schema_sha256 == spec_of(name).schema_sha256
    expected = render_package(spec_of(name))
    for path, text in render_package(live).items():
        if not path.endswith(("snapshot.json", LOCK_FILE)):
            assert text == expected[path], path


@pytest.mark.parametrize("name", OFFICIAL)
def test_replay_server_replays_the_recorded_session(name: str) -> None:
    from openenv import GenericEnvClient

    replay = make_replay_app(catalog.lookup(name).corpus, episode=CASES[name].episode)
    recording = replay.recording

    async def play(url: str) -> list[Any]:
        client = GenericEnvClient(base_url=url)
        try:
            results = [await client.reset(**recording.reset_kwargs)]
            for step in recording.steps:
                results.append(await client.step(step.action))
            return results
        finally:
            await client.close()

    with serve_app(replay.app, ready_path="/health") as url:
        reset, *steps = asyncio.run(play(str(url)))
    if not recording.is_mcp:  # MCP results come from the real tool run
        assert reset.observation == recording.reset["observation"]
    for i, result in enumerate(steps):
        recorded = recording.steps[i].reply
        assert (result.reward, result.done) == (recorded["reward"], recording.done_at(i))
        if recording.is_mcp:
            assert result.observation["result"]["data"] == recorded["observation"]["result"]["data"]
        else:
            assert result.observation == recorded["observation"]
    assert steps[-1].done
    assert replay.log.errors == []
    assert replay.log.resets == [recording.reset_kwargs]


def test_replay_server_refuses_an_action_that_was_not_recorded() -> None:
    from openenv import GenericEnvClient

    replay = make_replay_app("chess_env")

    async def play(url: str) -> None:
        client = GenericEnvClient(base_url=url)
        try:
            await client.reset()
            await client.step({"move": "a2a4"})
        finally:
            await client.close()

    with serve_app(replay.app, ready_path="/health") as url, pytest.raises(Exception, match="not the recorded"):
        asyncio.run(play(str(url)))
    assert replay.log.errors == ["step 1: action {'move': 'a2a4'} is not the recorded {'move': 'g8h6'}"]


# ---------------------------------------------------------------------------
# Scripted episodes through verifiers
# ---------------------------------------------------------------------------


@dataclass
class Played:
    replay: Replay
    model: ScriptedChatModel
    episodes: list[Any] = field(default_factory=list)
    error: BaseException | None = None


def _eval_config(package: str, *, env_url: str, model_url: str, out_dir: Path, resets: list[dict]) -> Any:
    """The config `vf-eval @ file.toml` builds (see tests/support/rollout.py)."""
    from verifiers.v1.configs.cli.eval import EvalConfig

    return EvalConfig.model_validate(
        {
            "model": "scripted-model",
            "num_rollouts": 1,
            "max_concurrent": 4,
            "push": False,
            "rich": None,
            "output_dir": str(out_dir),
            "client": {"base_url": f"{model_url}/v1", "api_key_var": "SCRIPTED_API_KEY"},
            "env": {
                "taskset": {"id": package, "base_url": env_url, "resets": resets},
                "player": {"max_turns": 12},
            },
        }
    )


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Played]:
    """Every case's episode, all played at once by verifiers' eval runner in this process."""
    from verifiers.v1.cli.eval.runner import run_eval

    out = tmp_path_factory.mktemp("catalog-evals")
    results: dict[str, Played] = {}
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCRIPTED_API_KEY", "scripted")
        mp.setenv("NO_COLOR", "1")
        # The runner sets it when unset (run-scoped limiters); set here, it is undone on exit.
        mp.setenv("VF_RUN_ID", f"catalog-packages-{os.getpid()}")
        # verifiers' chat harness runs with uv, which must be the venv's (see pyproject).
        mp.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        configs = {}
        for name in OFFICIAL:
            replay = make_replay_app(catalog.lookup(name).corpus, episode=CASES[name].episode)
            model = ScriptedChatModel(CASES[name].replies)
            env_url = stack.enter_context(serve_app(replay.app, ready_path="/health"))
            model_url = stack.enter_context(serve_app(model))
            results[name] = Played(replay, model)
            configs[name] = _eval_config(
                spec_of(name).package,
                env_url=str(env_url),
                model_url=str(model_url),
                out_dir=out / name,
                resets=[replay.recording.reset_kwargs],
            )

        async def run_all() -> list[Any]:
            return await asyncio.gather(*(run_eval(c) for c in configs.values()), return_exceptions=True)

        for name, outcome in zip(configs, asyncio.run(run_all())):
            if isinstance(outcome, BaseException):
                results[name].error = outcome
            else:
                results[name].episodes = list(outcome)
    return results


@pytest.mark.rollout
@pytest.mark.parametrize("name", OFFICIAL)
def test_scripted_episode_earns_the_replayed_rewards(name: str, played: dict[str, Played]) -> None:
    run = played[name]
    if run.error is not None:
        raise run.error
    recording = run.replay.recording
    assert run.replay.log.errors == []
    (episode,) = run.episodes
    (trace,) = episode.traces
    assert trace.stop_condition == "env_done"
    assert trace.rewards["openenv_reward"].score == pytest.approx(recording.total_reward)
    assert trace.metrics["env_steps"] == len(recording.steps)
    assert trace.metrics["invalid_actions"] == 0
    # The env got exactly the recorded reset and actions, each typed-validated on the way.
    assert run.replay.log.resets == [recording.reset_kwargs]
    action_cls = _server_action(recording)
    assert run.replay.log.actions == [wire_action(action_cls.model_validate(s.action)) for s in recording.steps]
    # The model read each replayed observation: every field of it is in its user turn.
    assert len(run.model.requests) == len(recording.steps)
    observations = [recording.reset["observation"], *(s.reply["observation"] for s in recording.steps)]
    for request, observation in zip(run.model.requests, observations):
        user = [m for m in request["messages"] if m["role"] == "user"][-1]
        text = message_text(user["content"])
        for key in observation:
            assert f'"{key}"' in text, (key, text[:500])


def _server_action(recording: Recording) -> Any:
    from openenv.core.env_server.mcp_types import CallToolAction

    from tests.support.corpus_models import SERVER_ACTIONS

    return CallToolAction if recording.is_mcp else SERVER_ACTIONS[recording.corpus]

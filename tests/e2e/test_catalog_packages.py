"""The checked-in packages for the official OpenEnv envs (generated/*), end to end.

Data-driven over the catalog (generator/openenvgen/catalog/data/catalog.toml): per env, the
package is checked in, installed and loadable by verifiers; its README shows its action
space, an example action and the `vf-eval` command; the example action is valid for the
generated model and for the captured server schema; the replay server
(openenvgen_testsupport.replay_env, serving the captures `openenv-gen capture` wrote into
tests/fixtures/captures) has the captured schema, metadata and tools, so generating from
it live yields the checked-in package; and one scripted episode, played by verifiers
against that replay server, ends with `env_done` and the replayed rewards. The upstream
envs that cannot run here are listed in the catalog's `[unavailable]` table with the
reason, and the catalog envs that cannot play an episode here carry a `no_episode` reason:
neither is a test case that skips; both are listed once in the test summary (SUMMARY).

Adding an env is data only: its `[envs.NAME]` entry in catalog.toml, its recording, its
package in generated/ and, if a model writes its actions in another form, a REPLY_FORMS
line. Every parametrised test below picks it up from CATALOG / PLAYABLE.

The rollouts run in one process through verifiers' own eval runner, a few at a time:
`vf-eval @ eval.toml` parses the file into the same `EvalConfig` and calls the same
`run_eval` (tests/e2e/test_rollout.py runs the command itself), so this is its rollout
without one interpreter start-up per env.
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
import jsonschema
import pytest

from openenvgen import catalog
from openenvgen.catalog.reader import read_catalog
from openenvgen.generation.package import resolve_spec
from openenvgen.generation.render import LOCK_FILE, render_package
from openenvgen.spec import EnvSpec
from openenvgen_schemas.normalise import union_members
from openenvgen_testsupport.paths import ROOT
from openenvgen_testsupport.replay_env import (
    CAPTURES,
    Recording,
    Replay,
    catalog_action,
    load_recording,
    make_replay_app,
    server_action_class,
    wire_action,
)
from openenvgen_testsupport.scripted_model import ScriptedChatModel, message_text
from openenvgen_testsupport.servers import serve_app

CATALOG = tuple(catalog.entries())
CAPTURE_INDEX = json.loads((CAPTURES / "capture.json").read_text("utf-8"))
_RAW = read_catalog()
UNAVAILABLE: dict[str, str] = _RAW["unavailable"]
NO_EPISODE: dict[str, str] = {
    name: entry["no_episode"] for name, entry in _RAW["envs"].items() if "no_episode" in entry
}
"""Catalog envs whose episode cannot be played where they are captured, with the reason."""
PLAYABLE = tuple(name for name in CATALOG if name not in NO_EPISODE)
SUMMARY = (
    f"catalog envs without an offline episode here: {', '.join(sorted(NO_EPISODE))} "
    "(each one's reason: `no_episode` in generator/openenvgen/catalog/data/catalog.toml)",
    f"upstream envs not in the catalog (cannot run here): {', '.join(sorted(UNAVAILABLE))} "
    "(see the [unavailable] table of generator/openenvgen/catalog/data/catalog.toml)",
)
"""Lines for the terminal summary (tests/conftest.py prints every collected module's SUMMARY)."""
ROLLOUTS_AT_ONCE = 6
"""Scripted episodes played concurrently: each runs verifiers' chat harness process."""


def _fenced(value: Any, lang: str = "json") -> str:
    return f"```{lang}\n{json.dumps(value) if lang == 'json' else value}\n```"


# Reply forms a model writes other than plain JSON, per env and step: the raw value of a
# single-field action, fenced JSON, fenced code. Every other step is the action as JSON.
REPLY_FORMS: dict[str, dict[int, Any]] = {
    "wordle": {0: lambda a: a["message"], 1: _fenced},
    "chess": {0: lambda a: a["move"], 1: _fenced},
    "maze": {0: lambda a: str(a["action"])},
    "coding": {0: lambda a: _fenced(a["code"], "python")},
    "echo": {1: _fenced},
    "connect4": {0: _fenced},
    "openspiel": {1: _fenced},
}


def replies_of(name: str, recording: Recording) -> list[str]:
    """The scripted model's replies: the recorded actions, in the forms models write."""
    forms = REPLY_FORMS.get(name, {})
    replies = []
    for i, step in enumerate(recording.steps):
        action = catalog_action(recording, step.action)
        replies.append(forms[i](action) if i in forms else json.dumps(action))
    return replies


def spec_of(name: str) -> EnvSpec:
    return resolve_spec(name)


def package_dir(name: str) -> Path:
    return ROOT / "generated" / spec_of(name).package


def recording_of(name: str) -> Recording:
    return load_recording(catalog.lookup(name).env_folder)


def taskset_of(name: str) -> Any:
    """The installed package's taskset class, as verifiers loads it."""
    from verifiers.v1.utils.loaders import taskset_class

    return taskset_class(spec_of(name).package)


def test_every_catalog_env_has_a_checked_in_package() -> None:
    assert len(CATALOG) >= 25
    packages = (p.name for p in (ROOT / "generated").iterdir() if (p / "pyproject.toml").is_file())
    assert sorted(packages) == sorted(spec_of(name).package for name in CATALOG)


def test_every_captured_upstream_env_is_in_the_catalog_or_listed_as_unavailable() -> None:
    in_catalog = {entry.env_folder for entry in catalog.entries().values()}
    captured, failed = set(CAPTURE_INDEX["captured"]), set(CAPTURE_INDEX["failed"])
    assert in_catalog <= captured
    # What did not start, and what started but cannot make a package: each with its reason.
    assert failed | (captured - in_catalog) == set(UNAVAILABLE)
    assert not in_catalog & set(UNAVAILABLE)
    # Every recorded env comes from the commit the catalog names.
    source = _RAW["source"]
    assert (source["repo"], source["commit"]) == (CAPTURE_INDEX["repo"], CAPTURE_INDEX["commit"])
    for env_folder in in_catalog:
        recorded = json.loads((CAPTURES / env_folder / "source.json").read_text("utf-8"))
        assert recorded["commit"] == source["commit"], env_folder


def test_every_unavailable_upstream_env_has_a_reason_and_no_package() -> None:
    in_catalog = {entry.env_folder for entry in catalog.entries().values()}
    for env_dir, reason in UNAVAILABLE.items():
        assert isinstance(reason, str) and len(reason.split()) >= 3, env_dir
        assert env_dir not in in_catalog, env_dir


@pytest.mark.parametrize("name", CATALOG)
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


@pytest.mark.parametrize("name", CATALOG)
def test_readme_explains_the_action_space(name: str) -> None:
    spec = spec_of(name)
    readme = (package_dir(name) / "README.md").read_text()
    assert f"vf-eval {spec.package} -m MODEL --no-push" in readme
    assert f"```json\n{json.dumps(spec.defaults.example_action, indent=2)}\n```" in readme
    # As Markdown shows it: angle brackets are escaped (DIPG's hint has <|channel|> tags).
    hint = spec.defaults.action_hint
    assert hint and hint.replace("<", "&lt;").replace(">", "&gt;") in readme
    # Its tools, else its fields, else (a union action) its members' keys.
    members = union_members(spec.action_schema) or ()
    names = (
        [t.name for t in spec.tools or ()]
        or [p for p in spec.action_schema.get("properties", {}) if p != "metadata"]
        or [m.key for m in members]
    )
    assert names, name
    for item in names:
        assert f"| `{item}` |" in readme


@pytest.mark.parametrize("name", CATALOG)
def test_example_action_is_valid_for_the_generated_and_the_server_model(name: str) -> None:
    from openenv.core.env_server.mcp_types import CallToolAction

    spec = spec_of(name)
    taskset = taskset_of(name)
    example = spec.defaults.example_action
    assert example is not None
    # Exactly what happens to a model reply: parsed, then validated by the generated models
    # (an MCP union's by the models of its unlisted tools: agent_world_model's verify).
    space = taskset.space_for(spec.action_schema, [t.model_dump() for t in spec.tools] if spec.tools else None)
    action = space.parse(json.dumps(example))
    taskset.ACTION_MODEL.model_validate(action)
    if spec.is_mcp:
        assert action == {"type": "call_tool", "tool_name": example["tool"], "arguments": example["arguments"]}
        CallToolAction.model_validate(action)
        tool = next(t for t in spec.tools or () if t.name == example["tool"])
        jsonschema.validate(example["arguments"], tool.input_schema)
    else:
        assert action == example
        # The upstream server's model: its captured JSON schema.
        server_action_class(recording_of(name)).model_validate(action)


def test_captured_episode_is_the_catalogs() -> None:
    """The capture sent each env its catalog reset and episode (default: the example action)."""
    assert len(PLAYABLE) >= 14
    for name, entry in catalog.entries().items():
        recording = recording_of(name)
        if name in NO_EPISODE:
            assert recording.steps == (), name
            continue
        assert recording.reset_kwargs == dict(entry.defaults.resets[0]), name
        episode = _RAW["envs"][name].get("episode") or [entry.defaults.example_action]
        assert [catalog_action(recording, s.action) for s in recording.steps] == episode, name


def test_envs_without_an_episode_here_are_made_from_their_captured_schema() -> None:
    """Each package is made from the captured /schema; its episode is not played, and why."""
    assert NO_EPISODE and not set(NO_EPISODE) & set(PLAYABLE)
    for name, reason in NO_EPISODE.items():
        recording = recording_of(name)
        assert catalog.lookup(name).interface().schema_["action"] == recording.schema["action"], name
        assert recording.steps == (), name
        assert isinstance(reason, str) and len(reason.split()) >= 3, name


def test_catalog_follows_upstream_conventions() -> None:
    for entry in catalog.entries().values():
        # The installed package's app: `uv run --project` does not cd into the env.
        assert entry.defaults.app == f"{entry.env_folder}.server.app:app"
        assert json.loads((CAPTURES / entry.env_folder / "source.json").read_text("utf-8"))["app"] == entry.defaults.app
        # Spaces are `openenv/<env dir>`; TextArena is published per game.
        expected = "openenv/wordle" if entry.env_folder == "textarena_env" else f"openenv/{entry.env_folder}"
        assert entry.env_id == expected
    # The reasoning_gym tasks start from the captured reset's kwargs and differ by seed.
    resets = catalog.lookup("reasoning_gym").defaults.resets
    assert resets[0] == recording_of("reasoning_gym").reset_kwargs
    assert len({r["seed"] for r in resets}) == len(resets)


# ---------------------------------------------------------------------------
# The replay servers have the captured schema
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CATALOG)
def test_replay_server_speaks_like_the_capture(name: str) -> None:
    replay = make_replay_app(catalog.lookup(name).env_folder)
    recording = replay.recording
    with serve_app(replay.app, ready_path="/health") as url:
        schema = httpx.get(f"{url}/schema").json()
        assert schema["action"] == recording.schema["action"]
        assert schema["observation"] == recording.schema["observation"]
        if recording.metadata is None:  # it failed where it was captured, as here
            assert httpx.get(f"{url}/metadata").status_code == 500
        else:
            assert httpx.get(f"{url}/metadata").json() == recording.metadata
        if recording.is_mcp:
            request = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
            tools = httpx.post(f"{url}/mcp", json=request).json()["result"]["tools"]
            assert [(t["name"], t["description"], t["input_schema"]) for t in tools] == [
                (t["name"], t["description"], t["input_schema"]) for t in recording.tools or ()
            ]
        if recording.metadata is None:  # generating needs /metadata: read the saved /schema
            live = resolve_spec(name, schema_file=CAPTURES / recording.env_folder / "schema.json")
        else:
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


@pytest.mark.parametrize("name", PLAYABLE)
def test_replay_server_replays_the_recorded_session(name: str) -> None:
    from openenv import GenericEnvClient

    replay = make_replay_app(catalog.lookup(name).env_folder)
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
    assert reset.observation == recording.reset["observation"]
    for i, result in enumerate(steps):
        recorded = recording.steps[i].reply
        assert (result.reward, result.done) == (recorded["reward"], recording.done_at(i))
        assert result.observation == recorded["observation"]
    assert steps[-1].done
    assert replay.log.errors == []
    assert replay.log.resets == [recording.reset_kwargs]


def test_replay_server_refuses_an_action_that_was_not_recorded() -> None:
    from openenv import GenericEnvClient

    replay = make_replay_app("chess_env")
    recorded = replay.recording.steps[0].action["move"]
    assert recorded != "a2a4"

    async def play(url: str) -> None:
        client = GenericEnvClient(base_url=url)
        try:
            await client.reset()
            await client.step({"move": "a2a4"})
        finally:
            await client.close()

    refused = pytest.raises(RuntimeError, match=r"^Server error: step 1: .* is not the recorded")
    with serve_app(replay.app, ready_path="/health") as url, refused:
        asyncio.run(play(str(url)))
    assert replay.log.errors == [f"step 1: action {{'move': 'a2a4'}} is not the recorded {{'move': '{recorded}'}}"]


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
    """The config `vf-eval @ file.toml` builds (see openenvgen_testsupport.rollout)."""
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
        for name in PLAYABLE:
            replay = make_replay_app(catalog.lookup(name).env_folder)
            model = ScriptedChatModel(replies_of(name, replay.recording))
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
            slots = asyncio.Semaphore(ROLLOUTS_AT_ONCE)

            async def run_one(config: Any) -> Any:
                async with slots:
                    return await run_eval(config)

            return await asyncio.gather(*(run_one(c) for c in configs.values()), return_exceptions=True)

        for name, outcome in zip(configs, asyncio.run(run_all()), strict=True):
            if isinstance(outcome, BaseException):
                results[name].error = outcome
            else:
                results[name].episodes = list(outcome)
    return results


@pytest.mark.rollout
@pytest.mark.parametrize("name", PLAYABLE)
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
    # The env got exactly the recorded reset (seeded by the runtime: task 0 gets seed 0
    # unless its kwargs set one) and actions, each typed-validated on the way.
    assert run.replay.log.resets == [{"seed": 0, **recording.reset_kwargs}]
    action_cls = server_action_class(recording)
    assert run.replay.log.actions == [wire_action(action_cls.model_validate(s.action)) for s in recording.steps]
    # The model read each replayed observation: every field of it is in its user turn,
    # but the ones the runtime never shows (`metadata` may carry the answer), which shows
    # only the metadata keys the package names (`shown_metadata`).
    from openenvgen_runtime.turn.observations import ALWAYS_HIDDEN

    shown_metadata = set(catalog.entries()[name].defaults.shown_metadata)

    assert len(run.model.requests) == len(recording.steps)
    observations = [recording.reset["observation"], *(s.reply["observation"] for s in recording.steps)]
    # The observation that ends the episode is never shown: one request fewer than observations.
    for request, observation in zip(run.model.requests, observations, strict=False):
        user = [m for m in request["messages"] if m["role"] == "user"][-1]
        text = message_text(user["content"])
        for key in observation:
            shown = key not in ALWAYS_HIDDEN or bool(shown_metadata & set(observation.get("metadata") or {}))
            assert shown == (f'"{key}"' in text), (key, text[:500])
        for key, value in (observation.get("metadata") or {}).items():
            if key in shown_metadata:
                assert f'"{key}": {json.dumps(value, ensure_ascii=False)}' in text, (key, text[:500])

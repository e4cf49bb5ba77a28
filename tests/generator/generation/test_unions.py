"""Union actions (a `oneOf`/`anyOf` of object models) and typed reset observations.

Against upstream's own union (agent_world_model_env's recorded `/schema`, and the schema
Pydantic writes for the same union of openenv's MCP actions) and a real OpenEnv server
whose action is a discriminated union (openenvgen_testsupport.union_envs, made with
`create_app`): the generated model's JSON schema equals the server's, it validates like
the server's union, an invalid reply is told against its closest member, each member is
one function tool, episodes play in text and tools formats, and the model diff, `check
--upstream`, `regen` and the drift guard rate member changes by semver. A server's
`reset_observation` is kept in the snapshot and its drift reported like any schema part.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from openenvgen import sources
from openenvgen.generation.codegen import combined_schema
from openenvgen.generation.render import render_package, render_snapshot, spec_from_snapshot
from openenvgen.spec import ServerInterface, build_spec
from openenvgen_schemas.modeldiff import ModelDiff, diff_actions, diff_specs
from openenvgen_schemas.normalise import equivalent, inline_refs
from openenvgen_testsupport.adapters import generate_from_server, load_env, outcome, run_all
from openenvgen_testsupport.generating import file_tree, gen, import_generated
from openenvgen_testsupport.paths import FIXTURES, HOSTILE
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel, ToolCalls
from openenvgen_testsupport.servers import serve_app

AWM = FIXTURES / "captures" / "agent_world_model_env" / "schema.json"


def _awm_schema() -> dict[str, Any]:
    return json.loads(AWM.read_text())


def _union_model(spec, tmp_path_factory) -> type[BaseModel]:  # type: ignore[no-untyped-def]
    module = import_generated(spec, tmp_path_factory.mktemp(spec.name))
    _, action_class, _ = combined_schema(spec)
    return getattr(module, action_class)


def payloads(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid actions drawn from the schema, each also mutated one way (a key dropped, a
    wrong value, an unknown key, another member's tag)."""
    valid = from_schema(inline_refs({k: v for k, v in schema.items() if k != "discriminator"}))
    wrong = st.sampled_from([None, "", "x", 0, -1, 6, 1.5, True, [], {}, "add", "peek", "submit"])

    @st.composite
    def mutated(draw: st.DrawFn) -> Any:
        payload = dict(draw(valid))
        how = draw(st.sampled_from(["drop", "retype", "extra"]))
        if how == "drop" and payload:
            payload.pop(draw(st.sampled_from(sorted(payload))))
        elif how == "retype" and payload:
            payload[draw(st.sampled_from(sorted(payload)))] = draw(wrong)
        else:
            payload[draw(st.sampled_from(["amount", "total", "kind", "zz"]))] = draw(wrong)
        return payload

    return st.one_of(valid, mutated())


def _accepts(model: Any, payload: Any) -> bool:
    try:
        model.validate_python(payload) if isinstance(model, TypeAdapter) else model.model_validate(payload)
    except ValidationError:
        return False
    return True


@pytest.fixture(scope="module")
def union_server() -> Iterator[str]:
    from openenvgen_testsupport.union_envs import make_union_app

    with serve_app(make_union_app(), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def reset_server() -> Iterator[str]:
    from openenvgen_testsupport.union_envs import make_union_app

    with serve_app(make_union_app(reset_observation=True), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def union_pkg(union_server: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return generate_from_server("counter", union_server, tmp_path_factory.mktemp("pkgs"))


# --- the generated union equals the server's -----------------------------------------------


def test_upstream_awm_union_generates_a_discriminated_root_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction

    schema = _awm_schema()
    spec = build_spec(ServerInterface(schema=schema), name="agent_world_model", env_id="openenv/agent_world_model_env")
    assert spec.is_union and not spec.is_mcp
    files = render_package(spec)
    source = files["agent_world_model_openenv/models.py"]
    readme = files["README.md"]
    assert "| `list_tools` | `ListToolsAction` |  |" in readme
    assert "| `call_tool` | `CallToolAction` | tool_name, arguments? |" in readme
    assert "class AgentWorldModelAction(RootModel[ListToolsAction | CallToolAction]):" in source
    assert 'discriminator="type"' in source
    model = _union_model(spec, tmp_path_factory)
    assert equivalent(model.model_json_schema(), schema["action"])
    # The same union over this machine's openenv (0.4.1) models, as its /schema would write it.
    server = TypeAdapter(Annotated[ListToolsAction | CallToolAction, Field(discriminator="type")])
    live = build_spec(ServerInterface(schema={**schema, "action": server.json_schema()}), name="awm", env_id="t/awm")
    assert equivalent(_union_model(live, tmp_path_factory).model_json_schema(), server.json_schema())
    for payload, ok in [
        ({"type": "list_tools"}, True),
        ({"type": "call_tool", "tool_name": "x", "arguments": {"a": 1}}, True),
        ({"type": "call_tool"}, False),
        ({"type": "nope"}, False),
        ({"tool_name": "x"}, False),
        ({"type": "list_tools", "tool_name": "x"}, False),
    ]:
        assert _accepts(model, payload) is ok, payload


def test_live_union_server_schema_and_validation_agree(
    union_server: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from openenvgen_testsupport.union_envs import CounterUnion

    spec = build_spec(sources.from_server(union_server), name="counter", env_id="test/counter")
    assert spec.is_union
    model = _union_model(spec, tmp_path_factory)
    assert equivalent(model.model_json_schema(), spec.action_schema)
    server = TypeAdapter(CounterUnion)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(payloads(spec.action_schema))
    def agree(payload: Any) -> None:
        assert _accepts(model, payload) == _accepts(server, payload), payload

    agree()


def test_a_plain_anyof_union_of_models_generates_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Without a discriminator (Pydantic's smart union: `anyOf`), and members written in place."""
    from openenvgen_testsupport.union_envs import AddAction, SubmitAction

    adapter = TypeAdapter(AddAction | SubmitAction)
    schema = adapter.json_schema()
    assert "anyOf" in schema and "discriminator" not in schema
    spec = build_spec(
        ServerInterface(schema={"action": schema, "observation": {"type": "object", "properties": {}}}),
        name="plain",
        env_id="t/plain",
    )
    model = _union_model(spec, tmp_path_factory)
    assert equivalent(model.model_json_schema(), schema)
    for payload in ({"amount": 3}, {"kind": "submit", "total": 4}, {"amount": 9}, {"total": "x"}, {}):
        assert _accepts(model, payload) == _accepts(adapter, payload), payload


# --- replies: validation, closest member, tools ----------------------------------------------


@pytest.fixture(scope="module")
def counter_space(union_server: str, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from openenvgen_runtime.turn.actions import ActionSpace

    spec = build_spec(sources.from_server(union_server), name="counter", env_id="test/counter")
    return ActionSpace(action_model=_union_model(spec, tmp_path_factory), action_schema=spec.action_schema)


def test_replies_validate_against_the_union(counter_space) -> None:  # type: ignore[no-untyped-def]
    assert counter_space.parse('{"kind": "add", "amount": 2}') == {"kind": "add", "amount": 2}
    assert counter_space.parse('```json\n{"kind": "peek"}\n```') == {"kind": "peek"}
    assert counter_space.parse('{"kind": "submit", "total": 7}') == {"kind": "submit", "total": 7}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            '{"kind": "add", "amount": 9}',
            'closest to add (kind = "add" selects it): amount: Input should be less than or equal to 5',
        ),
        ('{"kind": "submit"}', 'closest to submit (kind = "submit" selects it): total: Field required'),
        (
            '{"kind": "jump", "amount": 2}',
            'closest to add (kind is "jump", not one of "peek", "add", "submit"): kind: Input should be \'add\'',
        ),
        ('{"amount": 2}', 'not one of the actions peek, add, submit; closest to add: add "kind": "add"'),
        (
            '{"total": "seven", "kind": "submit"}',
            'closest to submit (kind = "submit" selects it): total: Input should be a valid integer',
        ),
        ("add two", "reply with one JSON object"),
    ],
)
def test_an_invalid_reply_names_its_closest_member_and_why(counter_space, reply: str, message: str) -> None:  # type: ignore[no-untyped-def]
    from openenvgen_runtime.turn.actions import InvalidAction

    with pytest.raises(InvalidAction) as info:
        counter_space.parse(reply)
    assert message in str(info.value)


def test_without_a_discriminator_the_closest_member_has_the_fewest_errors(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction

    def member(title: str, **props: Any) -> dict[str, Any]:
        return {
            "type": "object",
            "title": title,
            "properties": props,
            "required": sorted(props),
            "additionalProperties": False,
        }

    schema = {
        "anyOf": [
            member("Move", dx={"type": "integer"}, dy={"type": "integer"}),
            member("Say", text={"type": "string"}),
        ]
    }
    spec = build_spec(
        ServerInterface(schema={"action": schema, "observation": {"type": "object", "properties": {}}}),
        name="nodisc",
        env_id="t/n",
    )
    space = ActionSpace(action_model=_union_model(spec, tmp_path_factory), action_schema=spec.action_schema)
    assert space.parse('{"dx": 1, "dy": 2}') == {"dx": 1, "dy": 2}
    with pytest.raises(InvalidAction) as info:
        space.parse('{"dx": 1, "dy": "up"}')
    assert str(info.value) == (
        "not one of the actions move, say; closest to move (fewest errors of move, say): "
        "dy: Input should be a valid integer, unable to parse string as an integer"
    )


def test_each_member_is_one_function_tool(counter_space) -> None:  # type: ignore[no-untyped-def]
    from openenvgen_runtime.turn.actions import InvalidAction, ToolCallRequest
    from openenvgen_runtime.turn.prompts import system_prompt

    tools = counter_space.function_tools
    assert [t["function"]["name"] for t in tools] == ["peek", "add", "submit"]
    add = tools[1]["function"]
    assert add["description"] == "Add 1 to 5 to the running total."
    # The tool names the member: its discriminator is implied, not a parameter.
    assert set(add["parameters"]["properties"]) == {"amount"} and add["parameters"]["required"] == ["amount"]
    assert counter_space.parse_tool_calls([ToolCallRequest("1", "add", '{"amount": 3}')]) == {
        "kind": "add",
        "amount": 3,
    }
    assert counter_space.parse_tool_calls([ToolCallRequest("1", "peek", "{}")]) == {"kind": "peek"}
    with pytest.raises(InvalidAction, match="unknown tool 'act'; call one of: peek, add, submit"):
        counter_space.parse_tool_calls([ToolCallRequest("1", "act", "{}")])
    with pytest.raises(
        InvalidAction, match="not a valid add action: amount: Input should be greater than or equal to 1"
    ):
        counter_space.parse_tool_calls([ToolCallRequest("1", "add", '{"amount": 0}')])
    assert "one of the tools" in system_prompt(counter_space, tools=True)
    assert "(peek, add, submit)" in system_prompt(counter_space)
    # The model is shown the union without the base `metadata` field anywhere.
    assert "metadata" not in json.dumps(counter_space.prompt_schema())


# --- episodes through the runtime, end to end -----------------------------------------------


def test_a_union_env_plays_in_text_format(union_pkg: str, union_server: str) -> None:
    script = Script(
        [
            '{"kind": "add", "amount": 5}',
            '{"kind": "add", "amount": 9}',  # invalid: more than 5
            '{"kind": "add", "amount": 2}',
            '{"kind": "peek"}',
            '{"kind": "submit", "total": 7}',
        ]
    )
    model = ScriptedChatModel(script)
    with serve_app(model) as model_url:
        env = load_env(union_pkg, {"base_url": union_server, "resets": [{"target": 7}]})
        (episode,) = asyncio.run(run_all(env, str(model_url)))
    assert outcome(episode) == (True, "env_done", 1.0)
    trace = episode.traces[0]
    assert trace.metrics["invalid_actions"] == 1 and trace.metrics["env_steps"] == 4
    first = model.requests[0]["messages"]
    assert "one of several kinds (peek, add, submit)" in first[0]["content"]
    assert '"total": 0' in first[-1]["content"] and "Action schema:" in first[-1]["content"]
    retry = model.requests[2]["messages"][-1]["content"]
    assert retry.startswith(
        'That reply is not a valid action: closest to add (kind = "add" selects it): '
        "amount: Input should be less than or equal to 5"
    )


def test_a_union_env_plays_through_tool_calls(union_pkg: str, union_server: str) -> None:
    script = Script(
        [
            ToolCalls((("add", '{"amount": 4}'),)),
            ToolCalls((("add", '{"amount": "four"}'),)),  # invalid
            ToolCalls((("act", '{"amount": 3}'),)),  # unknown tool
            ToolCalls((("add", '{"amount": 3}'),)),
            ToolCalls((("submit", '{"total": 7}'),)),
        ]
    )
    model = ScriptedChatModel(script)
    with serve_app(model) as model_url:
        env = load_env(union_pkg, {"base_url": union_server, "resets": [{"target": 7}], "action_format": "tools"})
        (episode,) = asyncio.run(run_all(env, str(model_url)))
    assert outcome(episode) == (True, "env_done", 1.0)
    trace = episode.traces[0]
    assert trace.metrics["invalid_actions"] == 2 and trace.metrics["env_steps"] == 3
    first = model.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["peek", "add", "submit"]
    results = [[m for m in body["messages"] if m["role"] == "tool"] for body in model.requests]
    assert "not a valid add action: amount: Input should be a valid integer" in results[2][-1]["content"]
    assert "unknown tool 'act'; call one of: peek, add, submit" in results[3][-1]["content"]


# --- model diff, check --upstream, regen, drift guard ---------------------------------------


def _counter_capture(url: str) -> dict[str, Any]:
    return sources.from_server(url).model_dump(by_alias=True, mode="json")


def _drop_member(capture: dict[str, Any], name: str) -> None:
    action = capture["schema"]["action"]
    action["oneOf"] = [b for b in action["oneOf"] if b["$ref"] != f"#/$defs/{name}"]
    action["discriminator"]["mapping"] = {
        k: v for k, v in action["discriminator"]["mapping"].items() if not v.endswith(f"/{name}")
    }
    del action["$defs"][name]


def test_member_changes_are_rated_by_semver(union_server: str) -> None:
    action = _counter_capture(union_server)["schema"]["action"]
    fewer = {"schema": {"action": copy.deepcopy(action)}}
    _drop_member(fewer, "PeekAction")
    fewer = fewer["schema"]["action"]

    def impact(old: dict, new: dict) -> tuple[str | None, list[str]]:
        d = ModelDiff(tuple(diff_actions(old, new)))
        return d.impact, d.lines()

    assert impact(action, action) == (None, [])
    assert impact(action, fewer) == ("major", ["major  action[peek]: union member removed"])
    assert impact(fewer, action) == ("minor", ["minor  action[peek]: union member added"])
    stricter = copy.deepcopy(action)
    stricter["$defs"]["AddAction"]["properties"]["amount"]["maximum"] = 3
    assert impact(action, stricter) == ("major", ["major  action[add].amount: constraint narrowed: maximum 5 → 3"])
    looser = copy.deepcopy(action)
    looser["$defs"]["SubmitAction"]["properties"]["note"] = {"type": "string", "default": ""}
    assert impact(action, looser) == ("minor", ["minor  action[submit].note: optional field added (string)"])
    # A plain object action that becomes a union with it as one member: a member added.
    add = {**action["$defs"]["AddAction"]}
    assert impact(add, action)[0] == "minor"
    assert impact(action, add)[0] == "major"
    renamed = json.loads(json.dumps(action).replace("SubmitAction", "FinishAction"))
    assert impact(action, renamed) == (None, [])  # paired by the discriminator, not the class name


def test_check_upstream_and_regen_understand_unions(union_pkg: str, union_server: str, tmp_path: Path) -> None:
    import shutil
    import sys

    pkg_dir = next(Path(p) for p in sys.path if Path(p).name == union_pkg.removesuffix("-openenv").replace("-", "_"))
    pkg = tmp_path / "counter-openenv"
    shutil.copytree(pkg_dir, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    capture = _counter_capture(union_server)
    assert gen("check", str(pkg), "--upstream", "--base-url", union_server).returncode == 0
    fewer = copy.deepcopy(capture)
    _drop_member(fewer, "PeekAction")
    (tmp_path / "fewer.json").write_text(json.dumps(fewer))
    result = gen("check", str(pkg), "--upstream", "--schema-file", str(tmp_path / "fewer.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "upstream drift (major; regen would make 0.1.0 → 1.0.0)" in result.stdout
    assert "action[peek]: union member removed" in result.stdout
    # Regenerate from the smaller union (major), then back to the full one (a member added: minor).
    assert gen("regen", str(pkg), "--from-upstream", "--schema-file", str(tmp_path / "fewer.json")).returncode == 0
    assert json.loads(next(pkg.glob("*/snapshot.json")).read_text())["package_version"] == "1.0.0"
    result = gen("regen", str(pkg), "--from-upstream", "--base-url", union_server)
    assert result.returncode == 0, result.stderr
    assert "1.0.0 → 1.1.0 (minor: 1 model change)" in result.stdout
    assert "**minor** `action[peek]`: union member added" in (pkg / "CHANGELOG.md").read_text()
    assert gen("check", str(pkg)).returncode == 0


def test_a_hostile_union_leaves_an_existing_package_untouched(union_pkg: str, tmp_path: Path) -> None:
    import shutil
    import sys

    pkg_dir = next(Path(p) for p in sys.path if Path(p).name == union_pkg.removesuffix("-openenv").replace("-", "_"))
    pkg = tmp_path / "counter-openenv"
    shutil.copytree(pkg_dir, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    before = file_tree(pkg)
    bad = HOSTILE / "union_discriminator_missing_property.json"
    result = gen("regen", str(pkg), "--from-upstream", "--schema-file", str(bad))
    assert result.returncode == 65 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "discriminator names 'kind', a property union member 2 (Down) does not have" in result.stderr
    assert file_tree(pkg) == before


def test_the_drift_guard_rates_union_members(union_server: str, tmp_path: Path, caplog: Any) -> None:
    from openenvgen_runtime.hooks.drift import DriftError, check_drift
    from openenvgen_testsupport.drift import pool_servers, write_snapshot

    live = pool_servers([union_server], mcp=False)
    check_drift(live, write_snapshot(union_server, tmp_path / "same.json"), "error")

    def without_submit(data: dict) -> None:
        wrapped = {"schema": {"action": data["action_schema"]}}
        _drop_member(wrapped, "SubmitAction")

    with pytest.raises(DriftError, match=r"minor: action\[submit\]: union member added"):
        check_drift(live, write_snapshot(union_server, tmp_path / "older.json", edit=without_submit), "error")


# --- typed reset observations ----------------------------------------------------------------


def test_reset_observation_is_kept_in_the_spec_and_snapshot(reset_server: str, union_server: str) -> None:
    from openenvgen_testsupport.union_envs import CounterObservation, CounterStart

    spec = build_spec(sources.from_server(reset_server), name="counter", env_id="test/counter")
    assert spec.reset_observation_schema == CounterStart.model_json_schema()
    assert spec.observation_schema == CounterObservation.model_json_schema()
    text = render_snapshot(spec)
    assert json.loads(text)["reset_observation_schema"] == CounterStart.model_json_schema()
    assert spec_from_snapshot(text) == spec
    # A server without it (openenv < 0.10): no key, so such snapshots are unchanged.
    plain = build_spec(sources.from_server(union_server), name="counter", env_id="test/counter")
    assert plain.reset_observation_schema is None and "reset_observation_schema" not in json.loads(
        render_snapshot(plain)
    )
    assert plain.schema_sha256 != spec.schema_sha256


def test_reset_observation_drift_is_reported(reset_server: str, union_server: str, tmp_path: Path) -> None:
    from openenvgen_runtime.hooks.drift import DriftError, check_drift
    from openenvgen_testsupport.drift import pool_servers, write_snapshot

    with_reset = build_spec(sources.from_server(reset_server), name="counter", env_id="test/counter")
    without = build_spec(sources.from_server(union_server), name="counter", env_id="test/counter")
    # Reset now returns the step observation: `target` is gone from what reset returns.
    lines = diff_specs(with_reset, without).lines()
    assert "major  reset_observation.target: field removed" in lines
    assert not [line for line in lines if not line.split()[1].startswith("reset_observation")]
    # A reset observation equal to the step observation is no drift.
    same = with_reset.model_copy(update={"reset_observation_schema": with_reset.observation_schema})
    assert not diff_specs(same, without)
    # check --upstream reads it from a live server.
    result = gen("counter", "--base-url", union_server, "--out", str(tmp_path / "pkg"))
    assert result.returncode == 0, result.stderr
    result = gen("check", str(tmp_path / "pkg"), "--upstream", "--base-url", reset_server)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "reset_observation.target: field added (integer)" in result.stdout
    # The drift guard, at pool start.
    live = pool_servers([reset_server], mcp=False)
    check_drift(live, write_snapshot(reset_server, tmp_path / "same.json"), "error")
    with pytest.raises(DriftError, match=r"reset_observation.target: field added"):
        check_drift(live, write_snapshot(union_server, tmp_path / "older.json"), "error")


def test_the_package_types_both_observations(
    reset_server: str, union_server: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from openenvgen.generation.codegen import generate_models
    from openenvgen_testsupport.union_envs import CounterObservation, CounterStart

    spec = build_spec(sources.from_server(reset_server), name="counter", env_id="test/counter")
    names = generate_models(spec)
    assert (names.observation_class, names.reset_observation_class) == ("CounterObservation", "CounterStart")
    module = import_generated(spec, tmp_path_factory.mktemp("reset"))
    assert equivalent(module.CounterStart.model_json_schema(), CounterStart.model_json_schema())
    assert equivalent(module.CounterObservation.model_json_schema(), CounterObservation.model_json_schema())
    module.CounterStart.model_validate({"total": 0, "target": 7, "done": False, "reward": 0.0})
    with pytest.raises(ValidationError):
        module.CounterStart.model_validate({"total": 0})  # `target` is required at reset
    # Served but the same as the step observation: one model, the reset name an alias of it.
    same = spec.model_copy(update={"reset_observation_schema": spec.observation_schema})
    module = import_generated(same, tmp_path_factory.mktemp("same"))
    assert module.CounterResetObservation is module.CounterObservation
    assert "(the same schema)" in render_package(same)["README.md"]
    # Not served: the step observation's model only.
    plain = build_spec(sources.from_server(union_server), name="counter", env_id="test/counter")
    assert generate_models(plain).reset_observation_class is None


@pytest.mark.parametrize("name", sorted(__import__("openenvgen.catalog.reader", fromlist=["entries"]).entries()))
def test_catalog_observation_models_equal_the_servers(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from openenvgen.generation.codegen import generate_models
    from openenvgen.generation.package import resolve_spec

    spec = resolve_spec(name)
    names = generate_models(spec)
    module = import_generated(spec, tmp_path_factory.mktemp(name))
    assert equivalent(getattr(module, names.observation_class).model_json_schema(), spec.observation_schema)
    if spec.reset_observation_schema is not None:
        reset = getattr(module, names.reset_observation_class)
        assert equivalent(reset.model_json_schema(), spec.reset_observation_schema)


def test_stale_hooks_name_a_removed_member_and_reset_field(
    reset_server: str, union_server: str, tmp_path: Path
) -> None:
    from openenvgen.lifecycle.changelog import stale_hooks

    old = build_spec(sources.from_server(reset_server), name="counter", env_id="test/counter")
    capture = _counter_capture(union_server)
    _drop_member(capture, "PeekAction")
    new = build_spec(ServerInterface.model_validate(capture), name="counter", env_id="test/counter")
    custom = tmp_path / "custom.py"
    custom.write_text('def render(observation):\n    return f"{observation[\'target\']}"\n\nFIRST = {"kind": "peek"}\n')
    assert stale_hooks(custom, old, new) == [
        "line 2: `target` — the reset observation field is gone in this version (renamed or removed)",
        "line 4: `peek` — the union action member is gone in this version (renamed or removed)",
    ]

"""Generated action models validate exactly like the server's own models.

For every captured upstream env (against a hand-written server-side model whose JSON
schema equals the capture exactly) and for the fixture servers (against the model the
running server itself uses), hypothesis feeds valid payloads drawn from the schema and
mutated invalid ones to both sides; they must agree on every case. The generated
model's JSON schema must also equal the server's after the documented normalisation
(`openenvgen_schemas.normalise`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import BaseModel, ValidationError

from openenvgen import sources
from openenvgen_schemas.normalise import equivalent, inline_refs
from openenvgen.spec import Capture, build_spec
from tests.conftest import CORPUS, corpus_dirs, import_generated

WRONG_VALUES = [None, "", "x", "3", 1.5, -1, 0, 10**9, True, [], {}, [1], {"a": 1}]


def _accepts(model: type[BaseModel], payload: Any) -> bool:
    try:
        model.model_validate(payload)
    except ValidationError:
        return False
    return True


def payloads(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid payloads from the schema, and each mutated in one way to be (probably) invalid."""
    valid = from_schema(inline_refs(schema))
    props = list((schema.get("properties") or {}).keys())

    @st.composite
    def mutated(draw: st.DrawFn) -> Any:
        payload = dict(draw(valid))
        how = draw(st.sampled_from(["drop", "extra", "retype", "nested"]))
        if how == "drop" and payload:
            payload.pop(draw(st.sampled_from(sorted(payload))))
        elif how == "extra":
            payload[draw(st.text(min_size=1, max_size=8))] = draw(st.sampled_from(WRONG_VALUES))
        elif how == "retype" and props:
            payload[draw(st.sampled_from(props))] = draw(st.sampled_from(WRONG_VALUES))
        elif how == "nested":
            nested = [k for k, v in payload.items() if isinstance(v, dict) and v]
            if nested:
                key = draw(st.sampled_from(nested))
                inner = dict(payload[key])
                inner[draw(st.sampled_from(sorted(inner)))] = draw(st.sampled_from(WRONG_VALUES))
                payload[key] = inner
        return payload

    junk = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=6,
    )
    return st.one_of(valid, mutated(), junk)


def _generated_model(spec, tmp_path_factory) -> type[BaseModel]:
    module = import_generated(spec, tmp_path_factory.mktemp(spec.name))
    from openenvgen.codegen import combined_schema

    _, action_class, _ = combined_schema(spec)
    return getattr(module, action_class)


def _corpus_spec(env_dir: str):
    from openenvgen.corpus import capture_from_corpus

    return build_spec(
        Capture.model_validate(capture_from_corpus(CORPUS / env_dir)),
        name=env_dir.removesuffix("_env"),
        env_id=f"test/{env_dir}",
    )


CORPUS_ENVS = corpus_dirs()


@pytest.mark.skipif(not CORPUS_ENVS, reason="../shared/corpus is not present")
@pytest.mark.parametrize("env_dir", CORPUS_ENVS)
def test_server_stand_in_matches_capture(env_dir: str) -> None:
    from tests.support.corpus_models import SERVER_ACTIONS

    captured = json.loads((CORPUS / env_dir / "schema.json").read_text())["action"]
    assert SERVER_ACTIONS[env_dir].model_json_schema() == captured


@pytest.mark.skipif(not CORPUS_ENVS, reason="../shared/corpus is not present")
@pytest.mark.parametrize("env_dir", CORPUS_ENVS)
def test_corpus_models_equivalent(env_dir: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.support.corpus_models import SERVER_ACTIONS

    spec = _corpus_spec(env_dir)
    generated = _generated_model(spec, tmp_path_factory)
    server = SERVER_ACTIONS[env_dir]
    assert equivalent(generated.model_json_schema(), spec.action_schema)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(payloads(spec.action_schema))
    def agree(payload: Any) -> None:
        assert _accepts(generated, payload) == _accepts(server, payload), payload

    agree()


@pytest.mark.parametrize("fixture", ["wordle_server", "grid_server", "mcp_server"])
def test_fixture_models_equivalent(fixture: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Generated from the live server's /schema, compared with the model that server runs."""
    from tests.support import fixture_envs
    from openenv.core.env_server.mcp_types import CallToolAction

    url = request.getfixturevalue(fixture)
    spec = build_spec(sources.from_server(url), name=fixture.removesuffix("_server"), env_id=f"test/{fixture}")
    server = {
        "wordle_server": fixture_envs.WordGuessAction,
        "grid_server": fixture_envs.GridAction,
        "mcp_server": CallToolAction,
    }[fixture]
    generated = _generated_model(spec, tmp_path_factory)
    assert equivalent(generated.model_json_schema(), spec.action_schema)

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(payloads(spec.action_schema))
    def agree(payload: Any) -> None:
        assert _accepts(generated, payload) == _accepts(server, payload), payload

    agree()


def test_mcp_tool_argument_models_equivalent(mcp_server: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each tool's generated argument model agrees with its input schema (jsonschema semantics
    for the tool's own types: fastmcp validates arguments with pydantic the same way)."""
    spec = build_spec(sources.from_server(mcp_server), name="mcp", env_id="test/mcp")
    module = import_generated(spec, tmp_path_factory.mktemp("mcp_tools"))
    from openenvgen.codegen import combined_schema

    _, _, tool_classes = combined_schema(spec)
    assert set(tool_classes) == {t.name for t in spec.tools or ()}
    for tool in spec.tools or ():
        model = getattr(module, tool_classes[tool.name])
        assert equivalent(model.model_json_schema(), tool.input_schema), tool.name

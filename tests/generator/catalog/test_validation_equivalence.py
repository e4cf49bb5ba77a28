"""Generated action models accept exactly what the real env servers accepted.

`openenv-gen capture` sent every recorded upstream env (tests/fixtures/recordings) actions
sampled from its captured action schema, valid ones and near misses, and recorded what the
server did with each (`validation.json`: accepted, or its validation errors; see
openenvgen/verdicts.py). Here each env's package is generated from its recording and every
recorded verdict is replayed against the generated action model: it must accept what the
server accepted and reject what the server rejected. Nothing is sampled here; the verdicts
are the servers'. The generated model's JSON schema must also equal the server's after the
documented normalisation (`openenvgen_schemas.normalise`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from openenvgen import sources
from openenvgen.corpus import capture_from_corpus
from openenvgen.spec import Capture, EnvSpec, build_spec
from openenvgen_schemas.normalise import equivalent
from tests.conftest import import_generated
from tests.support.replay_env import RECORDINGS

RECORDED = sorted(p.name for p in RECORDINGS.iterdir() if (p / "schema.json").is_file())
"""Every env recorded by the capture."""
MIN_ENVS = 30


def _accepts(model: type[BaseModel], payload: Any) -> bool:
    try:
        model.model_validate(payload)
    except ValidationError:
        return False
    return True


def _spec(env_dir: str) -> EnvSpec:
    capture = Capture.model_validate(capture_from_corpus(RECORDINGS / env_dir))
    return build_spec(capture, name=env_dir.removesuffix("_env"), env_id=f"test/{env_dir}")


def _action_model(spec: EnvSpec, root: Path) -> type[BaseModel]:
    from openenvgen.codegen import combined_schema

    module = import_generated(spec, root)
    _, action_class, _ = combined_schema(spec)
    return getattr(module, action_class)


def _verdicts(env_dir: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / env_dir / "validation.json").read_text("utf-8"))


def test_every_recorded_env_has_server_verdicts() -> None:
    assert len(RECORDED) >= MIN_ENVS
    missing = [env_dir for env_dir in RECORDED if not (RECORDINGS / env_dir / "validation.json").is_file()]
    assert missing == []
    # Across the envs the servers both accepted and rejected: the replay below tests both ways.
    cases = [c for env_dir in RECORDED for c in _verdicts(env_dir)["cases"]]
    assert sum(c["accepted"] is True for c in cases) >= 10 * MIN_ENVS
    assert sum(c["accepted"] is False for c in cases) >= 5 * MIN_ENVS


@pytest.mark.parametrize("env_dir", RECORDED)
def test_generated_model_accepts_exactly_what_the_server_accepted(env_dir: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    record = _verdicts(env_dir)
    verdicts = [c for c in record["cases"] if c["accepted"] is not None]
    assert verdicts, f"{env_dir}: no server verdict recorded ({record['notes']})"
    assert (record["accepted"], record["rejected"]) == (
        sum(c["accepted"] is True for c in verdicts),
        sum(c["accepted"] is False for c in verdicts),
    )
    spec = _spec(env_dir)
    model = _action_model(spec, tmp_path_factory.mktemp(env_dir))
    assert equivalent(model.model_json_schema(), spec.action_schema)
    disagreements = [
        {"action": c["action"], "server": "accepted" if c["accepted"] else c.get("errors"), "generated": not c["accepted"]}
        for c in verdicts
        if _accepts(model, c["action"]) != c["accepted"]
    ]
    assert disagreements == [], f"{env_dir}: {len(disagreements)} of {len(verdicts)} verdicts differ, e.g. {disagreements[:3]}"


def test_mcp_tool_argument_models_equivalent(mcp_server: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each tool's generated argument model has the tool's input schema (fastmcp validates
    arguments with pydantic models of that schema)."""
    spec = build_spec(sources.from_server(mcp_server), name="mcp", env_id="test/mcp")
    module = import_generated(spec, tmp_path_factory.mktemp("mcp_tools"))
    from openenvgen.codegen import combined_schema

    _, _, tool_classes = combined_schema(spec)
    assert set(tool_classes) == {t.name for t in spec.tools or ()}
    for tool in spec.tools or ():
        model = getattr(module, tool_classes[tool.name])
        assert equivalent(model.model_json_schema(), tool.input_schema), tool.name

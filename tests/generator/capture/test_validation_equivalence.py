"""Generated action models accept exactly what the real env servers accepted.

`openenv-gen capture` sent every captured upstream env (tests/fixtures/captures) actions
sampled from its captured action schema, valid ones and near misses, and recorded what the
server did with each, its rulings (`validation.json`: accepted, or its validation errors;
see openenvgen/capture/validation.py). Here each env's package is generated from its capture
and every recorded ruling is replayed against the generated action model: it must accept what the
server accepted and reject what the server rejected. Nothing is sampled here; the rulings
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
from openenvgen.capture.snapshots import interface_from_capture
from openenvgen.spec import EnvSpec, ServerInterface, build_spec
from openenvgen_schemas.normalise import equivalent
from openenvgen_testsupport.generating import import_generated
from openenvgen_testsupport.replay_env import CAPTURES

CAPTURED = sorted(p.name for p in CAPTURES.iterdir() if (p / "schema.json").is_file())
"""Every env captured."""
MIN_ENVS = 30


def _accepts(model: type[BaseModel], payload: Any) -> bool:
    try:
        model.model_validate(payload)
    except ValidationError:
        return False
    return True


def _spec(env_dir: str) -> EnvSpec:
    interface = ServerInterface.model_validate(interface_from_capture(CAPTURES / env_dir))
    return build_spec(interface, name=env_dir.removesuffix("_env"), env_id=f"test/{env_dir}")


def _action_model(spec: EnvSpec, root: Path) -> type[BaseModel]:
    from openenvgen.generation.codegen import combined_schema

    module = import_generated(spec, root)
    _, action_class, _ = combined_schema(spec)
    return getattr(module, action_class)


def _rulings(env_dir: str) -> dict[str, Any]:
    return json.loads((CAPTURES / env_dir / "validation.json").read_text("utf-8"))


def test_every_captured_env_has_server_rulings() -> None:
    assert len(CAPTURED) >= MIN_ENVS
    missing = [env_dir for env_dir in CAPTURED if not (CAPTURES / env_dir / "validation.json").is_file()]
    assert missing == []
    # Across the envs the servers both accepted and rejected: the replay below tests both ways.
    cases = [c for env_dir in CAPTURED for c in _rulings(env_dir)["cases"]]
    assert sum(c["accepted"] is True for c in cases) >= 10 * MIN_ENVS
    assert sum(c["accepted"] is False for c in cases) >= 5 * MIN_ENVS


@pytest.mark.parametrize("env_dir", CAPTURED)
def test_generated_model_accepts_exactly_what_the_server_accepted(
    env_dir: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    record = _rulings(env_dir)
    rulings = [c for c in record["cases"] if c["accepted"] is not None]
    assert rulings, f"{env_dir}: no server ruling recorded ({record['notes']})"
    assert (record["accepted"], record["rejected"]) == (
        sum(c["accepted"] is True for c in rulings),
        sum(c["accepted"] is False for c in rulings),
    )
    spec = _spec(env_dir)
    model = _action_model(spec, tmp_path_factory.mktemp(env_dir))
    assert equivalent(model.model_json_schema(), spec.action_schema)
    disagreements = [
        {
            "action": c["action"],
            "server": "accepted" if c["accepted"] else c.get("errors"),
            "generated": not c["accepted"],
        }
        for c in rulings
        if _accepts(model, c["action"]) != c["accepted"]
    ]
    assert disagreements == [], (
        f"{env_dir}: {len(disagreements)} of {len(rulings)} rulings differ, e.g. {disagreements[:3]}"
    )


def test_mcp_tool_argument_models_equivalent(mcp_server: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each tool's generated argument model has the tool's input schema (fastmcp validates
    arguments with pydantic models of that schema)."""
    spec = build_spec(sources.from_server(mcp_server), name="mcp", env_id="test/mcp")
    module = import_generated(spec, tmp_path_factory.mktemp("mcp_tools"))
    from openenvgen.generation.codegen import combined_schema

    _, _, tool_classes = combined_schema(spec)
    assert set(tool_classes) == {t.name for t in spec.tools or ()}
    for tool in spec.tools or ():
        model = getattr(module, tool_classes[tool.name])
        assert equivalent(model.model_json_schema(), tool.input_schema), tool.name

"""OpenEnv's MCP models live once, in the runtime, and the MCP packages import them.

`openenvgen_runtime.mcp_models` is generated from the schemas' one copy
(`openenvgen_schemas/mcp_models.json`) and must be what the generator writes from it today
(`python -m tests.generator.build.test_shared_models --write` rewrites it). A package
imports a shared class only when its server's definition of it is the copy's, exactly;
its models keep the server's schemas either way, and a definition that differs in any way
(with every model that refers to it) is generated in the package as before.
"""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import openenvgen_runtime.mcp_models as runtime_models
from openenvgen import catalog
from openenvgen.generation.codegen import _combined, generate_models, shared_models_source
from openenvgen.generation.package import resolve_spec
from openenvgen.spec import EnvSpec
from openenvgen_schemas import mcp_models
from openenvgen_schemas.normalise import equivalent
from openenvgen_testsupport.generating import import_generated
from openenvgen_testsupport.paths import GENERATED, ROOT

RUNTIME_MODULE = ROOT / "runtime" / "openenvgen_runtime" / "mcp_models.py"
RUFF = str(Path(sys.executable).with_name("ruff"))
SHARING = {"agent_world_model", "coding_tools", "echo", "finqa", "jupyter", "opencode", "terminus"}
"""Catalog envs whose servers send at least one of the shared models unchanged (more may join)."""


def _catalog_specs() -> dict[str, EnvSpec]:
    return {name: resolve_spec(name) for name in sorted(catalog.entries())}


def _sharing() -> dict[str, EnvSpec]:
    return {name: spec for name, spec in _catalog_specs().items() if _combined(spec)[1].shared_classes}


def test_the_runtime_module_is_generated_from_the_schema_copy() -> None:
    # Formatted by the repository's ruff settings, like the runtime's other modules.
    assert RUNTIME_MODULE.read_text("utf-8") == shared_models_source(RUNTIME_MODULE.parent), (
        "stale: run python -m tests.generator.build.test_shared_models --write"
    )
    assert {n for n, v in vars(runtime_models).items() if isinstance(v, type)} >= set(mcp_models.definitions())


def test_the_schema_copy_is_what_the_catalog_servers_send() -> None:
    sent: dict[str, list[str]] = {}
    for name, spec in _catalog_specs().items():
        root, names = _combined(spec)
        ours = {**root.get("$defs", {}), names.action_class: {k: v for k, v in root.items() if k != "$defs"}}
        for cls, schema in mcp_models.definitions().items():
            if json.dumps(ours.get(cls)) == json.dumps(schema):
                sent.setdefault(cls, []).append(name)
    assert set(sent) == set(mcp_models.definitions()), sent
    # The runtime's classes have the copy's schemas (as the normalisation compares a server's).
    for cls, schema in mcp_models.definitions().items():
        model = getattr(runtime_models, cls)
        if issubclass(model, BaseModel):
            assert equivalent(model.model_json_schema(), {**schema, "$defs": mcp_models.definitions()}), cls


def test_the_catalogs_mcp_packages_share_the_models() -> None:
    sharing = _sharing()
    assert SHARING <= set(sharing), sorted(sharing)
    for name in SHARING:
        tree = ast.parse((GENERATED / sharing[name].package / sharing[name].module / "models.py").read_text("utf-8"))
        imported = {
            alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module == mcp_models.MODULE
            for alias in node.names
        }
        defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        shared = set(_combined(sharing[name])[1].shared_classes)
        assert (imported, defined & shared) == (shared, set()), name


@pytest.mark.parametrize("name", sorted(SHARING))
def test_a_sharing_package_keeps_the_servers_schemas(name: str, tmp_path: Path) -> None:
    spec = resolve_spec(name)
    module = import_generated(spec, tmp_path)
    names = generate_models(spec)
    for cls in names.shared_classes:
        assert getattr(module, cls) is getattr(runtime_models, cls)
        assert cls in module.__all__
    _assert_servers_schemas(module, spec)


def _assert_servers_schemas(module: Any, spec: EnvSpec) -> None:
    names = generate_models(spec)
    assert equivalent(getattr(module, names.action_class).model_json_schema(), spec.action_schema)
    assert equivalent(getattr(module, names.observation_class).model_json_schema(), spec.observation_schema)
    if spec.reset_observation_schema is not None:
        reset = getattr(module, str(names.reset_observation_class))
        assert equivalent(reset.model_json_schema(), spec.reset_observation_schema)
    for tool in spec.tools or ():
        assert equivalent(getattr(module, names.tool_classes[tool.name]).model_json_schema(), tool.input_schema)


def _tool_error_type(observation: dict[str, Any]) -> dict[str, Any]:
    enum: dict[str, Any] = observation["$defs"]["ToolErrorType"]
    return enum


@pytest.mark.parametrize(
    ("change", "still_shared"),
    [
        # A new error type: ToolErrorType differs, and so, through their refs, ToolError and CallToolObservation.
        (lambda obs: _tool_error_type(obs)["enum"].append("cancelled"), ("CallToolAction",)),
        # A reworded docstring (equal after normalisation, but not the same text): that model alone.
        (
            lambda obs: obs.update(description=obs["description"].replace("\n", "\n\n")),
            ("CallToolAction", "ToolError", "ToolErrorType"),
        ),
    ],
    ids=["enum-value-added", "docstring-rewrapped"],
)
def test_a_definition_that_differs_is_generated_in_the_package(
    change: Any, still_shared: tuple[str, ...], tmp_path: Path
) -> None:
    echo = resolve_spec("echo")
    observation = copy.deepcopy(echo.observation_schema)
    change(observation)
    spec = echo.model_copy(update={"observation_schema": observation, "reset_observation_schema": observation})
    names = generate_models(spec)
    assert names.shared_classes == still_shared
    for cls in mcp_models.definitions().keys() - {"ListToolsAction"}:
        assert (f"\nclass {cls}(" in names.source) is (cls not in still_shared), cls
    module = import_generated(spec, tmp_path)
    assert module.CallToolObservation is not runtime_models.CallToolObservation
    _assert_servers_schemas(module, spec)
    if "cancelled" in json.dumps(observation):
        error = {"error_type": "cancelled", "message": "m"}
        assert module.CallToolObservation.model_validate({"tool_name": "t", "error": error}).error is not None


def test_shared_imports_are_ruff_clean_by_ruff_defaults_and_by_this_repositorys_settings(tmp_path: Path) -> None:
    """The import block and `__all__` as ruff's isort and RUF022 want them, whether the runtime
    counts as third-party (ruff's defaults) or first-party (this repository's generated/)."""
    paths = []
    for name, spec in _sharing().items():
        path = tmp_path / f"{name}.py"
        path.write_text(generate_models(spec).source, "utf-8")
        paths.append(str(path))
    defaults = ["--isolated", "--line-length", "88"]
    repository = ["--config", str(GENERATED / "ruff.toml")]
    for flags, select in ((defaults, ["--extend-select", "I"]), (repository, [])):
        for command in (["check", *select, "--extend-select", "RUF022"], ["format", "--check"]):
            done = subprocess.run(
                [RUFF, *command, *flags, "--no-cache", *paths], capture_output=True, text=True, cwd=tmp_path
            )
            assert done.returncode == 0, done.stdout + done.stderr


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.generator.build.test_shared_models --write")
    RUNTIME_MODULE.write_text(shared_models_source(RUNTIME_MODULE.parent), "utf-8")
    print(f"wrote {RUNTIME_MODULE}")

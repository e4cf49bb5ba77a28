"""What users rely on stays put: the runtime's public names, every generated package's
exported names, and the shapes of `--json` output, as recorded before the codebase was
restructured (tests/golden/compatibility.json).

A shape is a JSON document with every value replaced by its JSON type; a list becomes
the merged shape of its items, and a key whose values differ in type across items holds
each type (`"null|string"`). Adding a key is a change too: the recorded file is the
contract, updated on purpose (`python -m tests.project.test_compatibility --write`).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.paths import OPENENV_GEN, ROOT, TESTS

GOLDEN = TESTS / "golden" / "compatibility.json"
RUNTIME_MODULES = {
    # What generated packages and the documented customising path import.
    "openenvgen_runtime": None,  # its __all__
    "openenvgen_runtime.extensions": ["ExtensionError", "HookError", "load_extension"],
    # What a package's `<module>/trl.py` imports.
    "openenvgen_runtime.trl": None,  # its __all__
    # The MCP models a package imports instead of generating (openenvgen_schemas/mcp_models.json).
    "openenvgen_runtime.mcp_models": [
        "CallToolAction",
        "CallToolObservation",
        "ListToolsAction",
        "ToolError",
        "ToolErrorType",
    ],
}


def shape(value: Any) -> Any:
    """`value` with every leaf replaced by its JSON type name; lists merged."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = merge(merged, shape(item))
        return [merged] if merged is not None else []
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def merge(a: Any, b: Any) -> Any:
    """One shape covering both: objects merge key by key (a key in one only is kept),
    lists merge their items, and different kinds become `{"anyOf": [...]}`."""
    if a is None or b is None or a == b:
        return b if a is None else a
    if isinstance(a, dict) and isinstance(b, dict) and "anyOf" not in a and "anyOf" not in b:
        return {key: merge(a.get(key), b.get(key)) for key in sorted(a.keys() | b.keys())}
    if isinstance(a, list) and isinstance(b, list):
        items = merge(a[0] if a else None, b[0] if b else None)
        return [items] if items is not None else []
    alternatives: list[Any] = []
    for alternative in [
        *(a["anyOf"] if isinstance(a, dict) and "anyOf" in a else [a]),
        *(b["anyOf"] if isinstance(b, dict) and "anyOf" in b else [b]),
    ]:
        kind = type(alternative)
        same = next((i for i, known in enumerate(alternatives) if type(known) is kind and kind in (dict, list)), None)
        if same is None:
            if alternative not in alternatives:
                alternatives.append(alternative)
        else:
            alternatives[same] = merge(alternatives[same], alternative)
    return {"anyOf": sorted(alternatives, key=lambda x: json.dumps(x, sort_keys=True))}


def runtime_names() -> dict[str, list[str]]:
    out = {}
    for module_name, names in RUNTIME_MODULES.items():
        module = importlib.import_module(module_name)
        listed = sorted(module.__all__) if names is None else names
        missing = [name for name in listed if not hasattr(module, name)]
        assert not missing, f"{module_name} no longer has {missing}"
        out[module_name] = listed
    return out


def package_names() -> dict[str, list[str]]:
    out = {}
    for pyproject in sorted((ROOT / "generated").glob("*/pyproject.toml")):
        root = pyproject.parent
        (init,) = [p for p in root.glob("*/__init__.py")]
        module = importlib.import_module(init.parent.name)
        out[root.name] = sorted(module.__all__)
    return out


def openenv_gen(*args: str, cwd: Path = ROOT) -> Any:
    done = subprocess.run([OPENENV_GEN, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    return json.loads(done.stdout)


def json_shapes(tmp: Path) -> dict[str, Any]:
    """`list --json`, and `check --json` for an up-to-date, a stale and a drifted package."""
    import shutil

    listing = openenv_gen("list", "--json")
    # A mapping of env name to reason: its shape is one entry, whichever envs it names.
    reasons = list(listing["unavailable"].values())
    listing["unavailable"] = {"ENV": reasons[-1]} if reasons else {}
    package = tmp / "wordle-openenv"
    shutil.copytree(ROOT / "generated" / "wordle-openenv", package)
    up_to_date = openenv_gen("check", "--json", str(package))
    (package / "wordle_openenv" / "taskset.py").write_text("# edited\n", "utf-8")
    stale = openenv_gen("check", "--json", str(package))
    snapshot = json.loads((package / "wordle_openenv" / "snapshot.json").read_text("utf-8"))
    drifted_schema = {
        "action": {
            **snapshot["action_schema"],
            "properties": {**snapshot["action_schema"]["properties"], "extra": {"type": "string"}},
        },
        "observation": snapshot["observation_schema"],
    }
    schema_file = tmp / "schema.json"
    schema_file.write_text(json.dumps(drifted_schema), "utf-8")
    drifted = openenv_gen("check", "--json", "--upstream", "--schema-file", str(schema_file), str(package))
    return {"list": shape(listing), "check": merge(merge(shape(up_to_date), shape(stale)), shape(drifted))}


def record(tmp: Path) -> dict[str, Any]:
    return {"runtime": runtime_names(), "packages": package_names(), "json": json_shapes(tmp)}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text("utf-8"))


def test_the_runtime_keeps_its_public_names(golden: dict[str, Any]) -> None:
    assert runtime_names() == golden["runtime"]


def test_every_generated_package_exports_what_it_did(golden: dict[str, Any]) -> None:
    assert package_names() == golden["packages"]


def test_json_output_keeps_its_shape(golden: dict[str, Any], tmp_path: Path) -> None:
    assert json_shapes(tmp_path) == golden["json"]


def test_a_changed_shape_is_seen() -> None:
    """The comparison can fail: a key added, or a type changed, gives another shape."""
    before = shape({"envs": [{"name": "a", "seed": None}, {"name": "b", "seed": {"verdict": "x"}}]})
    assert before == {"envs": [{"name": "string", "seed": {"anyOf": ["null", {"verdict": "string"}]}}]}
    assert shape({"envs": [{"name": "a", "new": 1}]}) != shape({"envs": [{"name": "a"}]})
    assert shape({"n": 1}) != shape({"n": "1"})


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.project.test_compatibility --write")
    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(record(Path(tmp)), indent=2, sort_keys=True) + "\n", "utf-8")
    print(f"wrote {GOLDEN}")

"""What a catalog package tells the model to read, the model can read.

For every checked-in catalog package: each observation field its action hint, system
prompt or README names (a dotted path such as `metadata.question`, or a top-level field
such as `legal_actions`) is in what the model is shown of the env's recorded observations
(its capture's reset and steps, through the observation view the package's runs use; for
an env whose reset cannot run here, every field its observation schema declares).
`metadata` is hidden from the model but for the keys a package shows (`shown_metadata`).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from verifiers.v1 import TasksetConfig
from verifiers.v1.utils.generic import concrete_type

from openenvgen.catalog.reader import entries
from openenvgen_runtime import AdapterTaskset
from openenvgen_runtime.turn.observations import NOT_IN_TEXT, ObservationView
from openenvgen_testsupport.paths import FIXTURES, GENERATED

CAPTURES = FIXTURES / "captures"
_WORD_PATH = re.compile(r"(?<![\w.`/-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def _taskset(package: Path) -> type[AdapterTaskset]:
    module = package.name.replace("-", "_")
    sys.path.insert(0, str(package))
    try:
        found = importlib.import_module(f"{module}.taskset")
    finally:
        sys.path.remove(str(package))
    return next(
        v
        for v in vars(found).values()
        if isinstance(v, type) and issubclass(v, AdapterTaskset) and v is not AdapterTaskset
    )


def _from_schema(schema: dict[str, Any], depth: int = 3) -> Any:
    """An observation with every field its schema declares (nested objects too), for an env
    whose capture recorded none (its reset cannot run here: `no_episode`)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or depth == 0:
        return "value"
    return {name: _from_schema(sub, depth - 1) for name, sub in properties.items() if isinstance(sub, dict)}


def _observations(env_folder: str, package: Path) -> list[dict[str, Any]]:
    """The capture's recorded observations (reset and steps) of the env; else one made from
    the package's observation schema."""
    found = []
    for path in sorted((CAPTURES / env_folder).glob("*.json")):
        if path.name != "reset.json" and not re.fullmatch(r"step(_\d+)?\.json", path.name):
            continue
        reply = json.loads(path.read_text("utf-8"))
        observation = (reply.get("data") or {}).get("observation")
        if isinstance(observation, dict):
            found.append(observation)
    if not found:
        snapshot = json.loads((package / package.name.replace("-", "_") / "snapshot.json").read_text("utf-8"))
        found.append(_from_schema(snapshot["observation_schema"]))
    return found


def _resolve(value: Any, path: list[str]) -> bool:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True


def _named_fields(text: str, observations: list[dict[str, Any]]) -> set[str]:
    """Dotted paths and bare names in `text` whose first part is a field of an observation
    (`metadata` alone is no field the model is told to read: "table metadata")."""
    keys = {k for o in observations for k in o} - set(NOT_IN_TEXT)  # those reach the model beside the text
    return {m for m in _WORD_PATH.findall(text) if m.split(".")[0] in keys and m != "metadata"}


def _texts(taskset: type[AdapterTaskset], package: Path) -> str:
    """The hint, the system prompt and the README's prose (its code blocks are the user's code)."""
    readme = re.sub(r"```.*?```", "", (package / "README.md").read_text("utf-8"), flags=re.DOTALL)
    return "\n".join([taskset.ACTION_HINT, taskset.SYSTEM_PROMPT or "", readme])


CASES = [
    pytest.param(name, entry.env_folder, id=name)
    for name, entry in entries().items()
    if (GENERATED / f"{name.replace('_', '-')}-openenv").is_dir()
]


def test_every_catalog_package_is_checked() -> None:
    assert len(CASES) >= 25, [c.id for c in CASES]


@pytest.mark.parametrize(("name", "env_folder"), CASES)
def test_each_field_the_model_is_told_to_read_is_shown_to_it(name: str, env_folder: str) -> None:
    package = GENERATED / f"{name.replace('_', '-')}-openenv"
    taskset = _taskset(package)
    observations = _observations(env_folder, package)
    config_type = concrete_type(taskset, TasksetConfig)
    assert config_type is not None
    hidden = config_type.model_fields["hidden_fields"].get_default(call_default_factory=True)
    view = ObservationView(hidden_fields=hidden, shown_metadata=taskset.SHOWN_METADATA)
    unseen = []
    for field in sorted(_named_fields(_texts(taskset, package), observations)):
        path = field.split(".")
        recorded = [o for o in observations if _resolve(o, path)]
        if not recorded:
            unseen.append(f"{field} (in no recorded observation)")
        elif not all(_resolve(view.visible(o), path) for o in recorded):
            unseen.append(f"{field} (hidden from the model)")
    assert not unseen, f"{name}: the model is told to read {', '.join(unseen)}"


def test_finqa_shows_the_question_and_the_company_to_the_model() -> None:
    taskset = _taskset(GENERATED / "finqa-openenv")
    (reset, *_) = _observations("finqa_env", GENERATED / "finqa-openenv")
    shown = ObservationView(shown_metadata=taskset.SHOWN_METADATA).visible(reset)
    assert shown["metadata"] == {"question": reset["metadata"]["question"], "company": "example_corp"}
    assert "history" not in json.dumps(shown)

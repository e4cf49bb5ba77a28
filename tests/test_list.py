"""`openenv-gen list`: the embedded catalog, one line per env."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openenvgen import catalog
from openenvgen.pipeline import catalog_rows

OPENENV_GEN = str(Path(sys.executable).with_name("openenv-gen"))

# name → (env id, action kind, fields or tools) as `list` must show them.
EXPECTED = {
    "wordle": ("openenv/wordle", "typed", "message: string"),
    "echo": ("openenv/echo_env", "MCP", "echo_message(message), echo_with_length(message)"),
    "connect4": ("openenv/connect4_env", "typed", "column: integer"),
    "chess": ("openenv/chess_env", "typed", "move: string"),
    "maze": ("openenv/maze_env", "typed", "action: integer"),
    "coding": ("openenv/coding_env", "typed", "code: string"),
    "reasoning_gym": ("openenv/reasoning_gym_env", "typed", "answer: string"),
}


def _list() -> list[str]:
    result = subprocess.run(
        [OPENENV_GEN, "list"], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "40"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_list_shows_every_catalog_env_with_its_action_space() -> None:
    header, *lines = _list()
    assert header.split() == ["name", "env", "id", "action", "fields", "/", "tools"]
    shown = {}
    for line in lines:
        name, env_id, kind, detail = line.split(maxsplit=3)
        shown[name] = (env_id, kind, detail)
    assert shown == EXPECTED
    # Catalog order, one line each.
    assert [line.split()[0] for line in lines] == list(catalog.entries())


def test_list_is_plain_aligned_text_that_never_wraps() -> None:
    # A narrow terminal must not wrap or truncate it: scripts grep it.
    lines = _list()
    assert all(line == line.rstrip() for line in lines)
    starts = {line.index(EXPECTED[line.split()[0]][0]) for line in lines[1:]}
    assert starts == {lines[0].index("env id")}
    assert max(len(line) for line in lines) > 40


def test_catalog_rows_mark_optional_fields_and_follow_the_schema() -> None:
    rows = {name: (env_id, kind, detail) for name, env_id, kind, detail in catalog_rows()}
    assert rows == EXPECTED
    # Every field the list names is a property of the snapshot's action schema.
    for name, (_, kind, detail) in rows.items():
        capture = catalog.lookup(name).capture()
        props = capture.schema_["action"]["properties"]
        if kind == "typed":
            assert {field.split(":")[0].rstrip("?") for field in detail.split(", ")} == set(props) - {"metadata"}
        else:
            assert {tool["name"] for tool in capture.tools or ()} == {t.split("(")[0] for t in detail.split(", ")}


def test_optional_fields_and_types_are_shown() -> None:
    from openenvgen import pipeline

    schema = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "direction": {"enum": ["up", "down"]},
            "steps": {"type": "integer", "default": 1},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "target": {"$ref": "#/$defs/Target"},
        },
        "required": ["direction", "target"],
    }
    assert pipeline._fields(schema, typed=True) == "direction: enum, steps?: integer, note?: string|null, target: Target"
    assert pipeline._fields(schema, typed=False) == "metadata?, direction, steps?, note?, target"

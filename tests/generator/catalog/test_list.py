"""`openenv-gen list`: the embedded catalog, one line per env."""

from __future__ import annotations

import json
import os
import re
import subprocess

from openenvgen import catalog
from openenvgen.catalog.listing import catalog_rows
from openenvgen_runtime.replay.recording import recorded_envs
from openenvgen_schemas.normalise import UnionMember, union_members
from openenvgen_testsupport.paths import OPENENV_GEN

# name → (env id, action kind, fields or tools) as `list` must show them, for the first
# catalog envs (the catalog grows; every entry is checked against its snapshot below).
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
    header, *lines, footer = _list()
    assert header.split() == ["name", "env", "id", "action", "seed", "episode", "code", "needs", "fields", "/", "tools"]
    shown = {}
    seeds = {}
    episodes = {}
    marks = {}
    for line in lines:
        name, env_id, kind, seed, episode, code, needs, detail = line.split(maxsplit=7)
        shown[name] = (env_id, kind, detail)
        seeds[name] = seed
        episodes[name] = episode
        marks[name] = (code, needs)
    assert {name: shown[name] for name in EXPECTED} == EXPECTED
    assert shown == {name: (env_id, kind, detail) for name, env_id, kind, detail in catalog_rows()}
    # Whether each env honours `seed`, as its capture measured it (data/seeding.json).
    assert seeds == {name: catalog.seeding()[name]["verdict"] for name in catalog.entries()}
    # Whether each env plays offline (`openenv-gen replay NAME`): "server" exactly where the catalog
    # says why not, "replay" exactly where the runtime ships a recorded session.
    assert episodes == {name: "server" if entry.no_episode else "replay" for name, entry in catalog.entries().items()}
    recorded = set(recorded_envs())
    assert {name for name, episode in episodes.items() if episode == "replay"} == {
        name for name, entry in catalog.entries().items() if entry.env_folder in recorded
    }
    assert "server" in episodes.values() and "replay" in episodes.values()
    # Which envs run model-written code on their server, and which variables their server needs.
    runs = {name for name, (code, _) in marks.items() if code == "runs"}
    assert runs == {name for name, entry in catalog.entries().items() if entry.defaults.executes_code}
    assert {"coding", "repl", "julia", "tbench2", "kernrl"} <= runs
    assert not runs & {"jupyter", "coding_tools", "terminus", "opencode", "wordle"}  # theirs runs remotely, or none
    assert {name: needs for name, (_, needs) in marks.items() if needs != "-"} == {
        "jupyter": "E2B_API_KEY",
        "coding_tools": "E2B_API_KEY",
        "opencode": "E2B_API_KEY",
        "terminus": "E2B_API_KEY",
        "websearch": "SERPER_API_KEY",
    }
    # Catalog order, one line each; then one line naming the upstream envs that cannot run here.
    assert [line.split()[0] for line in lines] == list(catalog.entries())
    assert footer == f"# cannot run here, not in the catalog: {', '.join(catalog.unavailable())} (reasons: --json)"
    assert catalog.unavailable() and not set(catalog.unavailable()) & set(catalog.entries())


def test_list_is_plain_aligned_text_that_never_wraps() -> None:
    # A narrow terminal must not wrap or truncate it: scripts grep it.
    lines = _list()
    assert all(line == line.rstrip() for line in lines)
    starts = {line.index(line.split()[1]) for line in lines[1:] if not line.startswith("#")}
    assert starts == {lines[0].index("env id")}
    assert max(len(line) for line in lines) > 40


def _own_fields(member: UnionMember) -> str:
    """A union member's fields, `?` after the optional ones, the tag and `metadata` left out."""
    required = member.schema.get("required", [])
    own = [p for p in member.schema["properties"] if p not in (member.tag_property, "metadata")]
    return ", ".join(p if p in required else f"{p}?" for p in own)


def test_catalog_rows_mark_optional_fields_and_follow_the_schema() -> None:
    rows = {name: (env_id, kind, detail) for name, env_id, kind, detail in catalog_rows()}
    assert {name: rows[name] for name in EXPECTED} == EXPECTED
    # Every field the list names is a property of the snapshot's action schema.
    for name, (_, kind, detail) in rows.items():
        capture = catalog.lookup(name).interface()
        if kind == "union":
            # Each member by its key, with its own fields (the tag and `metadata` left out).
            members = union_members(capture.schema_["action"])
            assert detail == " | ".join(f"{m.key}({_own_fields(m)})" for m in members)
            continue
        props = capture.schema_["action"]["properties"]
        if kind == "typed":
            assert {field.split(":")[0].rstrip("?") for field in detail.split(", ")} == set(props) - {"metadata"}
        else:
            assert {tool["name"] for tool in capture.tools or ()} == set(re.findall(r"(\w+)\(", detail))


def test_optional_fields_and_types_are_shown() -> None:
    from openenvgen.catalog import listing

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
    assert listing._fields(schema, typed=True) == "direction: enum, steps?: integer, note?: string|null, target: Target"
    assert listing._fields(schema, typed=False) == "metadata?, direction, steps?, note?, target"


def test_every_catalog_env_has_a_seed_verdict_with_its_evidence() -> None:
    from openenvgen.capture.seed_check import VERDICTS

    seeding = catalog.seeding()
    assert list(seeding) == list(catalog.entries())
    for name, seed in seeding.items():
        assert seed["verdict"] in VERDICTS, name
        assert seed["summary"], name
        evidence = seed["evidence"]
        if seed["verdict"] == "unmeasured":
            assert evidence["reason"], name
        else:
            assert evidence["points"] >= 1, name
            # not_reproducible rests on where two same-seed sessions differed; the others on none.
            assert bool(evidence["same_seed_differs_at"]) == (seed["verdict"] == "not_reproducible"), name
            assert (
                bool(evidence["other_seed_differs_at"]) == (seed["verdict"] != "deterministic")
                or seed["verdict"] == "not_reproducible"
            ), name
        # The generated package carries the verdict: the catalog spec's defaults.
        assert catalog.lookup(name).defaults.seed_verdict == seed["verdict"]


def test_list_json_has_stable_keys_and_agrees_with_the_columns() -> None:
    result = subprocess.run([OPENENV_GEN, "list", "--json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["envs", "unavailable"]
    assert document["unavailable"] == catalog.unavailable()
    assert all(reason.strip() for reason in document["unavailable"].values())
    envs = document["envs"]
    assert [env["name"] for env in envs] == list(catalog.entries())
    for env in envs:
        assert list(env) == [
            "name", "env_id", "package", "action", "fields", "tools", "members", "seed", "no_episode", "replay",
            "executes_code", "server_env",
        ]  # fmt: skip
        assert env["no_episode"] == catalog.entries()[env["name"]].no_episode
        assert env["replay"] is (env["no_episode"] is None)
        assert env["executes_code"] == catalog.entries()[env["name"]].defaults.executes_code
        assert env["server_env"] == list(catalog.entries()[env["name"]].defaults.server_env)
        measured = catalog.seeding()[env["name"]]
        assert env["seed"] == {"verdict": measured["verdict"], "summary": measured["summary"]}
        assert env["package"] == f"{env['name'].replace('_', '-')}-openenv"
    by_name = {env["name"]: env for env in envs}
    assert by_name["wordle"] == {
        "name": "wordle",
        "env_id": "openenv/wordle",
        "package": "wordle-openenv",
        "action": "typed",
        "fields": [{"name": "message", "type": "string", "required": True}],
        "tools": None,
        "members": None,
        "seed": {"verdict": catalog.seeding()["wordle"]["verdict"], "summary": catalog.seeding()["wordle"]["summary"]},
        "no_episode": None,
        "replay": True,
        "executes_code": False,
        "server_env": [],
    }
    assert by_name["agent_world_model"]["action"] == "union"
    assert [m["key"] for m in by_name["agent_world_model"]["members"]] == ["list_tools", "call_tool"]
    echo = by_name["echo"]
    assert (echo["action"], echo["fields"], echo["members"]) == ("mcp", None, None)
    assert [t["name"] for t in echo["tools"]] == ["echo_message", "echo_with_length"]
    assert echo["tools"][0] == {
        "name": "echo_message",
        "description": "Echo back the provided message.\n\nArgs:\n    message: The message to echo back\n\n"
        "Returns:\n    The same message that was provided",
        "arguments": [{"name": "message", "type": "string", "required": True}],
    }
    # The same facts as the columns.
    for name, env_id, kind, detail in catalog_rows():
        env = by_name[name]
        assert (env["env_id"], env["action"]) == (env_id, kind.lower())
        if kind == "typed":
            shown = ", ".join(f"{f['name']}{'' if f['required'] else '?'}: {f['type']}" for f in env["fields"])
        elif kind == "union":
            shown = " | ".join(
                f"{m['key']}({', '.join(f['name'] + ('' if f['required'] else '?') for f in m['fields'])})"
                for m in env["members"]
            )
        else:
            shown = ", ".join(
                f"{t['name']}({', '.join(a['name'] + ('' if a['required'] else '?') for a in t['arguments'])})"
                for t in env["tools"]
            )
        assert shown == detail

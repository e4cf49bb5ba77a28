"""The run-time drift guard (openenvgen_runtime.hooks.drift) against real OpenEnv servers: a
package's snapshot (written by the generator from a live capture) compared, through the
server pool, with servers whose interface is the same, differs only in rendering (class
names, docstring whitespace), or has drifted; and the same verdicts as `check --upstream`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openenv.core.env_server import create_app
from openenv.core.env_server.types import Action
from pydantic import Field

from openenvgen.generation.render import spec_from_snapshot
from openenvgen.sources.server import from_server
from openenvgen.spec import build_spec
from openenvgen_runtime.hooks.drift import DriftError, check_drift, diff, live_interface, snapshot_interface
from openenvgen_schemas import modeldiff as generator_modeldiff
from openenvgen_testsupport.drift import pool_servers, write_snapshot
from openenvgen_testsupport.fixture_envs import (
    WordGuessEnvironment,
    WordGuessObservation,
    make_mcp_app,
    make_wordle_app,
)
from openenvgen_testsupport.servers import serve_app


class RenamedGuessAction(Action):
    """One free-text move;   the guess is the first ``[word]``
    in ``message``."""

    message: str = Field(..., description="Your move, e.g. 'I guess [crane]'.")


class StricterGuessAction(Action):
    """One free-text move; the guess is the first ``[word]`` in ``message``."""

    message: str = Field(..., description="Your move, e.g. 'I guess [crane]'.")
    hint_level: int = Field(..., ge=0)


def _variant_app(action: type[Action]) -> Any:
    class Variant(WordGuessEnvironment):
        pass

    return create_app(Variant, action, WordGuessObservation, env_name="wordle_fixture", max_concurrent_envs=4)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    with (
        serve_app(make_wordle_app(), ready_path="/health") as wordle,
        serve_app(_variant_app(RenamedGuessAction), ready_path="/health") as renamed,
        serve_app(_variant_app(StricterGuessAction), ready_path="/health") as stricter,
        serve_app(make_mcp_app(), ready_path="/health") as mcp,
    ):
        yield {"wordle": str(wordle), "renamed": str(renamed), "stricter": str(stricter), "mcp": str(mcp)}


def test_an_unchanged_server_passes_in_every_mode(servers: dict[str, str], tmp_path: Path, caplog: Any) -> None:
    snapshot = write_snapshot(servers["wordle"], tmp_path / "snapshot.json")
    live = pool_servers([servers["wordle"]], mcp=False)
    with caplog.at_level(logging.WARNING, logger="openenvgen_runtime"):
        for mode in ("warn", "error", "ignore"):
            check_drift(live, snapshot, mode)  # type: ignore[arg-type]
    assert caplog.records == []


def test_rendering_differences_are_not_drift(servers: dict[str, str], tmp_path: Path) -> None:
    """Another class name (title) and re-wrapped docstring: `check --upstream` calls that
    no drift, and so does the guard."""
    snapshot = write_snapshot(servers["wordle"], tmp_path / "snapshot.json")
    live = pool_servers([servers["renamed"]], mcp=False)
    assert live[0].schema["action"]["title"] == "RenamedGuessAction"
    check_drift(live, snapshot, "error")


def test_drift_warns_in_one_line_by_default(servers: dict[str, str], tmp_path: Path, caplog: Any) -> None:
    snapshot = write_snapshot(servers["wordle"], tmp_path / "snapshot.json")
    live = pool_servers([servers["wordle"], servers["stricter"]], mcp=False)
    with caplog.at_level(logging.WARNING, logger="openenvgen_runtime"):
        check_drift(live, snapshot)
    [record] = caplog.records
    message = record.getMessage()
    assert "\n" not in message
    assert message.startswith(
        f"{servers['stricter']} differs from the package's schema snapshot, major: action.hint_level: "
    )
    assert "required field added" in message
    assert message.endswith("(on_drift=warn: running anyway)")


def test_drift_refuses_to_run_with_on_drift_error(servers: dict[str, str], tmp_path: Path, caplog: Any) -> None:
    snapshot = write_snapshot(servers["wordle"], tmp_path / "snapshot.json")
    live = pool_servers([servers["stricter"]], mcp=False)
    with pytest.raises(DriftError) as error:
        check_drift(live, snapshot, "error")
    assert "\n" not in str(error.value)
    assert "action.hint_level: required field added" in str(error.value)
    assert f"--from-upstream --base-url {servers['stricter']}) or set on_drift=warn to run anyway" in str(error.value)
    with caplog.at_level(logging.WARNING, logger="openenvgen_runtime"):
        check_drift(live, snapshot, "ignore")
    assert caplog.records == []


def test_mcp_tool_lists_are_compared(servers: dict[str, str], tmp_path: Path) -> None:
    same = write_snapshot(servers["mcp"], tmp_path / "same.json")
    live = pool_servers([servers["mcp"]], mcp=True)
    assert {t["name"] for t in live[0].tools} == {"echo_message", "add", "fail"}
    check_drift(live, same, "error")

    def drop_fail_and_retype_add(data: dict[str, Any]) -> None:
        data["tools"] = [t for t in data["tools"] if t["name"] != "fail"]
        add = next(t for t in data["tools"] if t["name"] == "add")
        add["input_schema"]["properties"]["a"]["type"] = "number"

    older = write_snapshot(servers["mcp"], tmp_path / "older.json", edit=drop_fail_and_retype_add)
    with pytest.raises(DriftError, match=r"major: tools\.add\.a: .*; tools\.fail: tool added"):
        check_drift(live, older, "error")


def test_the_guard_and_check_upstream_report_the_same_changes(servers: dict[str, str], tmp_path: Path) -> None:
    snapshot = write_snapshot(servers["wordle"], tmp_path / "snapshot.json")
    for name in ("renamed", "stricter", "mcp"):
        upstream = build_spec(from_server(servers[name]), name="drift", env_id="test/drift")
        expected = [
            c.line()
            for c in generator_modeldiff.diff_specs(spec_from_snapshot(snapshot.read_text()), upstream).changes
            if c.path.split(".")[0] in ("action", "tools", "observation")
        ]
        [server] = pool_servers([servers[name]], mcp=name == "mcp")
        got = diff(snapshot_interface(snapshot), live_interface(server.schema, server.tools)).lines()
        assert got == expected, name
    assert expected  # the MCP server is a different kind of env altogether


def test_an_unreadable_snapshot(servers: dict[str, str], tmp_path: Path, caplog: Any) -> None:
    live = pool_servers([servers["wordle"]], mcp=False)
    missing = tmp_path / "missing.json"
    with pytest.raises(DriftError, match="on_drift=error: cannot read the package's schema snapshot"):
        check_drift(live, missing, "error")
    with caplog.at_level(logging.WARNING, logger="openenvgen_runtime"):
        check_drift(live, missing, "warn")
    assert "drift check skipped: cannot read" in caplog.records[0].getMessage()
    check_drift(live, None, "error")  # a package without a snapshot has nothing to compare

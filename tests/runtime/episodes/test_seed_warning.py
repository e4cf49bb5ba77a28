"""A package whose env was recorded as not honouring `seed` says so when a run plays a task
more than once (rollouts per task > 1, or two tasks with one seed): once, naming the env.

The packages are rendered by the generator with a seed verdict in their spec (what the
catalog's seeding.json gives a catalog env) and played through verifiers' own Env API
against the wordle fixture server, with a scripted model on loopback.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from openenvgen_testsupport.adapters import load_env, run_all
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout
EVIDENCE = "two sessions reset with seed 0 differed over the reset, at reset.state.secret"
_ids = itertools.count()


def _package(wordle_server: str, root: Path, verdict: str) -> str:
    """A package generated from the live fixture server, its spec carrying `verdict`."""
    from openenvgen.generation.package import resolve_spec
    from openenvgen.generation.render import render_package
    from openenvgen.generation.writer import write_tree

    name = f"seeded_{verdict}_{next(_ids)}"
    spec = resolve_spec(name, base_url=wordle_server, env_id=f"test/{name}")
    spec = spec.model_copy(
        update={"defaults": spec.defaults.model_copy(update={"seed_verdict": verdict, "seed_evidence": EVIDENCE})}
    )
    out = root / name
    write_tree(render_package(spec), out)
    # The taskset reads its seed verdict and evidence from the snapshot.
    defaults = json.loads((out / spec.module / "snapshot.json").read_text())["defaults"]
    assert (defaults["seed_verdict"], defaults["seed_evidence"]) == (verdict, EVIDENCE)
    sys.path.insert(0, str(out))
    return spec.package


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _play(package: str, server: str, repeat: int, **taskset: Any) -> list[str]:
    """Play every task `repeat` times; the taskset module's warnings."""
    records = _Records()
    logger = logging.getLogger("openenvgen_runtime.episodes.taskset")
    logger.addHandler(records)
    try:
        with serve_app(ScriptedChatModel(Script(["[slate]"]))) as model_url:
            env = load_env(package, {"base_url": server, **taskset}, {"max_turns": 1})
            episodes = asyncio.run(run_all(env, str(model_url), repeat=repeat))
    finally:
        logger.removeHandler(records)
    assert len(episodes) == repeat * len(taskset.get("resets", [{}])) and all(e.ok for e in episodes)
    return [line for line in records.lines if "does not honour seed" in line]


@pytest.fixture(scope="module")
def packages(wordle_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("seeded")
    return {verdict: _package(wordle_server, root, verdict) for verdict in ("not_reproducible", "reproducible")}


def test_rollouts_of_one_task_on_an_unreproducible_env_warn_once(packages: dict[str, str], wordle_server: str) -> None:
    package = packages["not_reproducible"]
    warnings = _play(package, wordle_server, repeat=3)
    (line,) = warnings  # three rollouts of one task: one warning
    env_id = f"test/{package.removesuffix('-openenv').replace('-', '_')}"
    assert line.startswith(f"{env_id} does not honour seed ({EVIDENCE}): task ")
    assert "played more than once" in line


def test_two_tasks_with_one_seed_warn_too(packages: dict[str, str], wordle_server: str) -> None:
    warnings = _play(packages["not_reproducible"], wordle_server, repeat=1, resets=[{"seed": 5}, {"seed": 5}])
    assert len(warnings) == 1


def test_no_warning_when_each_task_plays_once_or_the_env_honours_seed(
    packages: dict[str, str], wordle_server: str
) -> None:
    assert _play(packages["not_reproducible"], wordle_server, repeat=1, resets=[{"seed": 1}, {"seed": 2}]) == []
    assert _play(packages["reproducible"], wordle_server, repeat=3) == []

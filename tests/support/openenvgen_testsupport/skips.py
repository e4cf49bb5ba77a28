"""Loud skips: what a test run could not test here, listed once in its terminal summary.

tests/conftest.py's hooks print the notes collected here; a test that cannot run on this
machine calls `skip_loudly`, which adds one summary line per (group, reason), or fails
instead when the environment variable it names is 1 (CI sets OPENENVGEN_REQUIRE_DOCKER).
"""

from __future__ import annotations

import os

import pytest

REQUIRE_DOCKER = "OPENENVGEN_REQUIRE_DOCKER"
"""Set to 1, a docker/swarm test that would skip for want of a daemon fails instead."""
DOCKER_MARKERS = ("docker", "swarm")
"""The markers of tests that need a Docker daemon."""
_NOTES = pytest.StashKey[list[str]]()


def summary_note(config: pytest.Config, line: str) -> None:
    """Add `line` (once) to this run's terminal summary section."""
    notes = config.stash.setdefault(_NOTES, [])
    if line not in notes:
        notes.append(line)


def summary_notes(config: pytest.Config) -> list[str]:
    """This run's summary lines so far, in the order they were first noted."""
    return list(config.stash.get(_NOTES, []))


def skip_loudly(config: pytest.Config, group: str, reason: str, *, required_by: str | None = None) -> None:
    """Skip the current test for `reason`, with one summary line per (group, reason); fail
    instead when the environment variable `required_by` is 1."""
    if required_by and os.environ.get(required_by) == "1":
        pytest.fail(f"{group} cannot run here ({required_by}=1 requires them): {reason}", pytrace=False)
    summary_note(config, f"SKIPPED {group}: {reason}")
    pytest.skip(f"{group}: {reason}")

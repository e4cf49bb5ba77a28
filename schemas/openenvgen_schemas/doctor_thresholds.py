"""The thresholds `doctor`'s verdicts are judged by, apart from the report they travel with:
`openenv-gen doctor` reads their names to build its command line, and importing the whole
report model (two dozen pydantic classes) there would slow every `openenv-gen` command."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Thresholds(BaseModel):
    """What each verdict was judged by (`doctor`'s options override each; defaults here)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    step_p95_warn_ms: float = 1_000.0
    step_p95_fail_ms: float = 10_000.0
    reset_p95_warn_ms: float = 5_000.0
    reset_p95_fail_ms: float = 30_000.0
    startup_warn_s: float = 60.0
    min_capacity_warn: int = 4
    """Fewer concurrent sessions than this on one server: warn (a run needs many servers)."""
    release_wait_s: float = 30.0
    """How long vanished clients' sessions may take to be freed before `session_release` fails."""
    determinism_mismatches_fail: int = 1
    non_finite_rewards_fail: int = 1
    flat_groups_warn: float = 0.5
    """The share of reward groups with zero variance (no GRPO signal) from which to warn."""
    refused_valid_actions_fail: int = 1
    invalid_observations_fail: int = 1
    episode_error_rate_fail: float = 0.1

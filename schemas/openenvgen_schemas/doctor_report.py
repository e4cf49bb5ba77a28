"""The doctor's report: what `openenv-gen doctor` measured of one env, as versioned JSON.

`DoctorReport` is the document `--json` prints and `--html` draws, schema version
`SCHEMA_VERSION`. A consumer reads `schema_version` first; a new field that a reader may
ignore keeps the version, a renamed or removed one bumps it. Every model is frozen and
forbids unknown keys, and no number may be NaN or infinite (JSON has no such numbers; a
non-finite reward is counted in `RewardData.non_finite`, never stored).

A report holds one `Check` per kind (`CheckName`), each with a verdict, a one-line summary
and its data; the thresholds the verdicts were judged by travel with it. Times are in
milliseconds (`_ms`) or seconds (`_s`), as named. Strings that came from the env (server
messages, actions, field names, task names) are untrusted: every renderer escapes them.

This module imports only pydantic and the standard library: the runtime's doctor
(`python -m openenvgen_runtime.doctor`, in the package's interpreter) writes the document and
the generator's `openenv-gen doctor` reads and renders it, neither importing the other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from openenvgen_schemas.doctor_thresholds import Thresholds as Thresholds

SCHEMA_VERSION: Literal[1] = 1

Verdict = Literal["pass", "warn", "fail"]
"""`fail` makes `doctor` exit non-zero; `warn` is worth reading before a run; `pass` is fine."""
LaunchMode = Literal["uv", "docker", "swarm", "base_url"]
"""How the env's server was reached: a taskset launch mode, or `--base-url` (already running)."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(text: str) -> str:
    """A lone surrogate (a server can send `"\\ud800"`) as U+FFFD: JSON and UTF-8 both refuse it."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


EnvText = Annotated[str, AfterValidator(_without_lone_surrogates)]
"""Text that came from the env: untrusted, any length, made encodable."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile by linear interpolation between closest ranks (0 for none)."""
    if not sorted_values:
        return 0.0
    position = (len(sorted_values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


class Latency(_Frozen):
    """One operation's wall-clock times, each sample in ms, with its percentiles."""

    samples_ms: tuple[float, ...] = ()
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Latency:
        ordered = sorted(samples_ms)
        return cls(
            samples_ms=tuple(samples_ms),
            p50_ms=percentile(ordered, 0.50),
            p95_ms=percentile(ordered, 0.95),
            p99_ms=percentile(ordered, 0.99),
        )


class LatencyData(_Frozen):
    reset: Latency = Latency()
    step: Latency = Latency()
    startup_s: float | None = None
    """Launch to first healthy answer; None with `--base-url` (nothing was started)."""


class CapacityPoint(_Frozen):
    """`sessions` opened at once: how many were served, refused (`CAPACITY_REACHED`) or failed
    otherwise, and the median reset latency of the served ones."""

    sessions: int = Field(ge=0)
    ok: int = Field(ge=0)
    refused: int = Field(ge=0)
    failed: int = Field(default=0, ge=0)
    latency_ms: float | None = None


class CapacityData(_Frozen):
    points: tuple[CapacityPoint, ...] = ()
    bound: int = Field(ge=0)
    """The most sessions tried (the curve stops at the first refusal or here)."""
    capacity: int | None = None
    """Sessions one server held at once before refusing; None when it never refused up to `bound`."""


class SessionReleaseData(_Frozen):
    """Clients that vanished mid-episode (sockets dropped without a close) and whether the
    server freed their sessions: could as many sessions be opened again within `waited_s`."""

    vanished: int = Field(ge=0)
    released: int = Field(ge=0)
    waited_s: float = Field(ge=0)


class Mismatch(_Frozen):
    """The first difference between two plays of the same seed and actions."""

    seed: int
    step: int = Field(ge=0)
    """0 is the reset's observation."""
    field: EnvText
    """A dotted path into the reply (`observation.board[3]`, `reward`)."""
    first: EnvText
    second: EnvText
    """The two values, as short JSON text."""


class DeterminismData(_Frozen):
    pairs_compared: int = Field(ge=0)
    mismatches: tuple[Mismatch, ...] = ()


class RewardGroup(_Frozen):
    """One task's rewards (a GRPO group under this policy) and their population variance."""

    task: EnvText
    rewards: tuple[float, ...]
    variance: float = Field(ge=0)

    @classmethod
    def of(cls, task: str, rewards: Sequence[float]) -> RewardGroup:
        mean = math.fsum(rewards) / len(rewards) if rewards else 0.0
        variance = math.fsum((r - mean) ** 2 for r in rewards) / len(rewards) if rewards else 0.0
        return cls(task=task, rewards=tuple(rewards), variance=variance)


class RewardData(_Frozen):
    values: tuple[float, ...] = ()
    """Every finite reward the episodes ended with."""
    non_finite: int = Field(default=0, ge=0)
    """Rewards that were NaN or infinite (or not numbers at all), left out of `values`."""
    groups: tuple[RewardGroup, ...] = ()


class RefusedAction(_Frozen):
    """An action valid by the package's models that the server refused, and what it said."""

    action: EnvText
    """The action as compact JSON text."""
    message: EnvText


class InvalidObservation(_Frozen):
    """An observation that failed the package's observation model, at `field`."""

    field: EnvText
    message: EnvText


class SchemaFidelityData(_Frozen):
    actions_sent: int = Field(ge=0)
    refused: tuple[RefusedAction, ...] = ()
    observations_checked: int = Field(ge=0)
    invalid: tuple[InvalidObservation, ...] = ()


class EpisodeData(_Frozen):
    lengths: tuple[int, ...] = ()
    """Steps each episode took."""
    done: int = Field(default=0, ge=0)
    """Episodes the env ended (`done` true), as opposed to those cut at the turn limit or lost."""
    errors: int = Field(default=0, ge=0)
    """Episodes that ended in an error (protocol error, lost server)."""


class _Check(_Frozen):
    verdict: Verdict
    summary: EnvText
    """One line, for the terminal and the HTML page's verdict table."""


class LatencyCheck(_Check):
    name: Literal["latency"] = "latency"
    data: LatencyData


class CapacityCheck(_Check):
    name: Literal["capacity"] = "capacity"
    data: CapacityData


class SessionReleaseCheck(_Check):
    name: Literal["session_release"] = "session_release"
    data: SessionReleaseData


class DeterminismCheck(_Check):
    name: Literal["determinism"] = "determinism"
    data: DeterminismData


class RewardCheck(_Check):
    name: Literal["rewards"] = "rewards"
    data: RewardData


class SchemaFidelityCheck(_Check):
    name: Literal["schema_fidelity"] = "schema_fidelity"
    data: SchemaFidelityData


class EpisodeCheck(_Check):
    name: Literal["episodes"] = "episodes"
    data: EpisodeData


Check = Annotated[
    LatencyCheck
    | CapacityCheck
    | SessionReleaseCheck
    | DeterminismCheck
    | RewardCheck
    | SchemaFidelityCheck
    | EpisodeCheck,
    Field(discriminator="name"),
]
CheckName = Literal["latency", "capacity", "session_release", "determinism", "rewards", "schema_fidelity", "episodes"]


class DoctorReport(_Frozen):
    """Everything `doctor` measured of one env; `--json` is this, `--html` draws it."""

    schema_version: Literal[1] = SCHEMA_VERSION
    env_id: EnvText
    launch: LaunchMode
    episodes: int = Field(ge=0)
    """Episodes played by the policy (capacity and release probes are not counted)."""
    thresholds: Thresholds = Thresholds()
    checks: tuple[Check, ...]

"""Verdicts: what was measured, judged by the report's `Thresholds`, as one `DoctorReport`.

Pure. Each check's verdict and one-line summary come from its data and the thresholds only,
so a report read back says why it passed or failed (the thresholds travel in it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from openenvgen_runtime.doctor.rollouts import Measured, Play
from openenvgen_schemas.doctor_report import (
    CapacityCheck,
    CapacityData,
    Check,
    DeterminismCheck,
    DeterminismData,
    DoctorReport,
    EpisodeCheck,
    EpisodeData,
    Latency,
    LatencyCheck,
    LatencyData,
    LaunchMode,
    Mismatch,
    RewardCheck,
    RewardData,
    RewardGroup,
    SchemaFidelityCheck,
    SchemaFidelityData,
    SessionReleaseCheck,
    SessionReleaseData,
    Thresholds,
    Verdict,
)


@dataclass(frozen=True)
class Findings:
    """Everything one doctor run measured, before judging."""

    env_id: str
    launch: LaunchMode
    startup_s: float | None
    measured: Measured
    capacity: CapacityData
    release: SessionReleaseData
    pairs_compared: int
    mismatches: tuple[Mismatch, ...]


def report(findings: Findings, thresholds: Thresholds) -> DoctorReport:
    measured = findings.measured
    checks: tuple[Check, ...] = (
        latency(measured, findings.startup_s, thresholds),
        capacity(findings.capacity, thresholds),
        release(findings.release, thresholds),
        determinism(findings.pairs_compared, findings.mismatches, thresholds),
        rewards(measured.plays, thresholds),
        schema_fidelity(measured, thresholds),
        episodes(measured.plays, thresholds),
    )
    return DoctorReport(
        env_id=findings.env_id,
        launch=findings.launch,
        episodes=len(measured.plays),
        thresholds=thresholds,
        checks=checks,
    )


def _worst(*verdicts: Verdict) -> Verdict:
    return "fail" if "fail" in verdicts else "warn" if "warn" in verdicts else "pass"


def _level(value: float, warn: float, fail: float) -> Verdict:
    return "fail" if value > fail else "warn" if value > warn else "pass"


def latency(measured: Measured, startup_s: float | None, t: Thresholds) -> LatencyCheck:
    data = LatencyData(reset=Latency.of(measured.reset_ms), step=Latency.of(measured.step_ms), startup_s=startup_s)
    if not measured.step_ms:
        verdict: Verdict = "warn"
        summary = "no step was answered: nothing to measure"
    else:
        verdict = _worst(
            _level(data.step.p95_ms, t.step_p95_warn_ms, t.step_p95_fail_ms),
            _level(data.reset.p95_ms, t.reset_p95_warn_ms, t.reset_p95_fail_ms),
            "warn" if startup_s is not None and startup_s > t.startup_warn_s else "pass",
        )
        summary = (
            f"step p50 {data.step.p50_ms:.1f} ms, p95 {data.step.p95_ms:.1f} ms, p99 {data.step.p99_ms:.1f} ms; "
            f"reset p95 {data.reset.p95_ms:.1f} ms"
        )
    if startup_s is not None:
        summary += f"; start-up {startup_s:.1f} s"
    return LatencyCheck(verdict=verdict, summary=summary, data=data)


def capacity(data: CapacityData, t: Thresholds) -> CapacityCheck:
    first = data.points[0] if data.points else None
    if first is None or first.ok == 0:
        return CapacityCheck(verdict="fail", summary="the server admitted no session", data=data)
    if data.capacity is None:
        failed = sum(p.failed for p in data.points)
        if failed:
            held = data.points[-1].ok
            return CapacityCheck(
                verdict="warn",
                summary=f"held {held} sessions; {failed} more failed without CAPACITY_REACHED",
                data=data,
            )
        return CapacityCheck(verdict="pass", summary=f"held {data.bound} sessions at once (the bound)", data=data)
    verdict: Verdict = "warn" if data.capacity < t.min_capacity_warn else "pass"
    summary = f"one server held {data.capacity} session(s); the next was refused (CAPACITY_REACHED)"
    if verdict == "warn":
        summary += f": a run needs a server per {data.capacity} rollout(s)"
    return CapacityCheck(verdict=verdict, summary=summary, data=data)


def release(data: SessionReleaseData, t: Thresholds) -> SessionReleaseCheck:
    if data.vanished == 0:
        return SessionReleaseCheck(
            verdict="pass",
            summary="not measured: the server never refused a session, so freed ones cannot be told apart",
            data=data,
        )
    if data.released >= data.vanished:
        summary = f"{data.vanished} vanished clients' sessions were freed within {data.waited_s:.1f} s"
        return SessionReleaseCheck(verdict="pass", summary=summary, data=data)
    summary = (
        f"{data.vanished - data.released} of {data.vanished} sessions of vanished clients were still held "
        f"after {t.release_wait_s:g} s: a crashed worker leaks server capacity"
    )
    return SessionReleaseCheck(verdict="fail", summary=summary, data=data)


def determinism(pairs: int, mismatches: tuple[Mismatch, ...], t: Thresholds) -> DeterminismCheck:
    data = DeterminismData(pairs_compared=pairs, mismatches=mismatches)
    if not pairs:
        return DeterminismCheck(verdict="warn", summary="no episode could be replayed", data=data)
    if not mismatches:
        return DeterminismCheck(
            verdict="pass", summary=f"{pairs} seed(s) replayed with the same actions gave the same replies", data=data
        )
    first = mismatches[0]
    verdict: Verdict = "fail" if len(mismatches) >= t.determinism_mismatches_fail else "warn"
    summary = (
        f"{len(mismatches)} of {pairs} seed(s) replayed differed; seed {first.seed} first at "
        f"step {first.step}, {first.field}"
    )
    return DeterminismCheck(verdict=verdict, summary=summary, data=data)


def rewards(plays: list[Play], t: Thresholds) -> RewardCheck:
    values = [p.reward for p in plays if p.error is None and p.reward is not None]
    non_finite = sum(p.reward is None for p in plays)
    by_task: dict[str, list[float]] = defaultdict(list)
    for play in plays:
        if play.error is None and play.reward is not None:
            by_task[play.task].append(play.reward)
    groups = tuple(RewardGroup.of(task, found) for task, found in by_task.items() if len(found) > 1)
    data = RewardData(values=tuple(values), non_finite=non_finite, groups=groups)
    if non_finite >= t.non_finite_rewards_fail:
        summary = f"{non_finite} episode(s) had a reward that is no finite number"
        return RewardCheck(verdict="fail", summary=summary, data=data)
    if not values:
        return RewardCheck(verdict="warn", summary="no episode ended with a reward", data=data)
    flat = sum(g.variance == 0 for g in groups)
    span = f"rewards {min(values):g} to {max(values):g} over {len(values)} episodes"
    if groups and flat / len(groups) >= t.flat_groups_warn:
        summary = f"{span}; {flat} of {len(groups)} groups have zero variance: GRPO sees no signal there"
        return RewardCheck(verdict="warn", summary=summary, data=data)
    if len(set(values)) == 1:
        return RewardCheck(verdict="warn", summary=f"every episode earned {values[0]:g}: no signal", data=data)
    summary = f"{span}; {flat} of {len(groups)} groups have zero variance" if groups else span
    return RewardCheck(verdict="pass", summary=summary, data=data)


def schema_fidelity(measured: Measured, t: Thresholds) -> SchemaFidelityCheck:
    data = SchemaFidelityData(
        actions_sent=measured.actions_sent,
        refused=tuple(measured.refused),
        observations_checked=measured.observations_checked,
        invalid=tuple(measured.invalid),
    )
    problems = []
    if measured.refused_count:
        problems.append(
            f"{measured.refused_count} of {measured.actions_sent} schema-valid actions refused: "
            f"{measured.refused[0].message}"
        )
    if measured.invalid_count:
        problems.append(
            f"{measured.invalid_count} of {measured.observations_checked} observations failed the model at "
            f"{measured.invalid[0].field}"
        )
    failed = (
        measured.refused_count >= t.refused_valid_actions_fail or measured.invalid_count >= t.invalid_observations_fail
    )
    if problems:
        return SchemaFidelityCheck(verdict="fail" if failed else "warn", summary="; ".join(problems), data=data)
    summary = (
        f"{measured.actions_sent} schema-valid actions accepted, "
        f"{measured.observations_checked} observations fit the models"
    )
    return SchemaFidelityCheck(verdict="pass", summary=summary, data=data)


def episodes(plays: list[Play], t: Thresholds) -> EpisodeCheck:
    lengths = tuple(len(p.actions) for p in plays)
    done = sum(p.done for p in plays)
    errors = [p.error for p in plays if p.error is not None]
    data = EpisodeData(lengths=lengths, done=done, errors=len(errors))
    if not plays:
        return EpisodeCheck(verdict="fail", summary="no episode was played", data=data)
    share = len(errors) / len(plays)
    summary = (
        f"{len(plays)} episodes, {min(lengths)} to {max(lengths)} steps, "
        f"{math.floor(100 * done / len(plays))}% ended by the env"
    )
    if errors:
        summary += f"; {len(errors)} ended in an error: {errors[0]}"
    verdict: Verdict = "fail" if share > t.episode_error_rate_fail else "warn" if errors or not done else "pass"
    if not done and not errors:
        summary += " (none ended by the env within the step limit)"
    return EpisodeCheck(verdict=verdict, summary=summary, data=data)

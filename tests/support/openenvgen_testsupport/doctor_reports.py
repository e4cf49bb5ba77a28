"""Doctor reports to render in tests: every check filled with plausible, seeded data, and a
hostile variant whose env-given strings try to break out of the page or the terminal.

`sample_report()` is the same document every call (seeded); `HOSTILE` is what a server could
put in a message, a task name or an observation field, all at once.
"""

from __future__ import annotations

import random

from openenvgen_schemas.doctor_report import (
    CapacityCheck,
    CapacityData,
    CapacityPoint,
    Check,
    DeterminismCheck,
    DeterminismData,
    DoctorReport,
    EpisodeCheck,
    EpisodeData,
    InvalidObservation,
    Latency,
    LatencyCheck,
    LatencyData,
    Mismatch,
    RefusedAction,
    RewardCheck,
    RewardData,
    RewardGroup,
    SchemaFidelityCheck,
    SchemaFidelityData,
    SessionReleaseCheck,
    SessionReleaseData,
)

__all__ = ["HOSTILE", "sample_report"]

HOSTILE = (
    "</td></table><script>alert('x')</script>"
    '<img src="https://evil.example/p.png" onerror="alert(1)">'
    "\x1b[2J\x1b]0;owned\x07[bold red]markup[/bold red]\n\rsecond line \ud800 end"
)
"""Closes the table and runs a script, loads a remote image, clears the terminal and sets its
title, speaks rich markup, breaks the line, and holds a lone surrogate."""


def _checks(text: str, *, fail: bool) -> tuple[Check, ...]:
    draw = random.Random(40)
    step = [round(draw.lognormvariate(3.0, 0.4), 3) for _ in range(120)]
    reset = [round(draw.lognormvariate(4.0, 0.3), 3) for _ in range(24)]
    rewards = [round(draw.choice((0.0, 0.0, 0.25, 0.5, 1.0)), 2) for _ in range(24)]
    capacity = [
        CapacityPoint(sessions=n, ok=n, refused=0, latency_ms=round(40 + 6 * n + draw.random(), 2))
        for n in (1, 2, 4, 8)
    ] + [CapacityPoint(sessions=16, ok=8, refused=8, latency_ms=95.5)]
    return (
        LatencyCheck(
            verdict="pass",
            summary="step p95 41.0 ms, reset p95 88.1 ms, start-up 3.2 s",
            data=LatencyData(reset=Latency.of(reset), step=Latency.of(step), startup_s=3.2),
        ),
        CapacityCheck(
            verdict="warn",
            summary="one server held 8 sessions; the 9th was refused (CAPACITY_REACHED)",
            data=CapacityData(points=tuple(capacity), bound=16, capacity=8),
        ),
        SessionReleaseCheck(
            verdict="pass",
            summary="4 vanished clients' sessions were freed within 1.5 s",
            data=SessionReleaseData(vanished=4, released=4, waited_s=1.5),
        ),
        DeterminismCheck(
            verdict="fail" if fail else "pass",
            summary=f"1 of 6 seeds played twice differed at observation.text: {text}",
            data=DeterminismData(
                pairs_compared=6,
                mismatches=(Mismatch(seed=3, step=2, field="observation.text", first=f'"{text}"', second='"b"'),),
            ),
        ),
        RewardCheck(
            verdict="pass",
            summary="rewards 0 to 1 over 24 episodes; 1 of 4 groups has zero variance",
            data=RewardData(
                values=tuple(rewards),
                non_finite=0,
                groups=tuple(RewardGroup.of(f"task-{i} {text}", rewards[i * 6 : i * 6 + 6]) for i in range(3))
                + (RewardGroup.of("task-3", [0.5] * 6),),
            ),
        ),
        SchemaFidelityCheck(
            verdict="fail" if fail else "pass",
            summary=f"1 of 60 schema-valid actions refused: {text}",
            data=SchemaFidelityData(
                actions_sent=60,
                refused=(RefusedAction(action=f'{{"message": "{text}"}}', message=f"server said: {text}"),),
                observations_checked=84,
                invalid=(InvalidObservation(field=f"observation.{text}", message=text),),
            ),
        ),
        EpisodeCheck(
            verdict="pass",
            summary="24 episodes, 3 to 6 steps, 83% ended by the env",
            data=EpisodeData(lengths=tuple(draw.randint(3, 6) for _ in range(24)), done=20, errors=0),
        ),
    )


def sample_report(*, hostile: bool = False, fail: bool = True) -> DoctorReport:
    """A report of every check; with `hostile`, `HOSTILE` is in the env id and every place a
    server's text lands; with `fail`, two checks fail (else none does)."""
    text = HOSTILE if hostile else "seed 3 gave 'b'"
    return DoctorReport(
        env_id=f"hostile {HOSTILE}" if hostile else "wordle",
        launch="uv",
        episodes=24,
        checks=_checks(text, fail=fail),
    )

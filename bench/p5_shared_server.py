"""P5: episodes on one shared `base_url` server (the concurrent-safe guess-the-number app,
bench/envs/guess_concurrent.py), real `vf-eval` runs of 64 episodes at 16 (quick: 32), three
sides interleaved, the order reversed each round: ours on its in-process seat, ours on
verifiers' `null` seat, the built-in on `null`. P5 is seat and adapter together (ours
in-process over the built-in, >= 10x), P5-adapter the adapter alone (both on `null`, never
slower), P5-seat the seat alone (shown). Rates are successful episodes per minute over the
episode phase (first rollout's start to last one's end, from the traces).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import CONCURRENT_APP, VARIANTS, cli, guess_setup, row, run_eval

from openenvgen_testsupport.paths import UV_FIXTURE_PROJECT

TARGET_SPEEDUP = 10.0


def _key(run: dict[str, Any]) -> str:
    return f"{run['adapter']}/{run['seat']}"


def _rate_ratio(a: list[dict[str, Any]], b: list[dict[str, Any]], field: str) -> float | None:
    """mean(a) / mean(b) of a successful-per-minute field."""
    top = [x[field] for x in a if x.get(field) is not None]
    bottom = [x[field] for x in b if x.get(field) is not None]
    if not top or not bottom or not sum(bottom):
        return None
    return round((sum(top) / len(top)) / (sum(bottom) / len(bottom)), 2)


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    with guess_setup(workdir, shared=True) as (package_dir, model_url, url):
        episodes, concurrency = (32, 16) if quick else (64, 16)
        rounds = 1 if quick else 2
        runs: list[dict[str, Any]] = []
        for r in range(rounds):
            for adapter, seat in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                out = workdir / f"p5-{r}-{adapter}-{seat}"
                runs.append(
                    run_eval(adapter, {"base_url": url}, episodes, concurrency, model_url, package_dir, out, 1200, seat)
                )
        by = {f"{a}/{s}": [x for x in runs if x["adapter"] == a and x["seat"] == s] for a, s in VARIANTS}
        ours, ours_null, builtin = by["runtime/in-process"], by["runtime/null"], by["builtin/null"]
        all_ok = all(x["ok"] == episodes for x in runs)
        phase, wall = "successful_per_min_episode_phase", "successful_per_min"
        measured = "; ".join(
            f"{_key(x)} {x['ok']}/{episodes} ok, episode phase {x['episode_phase_s']} s ({x[phase]}/min), "
            f"wall {x['wall_s']} s ({x[wall]}/min)"
            for x in runs
        )
        server = f"{CONCURRENT_APP} via OpenEnv's UV provider, project {UV_FIXTURE_PROJECT.name}"
        title = f"one shared `base_url` server, {episodes} episodes at {concurrency}"
        over = f"successful per minute over the episode phase (mean of {rounds})"
        both = _rate_ratio(ours, builtin, phase)
        adapter = _rate_ratio(ours_null, builtin, phase)
        seat = _rate_ratio(ours, ours_null, phase)
        rows = [
            (
                "P5",
                "**seat and adapter together**, ours in-process vs the built-in on `null`",
                f"all ok and ≥ {TARGET_SPEEDUP:g}x the built-in's successful episodes/min",
                both,
                all_ok and both is not None and both >= TARGET_SPEEDUP,
                f"ours in-process / built-in null, {over}; with vf-eval's start-up in the wall time: "
                f"{_rate_ratio(ours, builtin, wall)}",
            ),
            (
                "P5-adapter",
                "**the adapter alone**, ours vs the built-in, both on `null`",
                "all ok and never slower (≥ 1.0)",
                adapter,
                all_ok and adapter is not None and adapter >= 1.0,
                f"ours null / built-in null, {over}; wall: {_rate_ratio(ours_null, builtin, wall)}",
            ),
            (
                "P5-seat",
                "**the seat alone**, ours in-process vs ours on `null`",
                "(informational) what the seat is worth on the same adapter",
                seat,
                None,
                f"ours in-process / ours null, {over}; wall: {_rate_ratio(ours, ours_null, wall)}",
            ),
        ]
        return [
            row(bid, f"{title}: {what}", target, measured, ratio, meets, label, server=server, runs=runs, rounds=rounds)
            for bid, what, target, ratio, meets, label in rows
        ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

"""P5 (P5, P5-adapter, P5-seat) and P5-single: episodes on one shared `base_url` server.

One server started here (OpenEnv's UV provider, the project of bench/vf_eval_runs.py) and
given to all three sides as `base_url`: ours in-process, ours on `null`, the built-in on
`null`, interleaved (the order reversed on each round). The fixture app allows one
session, so a shared server would refuse concurrent episodes; P5 serves the same env class
marked concurrent-safe (bench/envs/guess_concurrent.py). `P5-single` runs the unmodified
single-session app as the shared server and reports what each adapter does with it. Rates
are successful episodes per minute over the episode phase (first rollout start to last
rollout end, from the traces), and over the vf-eval process's wall time (its start-up
included).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import CONCURRENT_APP
from vf_eval_runs import VARIANTS, run_eval, uv_server

from openenvgen_testsupport.paths import UV_FIXTURE_APP, UV_FIXTURE_PROJECT

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


def run(quick: bool, workdir: Path, package_dir: Path, model_url: str, url: str) -> list[dict[str, Any]]:
    """Three comparisons from one set of interleaved runs on one shared server."""
    episodes, concurrency = (32, 16) if quick else (64, 16)
    rounds = 1 if quick else 2
    runs: list[dict[str, Any]] = []
    for r in range(rounds):
        for adapter, seat in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            runs.append(
                run_eval(
                    adapter,
                    {"base_url": url},
                    episodes=episodes,
                    concurrency=concurrency,
                    model_url=model_url,
                    package_dir=package_dir,
                    out_dir=workdir / f"p5-{r}-{adapter}-{seat}",
                    timeout=1200,
                    seat=seat,
                )
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
    common = {"measured": measured, "details": {"server": server, "runs": runs, "rounds": rounds}}
    title = f"one shared `base_url` server, {episodes} episodes at {concurrency}"
    both = _rate_ratio(ours, builtin, phase)
    adapter = _rate_ratio(ours_null, builtin, phase)
    seat = _rate_ratio(ours, ours_null, phase)
    return [
        {
            "id": "P5",
            "title": f"{title}: **seat and adapter together**, ours on its in-process seat vs the built-in on `null`",
            "target": f"all ok and ≥ {TARGET_SPEEDUP:g}x the built-in's successful episodes/min",
            "ratio": both,
            "ratio_label": "ours in-process / built-in null, successful per minute over the episode phase "
            f"(mean of {rounds}); with vf-eval's start-up in the wall time: {_rate_ratio(ours, builtin, wall)}",
            "meets_target": all_ok and both is not None and both >= TARGET_SPEEDUP,
            **common,
        },
        {
            "id": "P5-adapter",
            "title": f"{title}: **the adapter alone**, ours vs the built-in, both on `null`",
            "target": "all ok and never slower (≥ 1.0)",
            "ratio": adapter,
            "ratio_label": "ours null / built-in null, successful per minute over the episode phase "
            f"(mean of {rounds}); wall: {_rate_ratio(ours_null, builtin, wall)}",
            "meets_target": all_ok and adapter is not None and adapter >= 1.0,
            **common,
        },
        {
            "id": "P5-seat",
            "title": f"{title}: **the seat alone**, ours in-process vs ours on `null`",
            "target": "(informational) what the seat is worth on the same adapter",
            "ratio": seat,
            "ratio_label": "ours in-process / ours null, successful per minute over the episode phase "
            f"(mean of {rounds}); wall: {_rate_ratio(ours, ours_null, wall)}",
            "meets_target": None,
            **common,
        },
    ]


def run_single(
    workdir: Path, package_dir: Path, model_url: str, episodes: int = 16, concurrency: int = 4
) -> dict[str, Any]:
    """The unmodified single-session fixture app as the one shared server."""
    runs = []
    with uv_server(UV_FIXTURE_APP) as url:
        for adapter in ("builtin", "runtime"):
            runs.append(
                run_eval(
                    adapter,
                    {"base_url": url},
                    episodes=episodes,
                    concurrency=concurrency,
                    model_url=model_url,
                    package_dir=package_dir,
                    out_dir=workdir / f"p5single-{adapter}",
                    timeout=900,
                )
            )
    ours, builtin = runs[1], runs[0]
    return {
        "id": "P5-single",
        "title": f"one shared single-session server (the fixture app as is), {episodes} episodes at {concurrency}",
        "target": "(informational) what each adapter does when the shared server takes one session",
        "measured": "; ".join(
            f"{x['adapter']} {x['ok']}/{episodes} ok in {x['wall_s']} s, errors {x['errors']}" for x in runs
        ),
        "ratio": round(builtin["wall_s"] / ours["wall_s"], 3) if ours["wall_s"] else None,
        "ratio_label": "built-in wall / runtime wall",
        "meets_target": None,
        "details": {"runs": runs},
    }

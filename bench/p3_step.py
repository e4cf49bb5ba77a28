"""P3: per-step cost of the runtime's episode loop vs a raw OpenEnv `GenericEnvClient` loop.

One loopback server (the Wordle fixture, `openenvgen_testsupport.fixture_envs:wordle_app`, in its
own uvicorn process so it never shares this process's GIL), one WebSocket session per
loop, each reset (untimed) every 200 steps with `max_guesses` high enough that no step
ends the game. Every step is timed on its own.

- raw: `await client.step({"message": "[slate]"})`, a dict action, nothing else.
- runtime: what `openenvgen_runtime.episode.play` does per step besides asking the
  model: `ActionSpace.parse` of the reply text `"[slate]"` (decode, one-required-field
  fallback, validation by the generated typed model, dump), `episode._step` (the
  runtime's step helper around `client.step`), summing the reward, and rendering the
  next user turn (`episode.next_turn`: the observation through the observation view,
  hidden fields out, media scanned for, plus the live action schema, as JSON).

The model/harness part is verifiers' and identical for both, so it is left out. The
loops take turns step by step, the order rotating every round (ABAB, BABA, ...), so the
load of a busy machine hits all alike; the ratio is of the medians of per-step times.
Three diagnostic loops run in the same rotation to attribute the difference in place:
raw + parse only, raw + turn rendering only, and raw + 10 µs of spinning (calibration).
The same calls are also timed in a hot loop without I/O (`timeit`), which understates
them: between two socket round trips the CPU caches are cold.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import log, median

from openenvgen_testsupport.paths import OPENENV_GEN

TARGET_RATIO = 1.05
REPLY = "[slate]"
ACTION = {"message": "[slate]"}


def _generate_fixture_package(url: str, out_root: Path) -> Any:
    """The Wordle fixture's adapter package, generated from the live server, imported."""
    out = out_root / "benchwordle"
    proc = subprocess.run(
        [OPENENV_GEN, "benchwordle", "--base-url", url, "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"openenv-gen benchwordle failed: {proc.stderr.strip()}")
    sys.path.insert(0, str(out))
    import importlib

    return importlib.import_module("benchwordle_openenv.models")


def _variants(space: Any, step: Any, turn: Any, score: Any) -> dict[str, Any]:
    """Per-step bodies, each on its own session. `raw` and `runtime` are the comparison;
    the others attribute the difference in place (a hot-loop timing of the same calls
    says far less: between two socket round trips the caches are cold)."""

    async def raw(client: Any) -> Any:
        return await client.step(ACTION)

    async def runtime(client: Any) -> Any:
        result = await step(client, space.parse(REPLY))
        score.add(result.reward)
        await turn(result.observation, space, result.reward)
        return result

    async def parse_only(client: Any) -> Any:
        return await client.step(space.parse(REPLY))

    async def turn_only(client: Any) -> Any:
        result = await client.step(ACTION)
        await turn(result.observation, space, result.reward)
        return result

    async def busy_10us(client: Any) -> Any:  # calibration: raw + 10 µs of spinning
        result = await client.step(ACTION)
        until = time.perf_counter() + 10e-6
        while time.perf_counter() < until:
            pass
        return result

    return {"raw": raw, "runtime": runtime, "raw+parse": parse_only, "raw+turn": turn_only, "raw+10µs busy": busy_10us}


async def _interleaved(url: str, rounds: int, per_session: int, variants: dict[str, Any]) -> dict[str, list[float]]:
    """Per-step seconds of every variant, rotating the order every round, one session
    each on the same server, every session reset (untimed) every `per_session` rounds."""
    from openenv import GenericEnvClient

    names = list(variants)
    clients = {name: GenericEnvClient(base_url=url) for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    try:
        for i in range(rounds):
            if i % per_session == 0:
                for client in clients.values():
                    await client.reset(max_guesses=per_session + 10)
            k = i % len(names)
            for name in names[k:] + names[:k]:
                start = time.perf_counter()
                result = await variants[name](clients[name])
                times[name].append(time.perf_counter() - start)
                assert not result.done, "the game ended inside a timed block"
    finally:
        for client in clients.values():
            await client.close()
    return times


def _quantiles(values: list[float]) -> list[float]:
    deciles = statistics.quantiles(values, n=10)
    return [deciles[0], statistics.median(values), deciles[-1]]


def _cpu_breakdown(space: Any, turn: Any, observation: dict[str, Any], n: int = 20000) -> dict[str, float]:
    """Microseconds per call of the runtime's per-step work, no I/O (best of 5 runs)."""
    import timeit

    def drive(coroutine: Any) -> Any:
        # `next_turn` is a coroutine only because an asset may need fetching; without one
        # it never suspends, so it is run to its end here without an event loop's overhead.
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        raise RuntimeError("next_turn suspended: it fetched an asset")

    # Only what the runtime runs per step: a one-string-field reply skips JSON decoding, and
    # the schema's JSON is built once per action space (`prompt_schema_json`).
    parts = {
        "parse_total": lambda: space.parse(REPLY),
        "parse.validate_and_dump": lambda: space.action_model.model_validate(ACTION).model_dump(
            mode="json", exclude_unset=True
        ),
        "turn_total": lambda: drive(turn(observation, space, 0.0)),
        "step_loop_total (parse + turn)": lambda: (space.parse(REPLY), drive(turn(observation, space, 0.0))),
    }
    return {name: round(min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6, 2) for name, fn in parts.items()}


def run(quick: bool, workdir: Path) -> dict[str, Any]:
    import httpx

    from openenvgen_runtime.actions import ActionSpace
    from openenvgen_runtime.episode import _step, next_turn
    from openenvgen_runtime.observations import ObservationView
    from openenvgen_runtime.scoring import Score
    from openenvgen_testsupport.servers import serve_app_subprocess

    rounds = 2000 if quick else 5000
    per_session = 200
    with serve_app_subprocess("openenvgen_testsupport.fixture_envs:wordle_app", ready_path="/health") as url:
        models = _generate_fixture_package(str(url), Path(tempfile.mkdtemp(prefix="p3-", dir=workdir)))
        schema = httpx.get(f"{url}/schema", timeout=10).json()["action"]
        space = ActionSpace(action_model=models.WordGuessAction, action_schema=schema)
        assert space.parse(REPLY) == ACTION, space.parse(REPLY)
        view = ObservationView(asset_base_url=str(url))

        async def turn(observation: dict[str, Any], space: ActionSpace, reward: float | None) -> Any:
            return await next_turn(view, space, observation, reward)

        variants = _variants(space, _step, turn, Score())

        async def main() -> tuple[dict[str, list[float]], dict[str, Any]]:
            await _interleaved(url, 100, 100, variants)  # warm-up: connections, first-call caches
            times = await _interleaved(url, rounds, per_session, variants)
            from openenv import GenericEnvClient

            client = GenericEnvClient(base_url=url)
            try:
                observation = (await client.reset()).observation
            finally:
                await client.close()
            return times, observation

        times, observation = asyncio.run(main())
    raw, ours = times["raw"], times["runtime"]
    breakdown = _cpu_breakdown(space, turn, observation)
    cpu = breakdown["step_loop_total (parse + turn)"] / 1e6
    raw_med, ours_med = median(raw), median(ours)
    ratio = ours_med / raw_med
    log(
        f"P3 raw {raw_med * 1e6:.0f} us/step, runtime {ours_med * 1e6:.0f} us/step, "
        f"ratio {ratio:.3f} (target {TARGET_RATIO})"
    )
    return {
        "id": "P3",
        "title": "per-step cost: runtime episode loop vs raw `GenericEnvClient` loop",
        "target": f"ratio ≤ {TARGET_RATIO}",
        "measured": f"raw {raw_med * 1e6:.0f} µs/step, runtime {ours_med * 1e6:.0f} µs/step",
        "ratio": round(ratio, 3),
        "ratio_label": "runtime / raw (median per-step)",
        "meets_target": ratio <= TARGET_RATIO,
        "details": {
            "server": "openenvgen_testsupport.fixture_envs:wordle_app (uvicorn subprocess, loopback)",
            "steps_each": rounds,
            "steps_per_session": per_session,
            "raw_us_per_step_p10_p50_p90": [round(x * 1e6, 1) for x in _quantiles(raw)],
            "runtime_us_per_step_p10_p50_p90": [round(x * 1e6, 1) for x in _quantiles(ours)],
            "ratio_of_means": round(statistics.fmean(ours) / statistics.fmean(raw), 3),
            "in_place_us_over_raw_p50": {
                name: round((median(v) - raw_med) * 1e6, 1) for name, v in times.items() if name != "raw"
            },
            "runtime_cpu_us_per_step_no_io": breakdown,
            "expected_ratio_from_cpu": round((raw_med + cpu) / raw_med, 3),
        },
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    ns = parser.parse_args()
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-"))), indent=2))

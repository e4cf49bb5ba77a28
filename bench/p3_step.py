"""P3: per-step cost of the runtime's episode loop vs a raw OpenEnv `GenericEnvClient` loop.

One loopback server (the Wordle fixture, `openenvgen_testsupport.fixture_envs:wordle_app`, in its
own uvicorn process so it never shares this process's GIL), one WebSocket session per
loop, each reset (untimed) every 200 steps with `max_guesses` high enough that no step
ends the game. Every step is timed on its own.

- raw: `await client.step({"message": "[slate]"})`, a dict action, nothing else.
- runtime: what `openenvgen_runtime.episodes.episode.play` does per step besides asking the
  model, on the runtime's own session client (`fleet.pool.session_client`: OpenEnv's
  `GenericEnvClient` whose replies are judged, `turn.replies`): `ActionSpace.parse` of the
  reply text `"[slate]"` (decode, one-required-field fallback; the generated model takes
  any string as `message`, so the bare reply is the action with no validation to run,
  `passthrough`), `episode._step` (its public `client.step`, the reply judged, failures
  read), summing the reward, and rendering the next user turn (`episode.next_turn`: the
  observation through the observation view, hidden fields out, media scanned for, plus the
  live action schema, as JSON).

The model/harness part is verifiers' and identical for both, so it is left out. The
loops take turns step by step, in a new random order every round (seeded), so the load of
a busy machine hits all alike and no loop always follows the same one; at every reset the
sessions are dealt out to the loops anew, so no loop keeps a session (a connection) that
happens to be served faster (the runtime's loops share the judged sessions among them,
the others OpenEnv's plain ones). The ratio is of the medians of per-step times. An A/A
control runs in the same rotation: a second raw loop, whose ratio to raw (ideally 1)
shows how far the machine's noise alone moves such a ratio in this run; the paired
estimates (the median of the per-round differences, over raw's median) are given beside
both, and so is the ratio of this process's CPU time per step (`time.process_time`),
which waits for neither the server nor the scheduler and so moves least with the
machine's load (the server's work is the same for every loop). Four diagnostic loops
attribute the difference in place: the runtime's step alone, raw + parse only, raw +
turn rendering only, and raw + 10 µs of spinning (calibration). The same calls are also
timed in a hot loop without I/O (`timeit`), which understates them: between two socket
round trips the CPU caches are cold.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from common import log, median

from openenvgen_testsupport.paths import OPENENV_GEN

TARGET_RATIO = 1.10
REPLY = "[slate]"
AA = "raw (A/A control)"
SEED = 20250
"""Of the loops' order in each round: the same run twice takes the same orders."""
ACTION = {"message": "[slate]"}


def generate_fixture_package(url: str, out_root: Path) -> Any:
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

    async def step_only(client: Any) -> Any:
        return await step(client, ACTION)

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

    return {
        "raw": raw,
        AA: raw,  # the A/A control: the same loop again, on its own session
        "runtime": runtime,
        "runtime's step alone": step_only,
        "raw+parse": parse_only,
        "raw+turn": turn_only,
        "raw+10µs busy": busy_10us,
    }


async def _interleaved(
    url: str, rounds: int, per_session: int, variants: dict[str, Any]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per-step seconds of every variant, wall and this process's CPU, in a new random
    (seeded) order every round, one session each on the same server; every `per_session`
    rounds each session is reset (untimed) and the sessions are dealt out to the variants anew."""
    names = list(variants)
    groups = [[n for n in names if n in JUDGED], [n for n in names if n not in JUDGED]]
    sessions = {name: _session(name, url) for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    order = random.Random(SEED)
    clients: dict[str, Any] = {}
    try:
        for i in range(rounds):
            if i % per_session == 0:
                for client in sessions.values():
                    await client.reset(max_guesses=per_session + 10)
                # Dealt anew within each kind of client (the runtime's judged one, OpenEnv's own).
                clients = {
                    name: sessions[dealt]
                    for group in groups
                    for name, dealt in zip(group, order.sample(group, len(group)), strict=True)
                }
            for name in order.sample(names, len(names)):
                start, start_cpu = time.perf_counter(), time.process_time()
                result = await variants[name](clients[name])
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
                assert not result.done, "the game ended inside a timed block"
    finally:
        for client in sessions.values():
            await client.close()
    return times, cpu


JUDGED = ("runtime", "runtime's step alone")
"""The loops that step on the runtime's own session client (replies judged, `turn.replies`),
as the episode loop does; the others on OpenEnv's `GenericEnvClient`."""


def _session(name: str, url: str) -> Any:
    if name not in JUDGED:
        from openenv import GenericEnvClient

        return GenericEnvClient(base_url=url)
    from openenvgen_runtime.config import AdapterConfig
    from openenvgen_runtime.fleet.pool import session_client

    # The taskset config's defaults, without building a config (which needs an env or a URL).
    fields = ("reply_timeout", "max_reply_mb", "max_observation_chars", "observation_overflow")
    defaults = SimpleNamespace(**{key: AdapterConfig.model_fields[key].default for key in fields})
    return session_client(defaults, url)  # type: ignore[arg-type]


def _paired(ours: list[float], raw: list[float]) -> float:
    """The median of the per-round differences `ours - raw` (the same round, seconds apart)."""
    return statistics.median(a - b for a, b in zip(ours, raw, strict=True))


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
        "validate_and_dump (skipped by parse)": lambda: space.action_model.model_validate(ACTION).model_dump(
            mode="json", exclude_unset=True
        ),
        "turn_total": lambda: drive(turn(observation, space, 0.0)),
        "step_loop_total (parse + turn)": lambda: (space.parse(REPLY), drive(turn(observation, space, 0.0))),
    }
    return {name: round(min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6, 2) for name, fn in parts.items()}


def run(quick: bool, workdir: Path) -> dict[str, Any]:
    import httpx

    from openenvgen_runtime.episodes.episode import _step, next_turn
    from openenvgen_runtime.turn.actions import ActionSpace
    from openenvgen_runtime.turn.observations import ObservationView
    from openenvgen_runtime.turn.scoring import Score
    from openenvgen_testsupport.servers import serve_app_subprocess

    rounds = 2000 if quick else 5000
    per_session = 200
    with serve_app_subprocess("openenvgen_testsupport.fixture_envs:wordle_app", ready_path="/health") as url:
        models = generate_fixture_package(str(url), Path(tempfile.mkdtemp(prefix="p3-", dir=workdir)))
        schema = httpx.get(f"{url}/schema", timeout=10).json()["action"]
        space = ActionSpace(action_model=models.WordGuessAction, action_schema=schema)
        assert space.parse(REPLY) == ACTION, space.parse(REPLY)
        view = ObservationView(asset_base_url=str(url))

        async def turn(observation: dict[str, Any], space: ActionSpace, reward: float | None) -> Any:
            return await next_turn(view, space, observation, reward)

        variants = _variants(space, _step, turn, Score())

        async def main() -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, Any]]:
            await _interleaved(url, 100, 100, variants)  # warm-up: connections, first-call caches
            times, cpu_times = await _interleaved(url, rounds, per_session, variants)
            from openenv import GenericEnvClient

            client = GenericEnvClient(base_url=url)
            try:
                observation = (await client.reset()).observation
            finally:
                await client.close()
            return times, cpu_times, observation

        times, cpu_times, observation = asyncio.run(main())
    raw, ours, aa = times["raw"], times["runtime"], times[AA]
    breakdown = _cpu_breakdown(space, turn, observation)
    cpu = breakdown["step_loop_total (parse + turn)"] / 1e6
    raw_med, ours_med = median(raw), median(ours)
    ratio, aa_ratio = ours_med / raw_med, median(aa) / raw_med
    paired = 1 + _paired(ours, raw) / raw_med
    paired_aa = 1 + _paired(aa, raw) / raw_med
    raw_cpu = median(cpu_times["raw"])
    cpu_ratio, cpu_aa = median(cpu_times["runtime"]) / raw_cpu, median(cpu_times[AA]) / raw_cpu
    log(
        f"P3 raw {raw_med * 1e6:.0f} us/step, runtime {ours_med * 1e6:.0f} us/step, "
        f"ratio {ratio:.3f} (target {TARGET_RATIO}); A/A {aa_ratio:.3f}; paired {paired:.3f}, A/A {paired_aa:.3f}; "
        f"client CPU {cpu_ratio:.3f}, A/A {cpu_aa:.3f}"
    )
    return {
        "id": "P3",
        "title": "per-step cost: runtime episode loop vs raw `GenericEnvClient` loop",
        "target": f"ratio ≤ {TARGET_RATIO}",
        "measured": f"raw {raw_med * 1e6:.0f} µs/step, runtime {ours_med * 1e6:.0f} µs/step; "
        f"A/A control (raw / raw) {aa_ratio:.3f}",
        "ratio": round(ratio, 3),
        "ratio_label": "runtime / raw (median per-step)",
        "meets_target": ratio <= TARGET_RATIO,
        "details": {
            "aa_ratio": round(aa_ratio, 3),
            "ratio_paired": round(paired, 3),
            "aa_ratio_paired": round(paired_aa, 3),
            "client_cpu_ratio": round(cpu_ratio, 3),
            "client_cpu_aa_ratio": round(cpu_aa, 3),
            "client_cpu_us_per_step_p50": {name: round(median(v) * 1e6, 1) for name, v in cpu_times.items()},
            "order": f"a new random order every round (random.Random({SEED}))",
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

"""P3: per-step cost of the runtime's episode loop over a raw OpenEnv `GenericEnvClient`
loop, on one loopback server (the Wordle fixture in its own uvicorn process), one WebSocket
session per loop, reset (untimed) every 200 steps, every step timed on its own. Raw is
`client.step({"message": "[slate]"})`; the runtime's step is what `episode.play` does per
step besides asking the model, on the runtime's own session client (replies judged):
`ActionSpace.parse` of the reply, `episode.step_action`, the reward summed, and the next user turn
rendered (`episode.next_turn`). The loops take turns step by step, in a new random (seeded)
order every round, the sessions dealt out anew at every reset, so load and a faster
connection hit all alike; the ratio is of the medians, beside an A/A control (a second raw
loop in the same rotation). P3-judged is the judged reply's cost: this process's CPU per
step (`time.process_time`, which waits for neither the server nor the scheduler) of the
runtime's step alone over raw's, beside the A/A control's.
"""

from __future__ import annotations

import asyncio
import importlib
import random
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from common import cli, log, median, row

from openenvgen_testsupport.adapters import generate_from_server

TARGET_RATIO = 1.10
REPLY = "[slate]"
AA = "raw (A/A control)"
SEED = 20250
"""Of the loops' order in each round: the same run twice takes the same orders."""
ACTION = {"message": "[slate]"}


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


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    import httpx

    from openenvgen_runtime.episodes import episode
    from openenvgen_runtime.turn.actions import ActionSpace
    from openenvgen_runtime.turn.observations import ObservationView
    from openenvgen_runtime.turn.scoring import Score
    from openenvgen_testsupport.servers import serve_app_subprocess

    next_turn = episode.next_turn
    step_action = getattr(episode, "step_action", None) or episode._step  # named _step before be4d867
    rounds = 2000 if quick else 5000
    per_session = 200
    with serve_app_subprocess("openenvgen_testsupport.fixture_envs:wordle_app", ready_path="/health") as url:
        package = generate_from_server("benchwordle", str(url), workdir / "p3")
        models = importlib.import_module(f"{package.replace('-', '_')}.models")
        schema = httpx.get(f"{url}/schema", timeout=10).json()["action"]
        space = ActionSpace(action_model=models.WordGuessAction, action_schema=schema)
        assert space.parse(REPLY) == ACTION, space.parse(REPLY)
        view, score = ObservationView(asset_base_url=str(url)), Score()

        async def raw(client: Any) -> Any:
            return await client.step(ACTION)

        async def runtime(client: Any) -> Any:
            result = await step_action(client, space.parse(REPLY))
            score.add(result.reward)
            await next_turn(view, space, result.observation, result.reward)
            return result

        async def step_only(client: Any) -> Any:
            return await step_action(client, ACTION)

        # Per-step bodies, each on its own session; the A/A control is the raw loop again.
        variants = {"raw": raw, AA: raw, "runtime": runtime, "runtime's step alone": step_only}

        async def main() -> tuple[dict[str, list[float]], dict[str, list[float]]]:
            await _interleaved(url, 100, 100, variants)  # warm-up: connections, first-call caches
            return await _interleaved(url, rounds, per_session, variants)

        times, cpu_times = asyncio.run(main())
    raw, ours, aa = median(times["raw"]), median(times["runtime"]), median(times[AA])
    ratio, aa_ratio = ours / raw, aa / raw
    cpu = {name: median(v) * 1e6 for name, v in cpu_times.items()}
    step = cpu["runtime's step alone"]
    judged, judged_aa = step - cpu["raw"], cpu[AA] - cpu["raw"]
    log(f"P3 raw {raw * 1e6:.0f} us/step, runtime {ours * 1e6:.0f}: {ratio:.3f} (A/A {aa_ratio:.3f})")
    return [
        row(
            "P3",
            "per-step cost: runtime episode loop vs raw `GenericEnvClient` loop",
            f"ratio ≤ {TARGET_RATIO}",
            f"raw {raw * 1e6:.0f} µs/step, runtime {ours * 1e6:.0f} µs/step, {rounds} steps each; "
            f"A/A control (raw / raw) {aa_ratio:.3f}",
            round(ratio, 3),
            ratio <= TARGET_RATIO,
            label="runtime / raw, median per-step",
            wall_us_per_step={name: round(median(v) * 1e6, 1) for name, v in times.items()},
        ),
        row(
            "P3-judged",
            "the judged reply's cost: client CPU per step of the runtime's step (reply judged) over raw's",
            "shown beside the A/A control (raw's second loop), which must be smaller",
            f"raw {cpu['raw']:.1f} µs, runtime's step {step:.1f} µs of client CPU per step",
            f"+{judged:.1f} µs (A/A {judged_aa:+.1f} µs)",
            abs(judged_aa) < judged,
            client_cpu_us_per_step={name: round(v, 1) for name, v in cpu.items()},
        ),
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

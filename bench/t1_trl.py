"""T1: a generated package's TRL class (`<module>.trl.environment_class`) against the class a
TRL user writes by hand on OpenEnv's client (as TRL's Wordle example does: typed action and
observation, the text picked, an invalid move's reward patched), on one loopback Wordle
fixture server in its own uvicorn process. Per tool call: one instance of each, reset
(untimed) every 5 calls, every call timed alone, taking turns in a new seeded random order
each round, with a second hand-written instance as the A/A control; 2,000 calls each, quick
or not. Target: generated / hand-written <= 1.10 (ratio of the medians). Per instance: 256
instances of the generated class in this process, on its one shared pool, each reset once
(its session open); this process's resident memory growth per instance, the hand-written
class measured the same way after it. Target: <= 1 MiB."""

from __future__ import annotations

import gc
import importlib
import inspect
import random
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, cli, log, median, row
from openenv.core.generic_client import GenericEnvClient

from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.fixture_envs import WordGuessAction, WordGuessObservation, make_wordle_app
from openenvgen_testsupport.servers import serve_app_subprocess

TARGET_RATIO = 1.10
TARGET_MIB = 1.0
INSTANCES = 256
GUESS = "[slate]"  # never the fixture's secret
wordle_app = partial(make_wordle_app, max_concurrent_envs=2 * INSTANCES + 8)  # uvicorn --factory: a session each


def handwritten_class(base_url: str) -> type:
    """TRL's Wordle example on the raw client: the env's own action and observation models (as
    its typed client gives them), the text picked and an invalid move's reward patched by hand."""

    class Wordle:
        def __init__(self) -> None:
            self.client = GenericEnvClient(base_url=base_url)
            self.reward, self.done = 0.0, False

        def reset(self, **kwargs: Any) -> str:
            self.reward, self.done = 0.0, False
            return WordGuessObservation(**self.client.reset(**kwargs).observation).prompt

        def guess(self, message: str) -> str:
            """Make a move.

            Args:
                message: Your move, e.g. 'I guess [crane]'.
            """
            if self.done:
                return "The game is over."
            result = self.client.step(WordGuessAction(message=message).model_dump(exclude={"metadata"}))
            seen = WordGuessObservation(**result.observation, reward=result.reward, done=result.done)
            self.reward = 0.0 if seen.prompt.startswith("Invalid guess") else float(seen.reward or 0.0)
            self.done = seen.done
            return f"{seen.prompt}\n{seen.feedback}"

        def get_reward(self) -> float:
            return self.reward

        def close(self) -> None:
            self.client.close()

    return Wordle


def per_call(classes: dict[str, type], calls: int) -> dict[str, float]:
    """Median seconds per tool call of each class's instance, taking turns call by call."""
    instances = {name: cls() for name, cls in classes.items()}
    # The one tool of each, as GRPOTrainer collects them (close is the hand-written one's own).
    tools = {
        name: getattr(x, n)
        for name, x in instances.items()
        for n, _ in inspect.getmembers(type(x), inspect.isfunction)
        if not n.startswith("_") and n not in {"reset", "get_reward", "close"}
    }
    times: dict[str, list[float]] = {name: [] for name in classes}
    order, names = random.Random(20251), list(classes)
    for i in range(calls):
        if i % 5 == 0:
            for instance in instances.values():
                instance.reset()
        order.shuffle(names)
        for name in names:
            started = time.perf_counter()
            tools[name](message=GUESS)  # as TRL calls a tool: by keyword
            times[name].append(time.perf_counter() - started)
    for instance in instances.values():
        instance.close()
    return {name: median(t) for name, t in times.items()}


def per_instance(cls: type) -> float:
    """MiB of this process's resident memory per instance, over INSTANCES reset instances."""

    def rss_mib() -> float:
        gc.collect()
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(x for x in status if x.startswith("VmRSS:")).split()[1]) / 1024

    before, instances = rss_mib(), [cls() for _ in range(INSTANCES)]
    for instance in instances:
        instance.reset()
    grown = rss_mib() - before
    for instance in instances:
        instance.close()
    return grown / INSTANCES


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    calls = 2000
    with serve_app_subprocess("t1_trl:wordle_app", cwd=BENCH, factory=True, ready_path="/health") as url:
        package = generate_from_server("wordle", str(url), workdir / "t1")
        generated = importlib.import_module(f"{package.replace('-', '_')}.trl").environment_class(base_url=str(url))
        handwritten = handwritten_class(str(url))
        med = per_call({"generated": generated, "hand-written": handwritten, "A/A": handwritten}, calls)
        # The generated class first: a hand-written run first leaves freed room the generated one re-uses.
        mib = {"generated": per_instance(generated), "hand-written": per_instance(handwritten)}
    ratio, aa = med["generated"] / med["hand-written"], med["A/A"] / med["hand-written"]
    log(f"T1 {calls} calls: ratio {ratio:.3f} (A/A {aa:.3f}); MiB per instance {mib}")
    return [
        row(
            "T1",
            f"the generated TRL class vs a hand-written one on OpenEnv's raw client, {calls} tool calls "
            f"each, and {INSTANCES} instances in one process",
            f"≤ {TARGET_RATIO}x per tool call; ≤ {TARGET_MIB:g} MiB per instance",
            f"per call (median) generated {med['generated'] * 1e3:.3f} ms, hand-written "
            f"{med['hand-written'] * 1e3:.3f} ms (A/A {aa:.3f}); per instance generated "
            f"{mib['generated']:.3f} MiB, hand-written {mib['hand-written']:.3f} MiB",
            round(ratio, 3),
            ratio <= TARGET_RATIO and mib["generated"] <= TARGET_MIB,
            label="generated / hand-written, median per tool call",
            median_call_s=med,
            aa_ratio=aa,
            mib_per_instance=mib,
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

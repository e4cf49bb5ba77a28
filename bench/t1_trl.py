"""T1: a generated package's TRL class (`<module>.trl.environment_class`) against the class a
TRL user writes by hand on OpenEnv's raw client, as TRL's Wordle example does.

One loopback server (the Wordle fixture, `openenvgen_testsupport.fixture_envs`, in its own
uvicorn process so it never shares this process's GIL, with room for every session this
run opens); the package is generated from it into a temporary folder.

- per tool call: one instance of each class, each reset (untimed) every 5 calls so no call
  ends the game (`[slate]` never wins against the fixture's secret); every call timed on
  its own. The loops take turns call by call in a new random order every round (seeded), so
  the machine's load hits them alike; a second hand-written instance runs in the same
  rotation as an A/A control, whose ratio (ideally 1) shows how far noise alone moves a
  ratio in this run. Target: generated / hand-written <= 1.10 (ratio of the medians).
- per instance: 256 instances of the generated class in this one process, all on one
  pool (the class shares it), each reset once (its session open); the growth of this
  process's resident memory over that, per instance. Target: <= 1 MiB. The hand-written
  class (one client, so one connection and one event-loop thread, each) is measured the
  same way beside it.

`python bench/t1_trl.py` prints the rows; `figures()` returns them as a dict.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openenv.core.generic_client import GenericEnvClient

from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.servers import serve_app_subprocess

TARGET_RATIO = 1.10
TARGET_MIB = 1.0
CALLS = 600
INSTANCES = 256
RESET_EVERY = 5
SEED = 20251
GUESS = "[slate]"
SESSIONS = 2 * INSTANCES + 8


def wordle_app() -> Any:
    """The server's app (uvicorn's `--factory`): the Wordle fixture with room for every session."""
    from openenvgen_testsupport.fixture_envs import make_wordle_app

    return make_wordle_app(max_concurrent_envs=SESSIONS)


def handwritten_class(base_url: str) -> type:
    """What a TRL user writes today (TRL's Wordle example, on the raw client): a client per
    instance, the observation's text picked out by hand, the reward kept from the step."""

    class Wordle:
        def __init__(self) -> None:
            self.client = GenericEnvClient(base_url=base_url)
            self.reward = 0.0
            self.done = False

        def reset(self, **kwargs: Any) -> str:
            result = self.client.reset(**kwargs)
            self.reward, self.done = 0.0, False
            return str(result.observation["prompt"])

        def guess(self, message: str) -> str:
            """Make a move.

            Args:
                message: Your move, e.g. 'I guess [crane]'.
            """
            if self.done:
                return "The game is over."
            result = self.client.step({"message": message})
            self.reward, self.done = float(result.reward or 0.0), bool(result.done)
            return f"{result.observation['prompt']}\n{result.observation.get('feedback', '')}"

        def get_reward(self) -> float:
            return self.reward

        def close(self) -> None:
            self.client.close()

    return Wordle


def generated_class(base_url: str, root: Path) -> type:
    """The class of the package generated from the server, configured for it."""
    package = generate_from_server("wordle", base_url, root)
    module = importlib.import_module(f"{package.replace('-', '_')}.trl")
    return module.environment_class(base_url=base_url)  # type: ignore[no-any-return]


def tool(instance: Any) -> Callable[..., str]:
    """The instance's one tool method: its public functions but reset, get_reward and close
    (as GRPOTrainer collects them; close is the hand-written class's own)."""
    names = [
        name
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in {"reset", "get_reward", "close"}
    ]
    assert len(names) == 1, names
    return getattr(instance, names[0])  # type: ignore[no-any-return]


def per_call(classes: dict[str, type]) -> dict[str, list[float]]:
    """Seconds per tool call of each class's instance, the loops taking turns call by call."""
    instances = {name: cls() for name, cls in classes.items()}
    calls = {name: tool(instance) for name, instance in instances.items()}
    times: dict[str, list[float]] = {name: [] for name in classes}
    order = random.Random(SEED)
    names = list(classes)
    for i in range(CALLS):
        if i % RESET_EVERY == 0:
            for instance in instances.values():
                instance.reset()
        order.shuffle(names)
        for name in names:
            started = time.perf_counter()
            calls[name](message=GUESS)  # as TRL calls a tool: by keyword
            times[name].append(time.perf_counter() - started)
    for instance in instances.values():
        close = getattr(instance, "close", None)
        if close:
            close()
    return times


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def per_instance(cls: type) -> float:
    """MiB of this process's resident memory per instance, over INSTANCES reset instances."""
    gc.collect()
    before = rss_bytes()
    instances = [cls() for _ in range(INSTANCES)]
    for instance in instances:
        instance.reset()
    gc.collect()
    grown = rss_bytes() - before
    for instance in instances:
        close = getattr(instance, "close", None)
        if close:
            close()
    return grown / INSTANCES / 2**20


def figures() -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="t1-trl-") as tmp,
        serve_app_subprocess("t1_trl:wordle_app", cwd=Path(__file__).parent, factory=True, ready_path="/health") as url,
    ):
        generated = generated_class(str(url), Path(tmp))
        handwritten = handwritten_class(str(url))
        times = per_call({"generated": generated, "hand-written": handwritten, "A/A": handwritten})
        medians = {name: statistics.median(t) for name, t in times.items()}
        # The generated class first: its pool is what is measured, and a hand-written run first
        # would leave this process's allocator with freed room the generated one re-uses.
        memory = {"generated": per_instance(generated), "hand-written": per_instance(handwritten)}
    return {
        "calls": CALLS,
        "median_call_s": medians,
        "ratio": medians["generated"] / medians["hand-written"],
        "aa_ratio": medians["A/A"] / medians["hand-written"],
        "instances": INSTANCES,
        "mib_per_instance": memory,
        "ratio_ok": medians["generated"] / medians["hand-written"] <= TARGET_RATIO,
        "memory_ok": memory["generated"] <= TARGET_MIB,
    }


def main() -> int:
    result = figures()
    medians = result["median_call_s"]
    print(f"T1 per tool call ({result['calls']} calls each, medians):")
    for name, seconds in medians.items():
        print(f"  {name:<13} {seconds * 1e3:8.3f} ms")
    print(
        f"  generated / hand-written = {result['ratio']:.3f}  (target <= {TARGET_RATIO}; A/A {result['aa_ratio']:.3f})"
    )
    print(f"T1 per instance ({result['instances']} instances, one process, resident memory):")
    for name, mib in result["mib_per_instance"].items():
        print(f"  {name:<13} {mib:8.3f} MiB")
    print(f"  target <= {TARGET_MIB} MiB for the generated class")
    return 0 if result["ratio_ok"] and result["memory_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

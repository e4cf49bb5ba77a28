"""P9: what typed hooks in a package's `custom.py` cost an episode: the runtime's own work in
one guess-the-number episode (the opening turn, a wrong and a right guess, the episode's
end with the hooks scored as verifiers scores them), timed without I/O for the package as
generated (a, and a again: the A/A control), with hooks that ask for nothing typed (b: a
reward and a metric of `trace`) and with typed hooks (c: `render_observation`, a reward and
a metric taking the package's generated observation models), the variants taking turns,
best of 7 x 200 episodes; over the CPU-seconds a whole episode of a costs (the slope of
`vf-eval` runs of 64 and 256 episodes on the in-process seat, one shared server, as P6).
Target: c/a <= 1.02, b/a <= 1.02, resolved only when the A/A ratio is within 0.5%. A
`vf-eval` run of c checks end to end that its hooks give their scores (the typed reward 1.0,
3 observations)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from common import SCRIPT, cli, guess_setup, log, row, run_eval

TARGET = 1.02
RESOLUTION = 0.005
VARIANTS = ("a", "a2", "b", "c")
MODULE = "guess_openenv"
EXPECTED = {
    "a": {},
    "a2": {},
    "b": {"plain_reward": 1.0, "plain_metric": 1.0},
    "c": {"typed_reward": 1.0, "typed_observed": 3.0},
}
"""The scores each variant's hooks give in a guess-the-number episode (two guesses)."""
PLAIN = '''"""Hooks that ask for nothing typed: verifiers' own `trace` only."""

import verifiers.v1 as vf


@vf.reward
def plain_reward(trace) -> float:
    return float("openenv" in trace.info)


@vf.metric
def plain_metric(trace) -> float:
    return float(bool(trace.info))
'''
TYPED = '''"""Typed hooks: the renderer, a reward and a metric take the package's generated models."""

import verifiers.v1 as vf

from .models import {models}


def render_observation(observation: {union}) -> str:
    return f"hint: {{observation.hint}}"


@vf.reward
def typed_reward(observation: {union}) -> float:
    return float(observation.reward or 0.0)


@vf.metric
def typed_observed(observations: list[{union}]) -> float:
    return float(len(observations))
'''


@dataclass
class Episode:
    """One variant's episode as `episode.play` runs it besides the model and the env."""

    extension: Any
    models: Any
    space: Any
    view: Any
    seen: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)

    async def play(self, replies: list[str]) -> None:
        from verifiers.v1.utils.decorators import invoke_all

        from openenvgen_runtime.episodes.episode import next_turn, step_action
        from openenvgen_runtime.hooks.typed_hooks import INFO_KEY, RESET, STEP, entry
        from openenvgen_runtime.turn.observations import final_info
        from openenvgen_runtime.turn.scoring import Score

        ext, score, self.seen = self.extension, Score(), []
        last: dict[str, Any] = {"hint": "guess a number from 0 to 9", "metadata": {}}
        if ext.records:
            self.seen.append(entry(RESET, last, 0.0, False))
        await next_turn(self.view, self.space, last, extension=ext, models=self.models, kind=RESET)
        answers = iter([("higher", 0.0, False), ("right", 1.0, True)])

        async def step(action: dict[str, Any]) -> Any:  # the env's session, without I/O
            hint, reward, done = next(answers)
            return SimpleNamespace(observation={"hint": hint, "metadata": {}}, reward=reward, done=done)

        client = SimpleNamespace(step=step)
        for reply in replies:
            result = await step_action(client, self.space.parse(reply))
            last = result.observation
            if ext.records:
                self.seen.append(entry(STEP, last, result.reward, bool(result.done)))
            score.add(result.reward)
            if not result.done:
                await next_turn(self.view, self.space, last, result.reward, extension=ext, models=self.models)
        trace = SimpleNamespace(info={"openenv": final_info(last)})
        if ext.records:
            trace.info[INFO_KEY] = [{**e, "observation": final_info(e["observation"])} for e in self.seen]
        for kind in ("metric", "reward") if ext.scores else ():
            hooks = list(ext.hooks(kind, self.models))
            values = await invoke_all(hooks, {"task": None, "trace": trace})
            self.scores.update({fn.__name__: value for fn, value in zip(hooks, values, strict=True)})


def taskset() -> Any:
    """The generated taskset class of the package."""
    from openenvgen_runtime.episodes.taskset import AdapterTaskset

    module = importlib.import_module(f"{MODULE}.taskset")
    classes = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, AdapterTaskset)]
    (ts,) = [v for v in classes if v.__module__ == module.__name__]
    return ts


def variants(package: Path, workdir: Path) -> dict[str, Path]:
    """The package as generated (a, a′), and copies with b's and c's custom.py."""
    sys.path.insert(0, str(package))
    ts = taskset()
    models = sorted({ts.OBSERVATION_MODEL.__name__, (ts.RESET_OBSERVATION_MODEL or ts.OBSERVATION_MODEL).__name__})
    typed = TYPED.format(models=", ".join(models), union=" | ".join(models))
    dirs = {"a": package, "a2": package}
    for variant, source in (("b", PLAIN), ("c", typed)):
        dirs[variant] = workdir / variant / package.name
        shutil.copytree(package, dirs[variant], ignore=shutil.ignore_patterns("__pycache__"))
        (dirs[variant] / MODULE / "custom.py").write_text(source)
    return dirs


def work_us(dirs: dict[str, Path], episodes: int) -> dict[str, float]:
    """µs of the runtime's own work per episode, per variant: best of 7, taking turns."""
    from openenvgen_runtime.hooks.extensions import load_extension
    from openenvgen_runtime.turn.actions import ActionSpace
    from openenvgen_runtime.turn.observations import ObservationView

    ts = taskset()
    space = ActionSpace(action_model=ts.ACTION_MODEL, action_schema=ts.ACTION_MODEL.model_json_schema())
    runs = {}
    for variant in VARIANTS:
        name = f"{MODULE}.custom" if variant in ("a", "a2") else f"{MODULE}.custom_{variant}"
        if name not in sys.modules:  # b's and c's custom.py beside a's, under names of their own
            spec = importlib.util.spec_from_file_location(name, dirs[variant] / MODULE / "custom.py")
            assert spec is not None and spec.loader is not None
            sys.modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules[name])
        runs[variant] = Episode(load_extension(name), ts.task_type().OBSERVATION_MODELS, space, ObservationView())

    async def timed(episode: Episode) -> float:
        start = time.perf_counter()
        for _ in range(episodes):
            await episode.play(SCRIPT)
        return (time.perf_counter() - start) / episodes

    best = {v: float("inf") for v in VARIANTS}
    for _ in range(7):  # taking turns, so a change of load hits them alike
        for variant, episode in runs.items():
            best[variant] = min(best[variant], asyncio.run(timed(episode)))
    for variant, episode in runs.items():
        if episode.scores != EXPECTED[variant]:
            raise RuntimeError(f"variant {variant}: hook scores {episode.scores}, expected {EXPECTED[variant]}")
    return {v: round(x * 1e6, 1) for v, x in best.items()}


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    with guess_setup(workdir, shared=True) as (package, model_url, url):
        dirs = variants(package, workdir)
        work = work_us(dirs, 100 if quick else 200)
        cpu, n = {}, 64
        for variant, size in (("a", n), ("a", 4 * n), ("c", n)):
            out = workdir / f"p9-{variant}-{size}"
            x = run_eval("runtime", {"base_url": url}, size, 16, model_url, dirs[variant], out, 900)
            if x["successful"] != size:
                raise RuntimeError(f"P9 {variant}: {x['successful']}/{size} successful, errors {x['errors']}")
            cpu[(variant, size)] = x["cpu_s"]
        (trace,) = [json.loads(p.read_text().splitlines()[0])["traces"][0] for p in out.glob("*/traces.jsonl")]
        named = {**trace.get("rewards", {}), **trace.get("metrics", {})}
        scores = {k: v["score"] if isinstance(v, dict) else v for k, v in named.items()}
        if {k: scores.get(k) for k in EXPECTED["c"]} != EXPECTED["c"]:
            raise RuntimeError(f"P9 c through vf-eval: hook scores {scores}, expected {EXPECTED['c']}")
    episode_us = (cpu[("a", 4 * n)] - cpu[("a", n)]) / (3 * n) * 1e6
    ratio = {v: 1 + (work[v] - work["a"]) / episode_us for v in VARIANTS}
    resolved = abs(ratio["a2"] - 1) <= RESOLUTION
    log(f"P9 work per episode (µs) {work}; a's episode {episode_us:.0f} µs of CPU; ratios {ratio}")
    return [
        row(
            "P9",
            "typed hooks' cost per episode: the runtime's work with typed hooks (c), untyped hooks (b) and none (a, "
            "a′), over a whole episode's CPU",
            f"c/a ≤ {TARGET}, b/a ≤ {TARGET}; resolved when A/A is within {RESOLUTION:.1%}",
            f"runtime's work per episode: a {work['a']} µs, a′ {work['a2']}, b {work['b']}, c {work['c']}; "
            f"a whole episode {episode_us / 1000:.1f} ms of CPU (vf-eval tree, slope of {n} and {4 * n})",
            f"c/a {ratio['c']:.4f}, b/a {ratio['b']:.4f} (A/A {ratio['a2']:.4f})",
            (ratio["c"] <= TARGET and ratio["b"] <= TARGET) if resolved else None,
            work_us=work,
            vf_eval_cpu_s={f"{v} {size}": s for (v, size), s in cpu.items()},
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

"""One doctor run: start the package's env as its taskset would, measure it, write the report.

Execution model: the package is imported (`--path` first on `sys.path` for one not
installed), its taskset's own config class built with its defaults and the `--set` keys, and
a `ServerPool` started from it exactly as a run's (the UV provider with the package's app,
Docker or Swarm as configured, or `--base-url`), the drift guard included. Every probe then
talks to the pool's first server directly, one WebSocket session at a time through OpenEnv's
public client: `episodes` episodes (`group_size` rollouts per task, so rewards form groups as
GRPO's would; tasks beyond the package's own take the next seeds), then `replays` of them
again with the same seed and actions, then the capacity and session-release probes. The pool
is stopped on every way out. A progress bar goes to stderr; the report (JSON) to `--out` or
stdout.

Exit status: 0 when the report was written (its verdicts decide `openenv-gen doctor`'s own
status), 64 for bad arguments, 69 when the env could not be started or reached.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from verifiers.v1 import TasksetConfig
from verifiers.v1.utils.generic import concrete_type

from openenvgen_runtime.config import settings_from_pairs
from openenvgen_runtime.doctor import capacity as probes
from openenvgen_runtime.doctor import judge
from openenvgen_runtime.doctor.policy import Policy
from openenvgen_runtime.doctor.rollouts import Measured, Models, Play, compare, play_episode
from openenvgen_runtime.doctor.sessions import Lost, Refused, Session
from openenvgen_runtime.episodes import tasks
from openenvgen_runtime.episodes.taskset import AdapterTaskset
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.hooks.drift import check_drift
from openenvgen_runtime.launching import launch
from openenvgen_runtime.launching.errors import UNAVAILABLE_EXIT, USAGE_EXIT
from openenvgen_schemas.doctor_report import DoctorReport, LaunchMode, Mismatch, Thresholds


@dataclass(frozen=True)
class Options:
    episodes: int = 8
    group_size: int = 4
    max_steps: int = 16
    replays: int = 2
    capacity_bound: int = 16
    timeout: float = 30.0
    """Seconds any one request to the server may take (connect, reset, step, close)."""
    thresholds: Thresholds = field(default_factory=Thresholds)
    progress: bool = True


def find_taskset(package_id: str) -> type[AdapterTaskset]:
    module = importlib.import_module(package_id)
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, AdapterTaskset) and value is not AdapterTaskset
    ]
    if len(found) != 1:
        raise ValueError(f"{package_id} is not a package openenv-gen generated (no one AdapterTaskset)")
    return found[0]


def make_config(taskset: type[AdapterTaskset], settings: dict[str, Any]) -> Any:
    config_type = concrete_type(taskset, TasksetConfig) or TasksetConfig
    return config_type(**settings)


def example_action(taskset: type[AdapterTaskset]) -> Any:
    if taskset.SNAPSHOT is None:
        return None
    return (json.loads(taskset.SNAPSHOT.read_text("utf-8")).get("defaults") or {}).get("example_action")


def doctor_tasks(specs: list[tasks.TaskSpec], groups: int) -> list[tasks.TaskSpec]:
    """`groups` tasks: the package's own first, then its resets again with the next seeds."""
    chosen = list(specs[:groups])
    for index in range(len(chosen), groups):
        base = {k: v for k, v in specs[index % len(specs)].reset.items() if k != "seed"}
        label = specs[0].name.rpartition("#")[0] or "task"
        chosen.append(tasks.TaskSpec(f"{label}#{index}", {**base, "seed": index}))
    return chosen


class Bar:
    """The progress bar on stderr (or nothing)."""

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=not enabled,
            transient=False,
        )

    def stage(self, description: str, total: int) -> Any:
        return self.progress.add_task(description, total=total)


async def diagnose(taskset: type[AdapterTaskset], config: Any, options: Options) -> DoctorReport:
    mode: LaunchMode = (
        "base_url" if config.base_urls else launch.mode_name(use_docker=config.use_docker, use_swarm=config.use_swarm)  # type: ignore[assignment]
    )
    bar = Bar(options.progress)
    pool = ServerPool(config, mcp=taskset.IS_MCP)
    with bar.progress:
        started = time.perf_counter()
        starting = bar.stage("starting the env" if mode != "base_url" else "reaching the env", 1)
        try:
            await pool.start()
            startup_s = None if mode == "base_url" else round(time.perf_counter() - started, 3)
            bar.progress.update(starting, completed=1)
            check_drift(pool.servers, taskset.SNAPSHOT, config.on_drift)
            server = pool.servers[0]
            space = taskset.space_for(server.schema.get("action", {}), server.tools)
            policy = Policy(space, example_action(taskset))
            models = Models(reset=taskset.RESET_OBSERVATION_MODEL, step=taskset.OBSERVATION_MODEL)
            groups = max(1, math.ceil(options.episodes / options.group_size))
            chosen = doctor_tasks(await tasks.plan(config, mcp=taskset.IS_MCP), groups)
            url = await pool.session_url(server)  # its loopback relay, when it needs headers or TLS
            measured = await _episodes(url, chosen, policy, models, options, bar)
            pairs, mismatches = await _replays(url, measured.plays, policy, models, options, bar)
            stage = bar.stage("session capacity", 2)
            capacity = await probes.probe_capacity(
                url, chosen[0].reset, bound=options.capacity_bound, timeout=options.timeout
            )
            bar.progress.update(stage, advance=1, description="session release")
            release = await probes.probe_release(
                url,
                chosen[0].reset,
                capacity=capacity.capacity,
                wait=options.thresholds.release_wait_s,
                timeout=options.timeout,
            )
            bar.progress.update(stage, advance=1)
        finally:
            await asyncio.shield(pool.stop())
    env_id = config.env or server.url
    findings = judge.Findings(
        env_id=str(env_id),
        launch=mode,
        startup_s=startup_s,
        measured=measured,
        capacity=capacity,
        release=release,
        pairs_compared=pairs,
        mismatches=tuple(mismatches),
    )
    return judge.report(findings, options.thresholds)


async def _episodes(
    url: str, chosen: list[tasks.TaskSpec], policy: Policy, models: Models, options: Options, bar: Bar
) -> Measured:
    measured = Measured()
    stage = bar.stage("episodes", options.episodes)
    for index in range(options.episodes):
        spec = chosen[min(index // options.group_size, len(chosen) - 1)]
        play = Play(task=spec.name, reset=dict(spec.reset))
        await _play_in_session(url, play, policy, random.Random(index), models, options, measured)
        measured.plays.append(play)
        bar.progress.update(stage, advance=1)
    return measured


async def _play_in_session(
    url: str,
    play: Play,
    policy: Policy,
    rng: random.Random,
    models: Models,
    options: Options,
    measured: Measured,
    script: list[dict[str, Any]] | None = None,
) -> None:
    """Play one episode in a session of its own; a session that cannot be opened is the play's error."""
    try:
        async with Session(url, options.timeout) as session:
            await play_episode(
                session, play, policy, rng, models=models, max_steps=options.max_steps, measured=measured, script=script
            )
    except (Lost, Refused) as e:
        play.error = f"session not opened: {e}"


async def _replays(
    url: str, plays: list[Play], policy: Policy, models: Models, options: Options, bar: Bar
) -> tuple[int, list[Mismatch]]:
    """Replay the first `replays` plays that ended cleanly, one per task where possible."""
    clean = [p for p in plays if p.error is None]
    by_task: dict[str, Play] = {}
    for play in clean:
        by_task.setdefault(play.task, play)
    chosen = (list(by_task.values()) + [p for p in clean if p not in by_task.values()])[: options.replays]
    stage = bar.stage("replays (determinism)", len(chosen))
    mismatches: list[Mismatch] = []
    for original in chosen:
        again = Play(task=original.task, reset=dict(original.reset))
        await _play_in_session(url, again, policy, random.Random(0), models, options, Measured(), original.actions)
        found = compare(original, again)
        if found is not None:
            mismatches.append(found)
        bar.progress.update(stage, advance=1)
    return len(chosen), mismatches


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m openenvgen_runtime.doctor", description=__doc__.split("\n\n")[0])
    p.add_argument("package_id")
    p.add_argument("--path", help="a directory to import the package from (a package not installed)")
    p.add_argument("--base-url", help="measure this running server instead of launching one")
    p.add_argument("--episodes", type=int, default=Options.episodes)
    p.add_argument("--group-size", type=int, default=Options.group_size)
    p.add_argument("--max-steps", type=int, default=Options.max_steps)
    p.add_argument("--replays", type=int, default=Options.replays)
    p.add_argument("--capacity-bound", type=int, default=Options.capacity_bound)
    p.add_argument("--timeout", type=float, default=Options.timeout)
    p.add_argument("--thresholds", default="{}", help="a JSON object of threshold values")
    p.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="a taskset config key")
    p.add_argument("--out", help="write the report here (default: stdout)")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.path:
        sys.path.insert(0, args.path)
    try:
        if min(args.episodes, args.group_size, args.max_steps, args.capacity_bound) < 1 or args.replays < 0:
            raise ValueError("--episodes, --group-size, --max-steps and --capacity-bound must be at least 1")
        options = Options(
            episodes=args.episodes,
            group_size=args.group_size,
            max_steps=args.max_steps,
            replays=args.replays,
            capacity_bound=args.capacity_bound,
            timeout=args.timeout,
            thresholds=Thresholds.model_validate_json(args.thresholds),
            progress=not args.no_progress,
        )
        taskset = find_taskset(args.package_id)
        settings = settings_from_pairs(args.set)
        if args.base_url:
            settings["base_url"] = args.base_url
        config = make_config(taskset, settings)
    except (ValueError, ImportError, ValidationError) as e:
        return _error(e, USAGE_EXIT)
    try:
        report = asyncio.run(diagnose(taskset, config, options))
    except KeyboardInterrupt:
        print("interrupted; the env was stopped", file=sys.stderr)
        return 130
    except Exception as e:  # the env did not start, or its server could not be reached
        return _error(e, UNAVAILABLE_EXIT)
    text = report.model_dump_json(indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text, "utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _error(error: BaseException, code: int) -> int:
    """One line on stderr: the error's first line, and where that line only announces what
    follows (a launch failure's "last lines of its log:"), the last of those lines too."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    message = lines[0] if lines else type(error).__name__
    if len(lines) > 1 and message.endswith(":"):
        message = f"{message} {lines[-1]}"
    print(f"openenv-gen: error: doctor: {message}", file=sys.stderr)
    return code

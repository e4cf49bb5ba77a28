"""`openenv-gen play`: a person (or a script) takes the model's seat, to see exactly what the model reads.

Execution model: the package is loaded the way verifiers loads it (`load_environment` on its
id, the taskset's config keys as overrides), its env started (a server launched, or
`base_url`), and one task played by the runtime's own episode loop (`episode.play`), the
same code a `vf-eval` rollout runs. Only the seat differs: instead of a model, each turn is
printed (the system prompt, then every user or tool message exactly as the model would
receive it: the package's renderer and prompt, hidden fields out, media as placeholders,
the action schema) and the next reply is read from a line of input. A reply that is not a
valid action is answered with the message the model would get. The episode ends at
`done`, when the loop stops it (too many invalid replies), at the end of input, or on
Ctrl-C; the env stops in every case.

A line of input is the model's reply as text: JSON, or a bare value for a one-field action.
`NAME {"arg": ...}` is a tool call: with `action_format = "tools"` it is sent as the native
call of tool NAME (`act` for a typed action, a member's name for a union, the tool's for
MCP envs); for an MCP env in text format, as the JSON text the model writes for a call.
Blank lines are skipped (a model's empty reply would end the episode).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import IO, Any, cast

from verifiers.v1.agent import Segment
from verifiers.v1.types import AssistantMessage, TextContentPart, ToolCall, ToolMessage, UserMessage

from openenvgen_runtime.config import settings_from_pairs
from openenvgen_runtime.episodes.episode import play as play_episode
from openenvgen_runtime.episodes.taskset import AdapterEnv
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.launching.errors import SOFTWARE_EXIT, UNAVAILABLE_EXIT, USAGE_EXIT, LaunchError
from openenvgen_runtime.turn.mcp_tools import LIST_TOOLS
from openenvgen_runtime.turn.observations import final_info
from openenvgen_runtime.turn.replies import EnvLost, EnvProtocolError


@dataclass
class Turn:
    """One message the model reads (or the end of the episode), as `--json` prints it."""

    turn: int
    role: str
    text: str | None
    observation: dict[str, Any] | None = None
    reward: float | None = None
    done: bool = False

    def as_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False, default=str)


@dataclass
class PlayTrace:
    """What the episode loop records on a trace, kept for the summary line."""

    stop_reason: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def stop(self, reason: str) -> None:
        self.stop_reason = self.stop_reason or reason

    def record_reward(self, name: str, value: float) -> None:
        self.rewards[name] = value

    def record_metric(self, name: str, value: float) -> None:
        self.metrics[name] = value

    def record_metrics(self, metrics: dict[str, float]) -> None:
        self.metrics.update(metrics)


class LineReader:
    """Lines of input read on a daemon thread, so Ctrl-C or the end of the run never waits on a read."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    async def read(self) -> str | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def deliver(line: str) -> None:
            if not future.done():
                future.set_result(line)

        def read() -> None:
            loop.call_soon_threadsafe(deliver, self.stream.readline())

        threading.Thread(target=read, name="openenvgen-play-input", daemon=True).start()
        line = await future
        return None if line == "" else line.rstrip("\n")


class Printer:
    """What the person sees: readable text, or one JSON object per turn (`--json`)."""

    def __init__(self, out: IO[str], as_json: bool) -> None:
        self.out, self.as_json = out, as_json
        self.pending: dict[str, Any] = {}
        """The last step's observation, reward and done, printed with the turn they lead to."""

    def system(self, text: str | None) -> None:
        if self.as_json:
            self._write(json.dumps({"turn": 0, "role": "system", "text": text}, ensure_ascii=False))
        else:
            self._write(f"── system ──\n{text or '(no system prompt)'}\n")

    def turn(self, number: int, messages: list[tuple[str, str]]) -> None:
        step = self.pending
        self.pending = {}
        for role, text in messages:
            if self.as_json:
                self._write(Turn(number, role, text, step.get("observation"), step.get("reward")).as_json())
            else:
                reward = "" if step.get("reward") is None else f" · reward {step['reward']:g}"
                self._write(f"── turn {number} · {role}{reward} ──\n{text}\n")

    def end(self, number: int, trace: PlayTrace) -> None:
        step = self.pending
        total = sum(trace.rewards.values())
        if self.as_json:
            end = Turn(number, "end", None, step.get("observation"), step.get("reward"), bool(step.get("done")))
            self._write(json.dumps({**end.__dict__, "stop": trace.stop_reason, "total_reward": total}, default=str))
        else:
            if step.get("done"):
                # The model never reads the last observation: shown here for the person only.
                reward = "" if step.get("reward") is None else f" · reward {step['reward']:g}"
                observation = json.dumps(step.get("observation"), ensure_ascii=False, default=str)
                self._write(f"── done{reward} · the last observation (the model does not read it) ──\n{observation}\n")
            self._write(f"── stop: {trace.stop_reason or 'end of input'} · total reward {total:g} ──")

    def prompt(self) -> None:
        if not self.as_json and self.out.isatty():
            self.out.write("> ")
            self.out.flush()

    def _write(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def _shown(content: Any) -> str:
    """A message's content as text; media parts as placeholders."""
    if isinstance(content, str):
        return content
    parts = []
    for number, part in enumerate(content, start=1):
        if isinstance(part, TextContentPart):
            parts.append(part.text)
        else:
            parts.append(f"[{getattr(part, 'type', 'media')} part {number}: not shown]")
    return "\n".join(parts)


def _messages(answer: Any) -> list[tuple[str, str]]:
    if isinstance(answer, str):
        return [("user", answer)]
    shown = []
    for message in answer:
        if isinstance(message, ToolMessage):
            shown.append((f"tool result for {message.name}", _shown(message.content)))
        elif isinstance(message, UserMessage):
            shown.append(("user", _shown(message.content)))
    return shown


class TerminalInteraction:
    """The seat's side of `episode.play`: prints each turn, answers with a line of input."""

    def __init__(self, task: Any, reader: LineReader, printer: Printer, *, tools: bool, mcp: bool) -> None:
        self.task, self.reader, self.printer = task, reader, printer
        self.tools, self.mcp = tools, mcp
        self.trace = PlayTrace()
        self.turns = 0
        self._call_ids = itertools.count(1)

    async def turn(self, answer: Any) -> Segment:
        self.turns += 1
        self.printer.turn(self.turns, _messages(answer))
        while True:
            self.printer.prompt()
            line = await self.reader.read()
            if line is None:
                return Segment(messages=[], terminated=True)
            if line.strip():
                return Segment(messages=[self._reply(line.strip())])

    def _reply(self, line: str) -> AssistantMessage:
        name, _, arguments = line.partition(" ")
        if name.isidentifier() and arguments.lstrip().startswith("{") and (self.tools or self.mcp):
            if self.tools:
                call = ToolCall(id=f"call_{next(self._call_ids)}", name=name, arguments=arguments.strip())
                return AssistantMessage(content="", tool_calls=[call])
            try:
                line = json.dumps({"tool": name, "arguments": json.loads(arguments)}, ensure_ascii=False)
            except json.JSONDecodeError:
                pass  # sent as typed: the model gets the parse error, as the model would
        return AssistantMessage(content=line)


@dataclass
class _Seat:
    interaction: TerminalInteraction

    @contextlib.asynccontextmanager
    async def interaction_for(self, task: Any) -> AsyncIterator[TerminalInteraction]:
        self.interaction.task = task
        self.interaction.printer.system(task.data.system_prompt)
        yield self.interaction


class _Agents:
    def __init__(self, seat: _Seat) -> None:
        self.player = _Player(seat)


class _Player:
    def __init__(self, seat: _Seat) -> None:
        self.interaction: Callable[[Any], Any] = seat.interaction_for


class _RecordingPool:
    """The env's pool, its session's client wrapped so each step's result is shown with the next turn."""

    def __init__(self, pool: Any, printer: Printer) -> None:
        self.pool, self.printer = pool, printer

    @contextlib.asynccontextmanager
    async def session(self, reset: dict[str, Any]) -> AsyncIterator[tuple[Any, Any, Any]]:
        async with self.pool.session(reset) as (server, client, result):
            self.printer.pending = {"observation": final_info(result.observation)}
            yield server, _RecordingClient(client, self.printer), result


class _RecordingClient:
    def __init__(self, client: Any, printer: Printer) -> None:
        self.client, self.printer = client, printer

    async def step(self, action: dict[str, Any]) -> Any:
        result = await self.client.step(action)
        if action == LIST_TOOLS:
            return result  # the runtime listing an episode's tools: no turn of the game
        self.printer.pending = {
            "observation": final_info(result.observation),
            "reward": result.reward,
            "done": bool(result.done),
        }
        return result


async def play(
    package_id: str,
    *,
    taskset: dict[str, Any],
    task_index: int = 0,
    stdin: IO[str] = sys.stdin,
    stdout: IO[str] = sys.stdout,
    as_json: bool = False,
) -> PlayTrace:
    """Play task `task_index` of package `package_id` (its taskset config: `taskset`) from `stdin`."""
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    env = load_environment(resolve_env_config({"taskset": {"id": package_id, **taskset}}))
    if not isinstance(env, AdapterEnv):
        raise TypeError(f"{package_id} is not a package openenv-gen generated")
    tasks = list(env.taskset.load())
    if not 0 <= task_index < len(tasks):
        raise ValueError(f"--task {task_index}: the package has {len(tasks)} task(s) with this config")
    printer = Printer(stdout, as_json)
    config = env.taskset.config
    interaction = TerminalInteraction(
        tasks[task_index],
        LineReader(stdin),
        printer,
        tools=config.action_format == "tools",
        mcp=bool(getattr(env.taskset, "IS_MCP", False)),
    )
    await env.start()
    try:
        if env.start_error is not None:
            raise RuntimeError(env.start_error)
        agents, pool = _Agents(_Seat(interaction)), _RecordingPool(env.pool, printer)
        # The pool's session is all the loop uses of it: the recording one stands in for it.
        await play_episode(tasks[task_index], agents, cast(ServerPool, pool), env.adapter_taskset)
    finally:
        await asyncio.shield(env.stop())
    printer.end(interaction.turns, interaction.trace)
    return interaction.trace


def main(argv: list[str] | None = None) -> int:
    """`python -m openenvgen_runtime.client.play PACKAGE_ID ...`: what `openenv-gen play` runs, in the
    interpreter that has the package installed. One line and a sysexits code on a failure (`exit_code`)."""
    import argparse
    import logging

    parser = argparse.ArgumentParser(prog="openenv-gen play", description=__doc__.split("\n\n")[0])
    parser.add_argument("package_id")
    parser.add_argument("--path", help="a directory to import the package from (a package not installed)")
    parser.add_argument("--base-url", help="play on this running server instead of launching one")
    parser.add_argument("--script", help="read the replies from this file instead of standard input")
    parser.add_argument("--json", action="store_true", help="print one JSON object per turn")
    parser.add_argument("--task", type=int, default=0, help="which task (reset) to play; 0 is the first")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=JSON", help="a taskset config key (a JSON value)"
    )
    args = parser.parse_args(argv)
    if args.path:
        sys.path.insert(0, args.path)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s", stream=sys.stderr)
    try:
        taskset = settings_from_pairs(args.set)
        if args.base_url:
            taskset["base_url"] = args.base_url
        with contextlib.ExitStack() as stack:
            stdin = stack.enter_context(open(args.script, encoding="utf-8")) if args.script else sys.stdin
            asyncio.run(play(args.package_id, taskset=taskset, task_index=args.task, stdin=stdin, as_json=args.json))
    except KeyboardInterrupt:
        print("interrupted; the env was stopped", file=sys.stderr)
        return 130
    except Exception as e:  # one line for the person at the terminal; the env is already stopped
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        message = lines[0] if lines else type(e).__name__
        if len(lines) > 1 and message.endswith(":"):  # a launch failure's "last lines of its log:"
            message = f"{message} {lines[-1]}"
        print(f"openenv-gen: error: {message}", file=sys.stderr)
        return exit_code(e)
    return 0


def exit_code(error: BaseException) -> int:
    """The exit code of a failed play, as every openenv-gen command has it (sysexits): 69 when
    the env could not be started or reached or its server failed, 64 for a bad argument (a
    package not found, a bad `--set`), 70 for anything else."""
    if isinstance(error, (LaunchError, EnvLost, EnvProtocolError, ConnectionError, TimeoutError)):
        return UNAVAILABLE_EXIT
    if isinstance(error, (ValueError, ImportError)):  # pydantic's ValidationError is a ValueError
        return USAGE_EXIT
    return SOFTWARE_EXIT


if __name__ == "__main__":
    sys.exit(main())

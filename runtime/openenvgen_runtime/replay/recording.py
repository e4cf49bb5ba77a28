"""The recorded sessions a replay serves, and one session's position in one of them.

A recording is a folder of the JSON files `openenv-gen capture` writes from an upstream env:
`schema.json`, `metadata.json` (absent when the env's `/metadata` failed), `reset_request.json`
and `reset.json`, then `step_action.json`/`step.json` and `step_N_action.json`/`step_N.json` for
N = 2, 3, ...; for MCP envs `tools.json` or `mcp_tools_list.json`. The catalog envs that play an
episode here ship theirs in `recordings/`, one folder per upstream env folder: the files replay
reads of the captures the project keeps, copied by `write_recordings` (`make catalog`).
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.env_server.types import Action

RECORDINGS = Path(__file__).parent / "recordings"
"""The recordings this package ships, one folder per upstream env folder (`textarena_env`)."""


def recorded_envs(root: Path = RECORDINGS) -> list[str]:
    """The env folders with a recording under `root`, sorted."""
    return sorted(p.name for p in root.iterdir() if (p / "schema.json").is_file())


REPLAYED_FILE = re.compile(r"(schema|metadata|reset_request|reset|tools|mcp_tools_list|step(_\d+)?(_action)?)\.json")
"""The names of the files of a capture a replay reads (`load_recording`); the others are the
capture's evidence (health, seed and validation checks, its source)."""


def write_recordings(captures: Path, root: Path = RECORDINGS) -> list[str]:
    """`root` written anew from `openenv-gen capture`'s output folder `captures`: each env folder
    with a recorded step, with the files a replay reads. The env folders written, sorted."""
    written = sorted(p.name for p in captures.iterdir() if (p / "step.json").is_file())
    shutil.rmtree(root, ignore_errors=True)
    for env_folder in written:
        (root / env_folder).mkdir(parents=True)
        for source in sorted((captures / env_folder).iterdir()):
            if REPLAYED_FILE.fullmatch(source.name):
                shutil.copyfile(source, root / env_folder / source.name)
    return written


class ReplayError(ValueError):
    """The client did something the recording does not contain."""


# ---------------------------------------------------------------------------
# Recordings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    action: dict[str, Any]
    """The action the capture sent (the WS step message's data)."""
    reply: dict[str, Any]
    """The server's reply data: ``observation``, ``reward``, ``done``."""


@dataclass(frozen=True)
class Recording:
    """One recorded WebSocket session of a captured env, plus its schema and metadata."""

    env_folder: str
    schema: dict[str, Any]
    metadata: dict[str, Any] | None
    """None when the env's ``/metadata`` failed where it was captured (it could not be created)."""
    reset_kwargs: dict[str, Any]
    reset: dict[str, Any] | None
    """The reset reply's data; None when no session was recorded (see the env's source.json)."""
    steps: tuple[Step, ...]
    tools: tuple[dict[str, Any], ...] | None = None
    """The WS ``list_tools`` reply's tools (MCP envs only)."""

    @property
    def is_mcp(self) -> bool:
        return self.tools is not None

    def reward_at(self, index: int) -> float | None:
        return self.steps[index].reply.get("reward")

    def done_at(self, index: int) -> bool:
        """Replayed done: the recorded one, and always on the last recorded step."""
        return bool(self.steps[index].reply.get("done")) or index == len(self.steps) - 1

    @property
    def rewards(self) -> list[float]:
        """Per-step rewards as the runtime scores them (None counts 0)."""
        return [float(self.reward_at(i) or 0.0) for i in range(len(self.steps))]

    @property
    def total_reward(self) -> float:
        return sum(self.rewards)


def _read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text("utf-8"))


def load_recording(env_folder: str, *, episode: str = "", root: Path = RECORDINGS) -> Recording:
    """The session recorded in ``root/env_folder``: files ``{episode}reset_request.json``,
    ``{episode}reset.json``, then ``{episode}step_action.json``/``{episode}step.json`` and
    ``{episode}step_N_action.json``/``{episode}step_N.json`` for N = 2, 3, ...
    (``episode`` is a file prefix such as ``"kwargs_"`` for a second recorded session)."""
    folder = root / env_folder
    steps = []
    n = 1
    while True:
        stem = f"{episode}step" if n == 1 else f"{episode}step_{n}"
        if not (folder / f"{stem}.json").exists():
            break
        steps.append(Step(action=_read(folder, f"{stem}_action.json"), reply=_read(folder, f"{stem}.json")["data"]))
        n += 1
    if not (folder / "schema.json").exists():
        raise FileNotFoundError(f"{folder}: no schema.json recorded")
    session = (folder / f"{episode}reset.json").exists()
    return Recording(
        env_folder=env_folder,
        schema=_read(folder, "schema.json"),
        metadata=_read(folder, "metadata.json") if (folder / "metadata.json").exists() else None,
        reset_kwargs=_read(folder, f"{episode}reset_request.json")["data"] if session else {},
        reset=_read(folder, f"{episode}reset.json")["data"] if session else None,
        steps=tuple(steps),
        tools=_tools(folder),
    )


def _tools(folder: Path) -> tuple[dict[str, Any], ...] | None:
    """The MCP tools as the WS ``list_tools`` step lists them (``input_schema``): from that
    reply, else from ``POST /mcp`` tools/list (some envs' action models refuse the step)."""
    if (folder / "tools.json").exists():
        reply = _read(folder, "tools.json")
        if reply.get("type") == "observation":
            return tuple(reply["data"]["observation"]["tools"])
    if (folder / "mcp_tools_list.json").exists():
        listed = _read(folder, "mcp_tools_list.json").get("result", {}).get("tools", [])
        return tuple(
            {"name": t["name"], "description": t.get("description"), "input_schema": t["inputSchema"]} for t in listed
        )
    return None


def wire_action(action: Action) -> dict[str, Any]:
    """An action as compared with the recording: its fields, without the base metadata."""
    return action.model_dump(mode="json", exclude={"metadata"})


# ---------------------------------------------------------------------------
# What a replay server saw
# ---------------------------------------------------------------------------


@dataclass
class ReplayLog:
    """Every reset and action that reached a replay server, across its sessions."""

    resets: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self, kwargs: dict[str, Any]) -> None:
        with self._lock:
            self.resets.append(kwargs)

    def action(self, action: dict[str, Any]) -> None:
        with self._lock:
            self.actions.append(action)

    def error(self, message: str) -> ReplayError:
        with self._lock:
            self.errors.append(message)
        return ReplayError(message)


class Cursor:
    """One session's position in the recording; shared by typed and MCP replays."""

    def __init__(self, recording: Recording, log: ReplayLog, action_cls: type[Action]) -> None:
        self.recording = recording
        self.log = log
        self.action_cls = action_cls
        self.position = 0

    def reset(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Check `kwargs` against the recorded reset; return the recorded reset reply."""
        self.log.reset(kwargs)
        if self.recording.reset is None:
            raise self.log.error(f"{self.recording.env_folder}: no session was recorded (see its source.json)")
        # The runtime seeds every task (`seed=i` unless its kwargs set one); a replay is the
        # same whatever the seed, so a seed the recorded reset did not send is accepted.
        compared = kwargs if "seed" in self.recording.reset_kwargs else {k: v for k, v in kwargs.items() if k != "seed"}
        if compared != self.recording.reset_kwargs:
            raise self.log.error(f"reset kwargs {kwargs!r} are not the recorded {self.recording.reset_kwargs!r}")
        self.position = 0
        return self.recording.reset

    def advance(self, action: Action) -> int:
        """Check `action` against the recording; return the index of its recorded step."""
        got = wire_action(action)
        self.log.action(got)
        if self.position >= len(self.recording.steps):
            raise self.log.error(f"step {self.position + 1} was never recorded (the episode is over)")
        expected = wire_action(self.action_cls.model_validate(self.recording.steps[self.position].action))
        if got != expected:
            raise self.log.error(f"step {self.position + 1}: action {got!r} is not the recorded {expected!r}")
        self.position += 1
        return self.position - 1

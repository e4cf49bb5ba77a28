"""Real OpenEnv environments used as test fixtures.

Each environment is built with openenv's own server API (``create_app``), so
tests exercise exactly the wire protocol a published OpenEnv environment
speaks: ``/ws`` sessions, stateless HTTP ``/reset`` + ``/step``, ``/schema``,
``/health`` and (for the MCP fixture) JSON-RPC on ``/mcp``.

Fixtures:

* Word guessing (Wordle-like): one free-text field, concurrent sessions.
* GridMove: a multi-field action (Literal, bounded int, optional constrained
  str, nested model, str Enum) served with openenv's single-session default.
* EchoAdd MCP: an ``MCPEnvironment`` exposing ``echo_message``, ``add`` and
  ``fail`` tools; the episode is won when ``add`` returns 42.

Run one from the repo root, e.g.::

    python -m uvicorn openenvgen_testsupport.fixture_envs:wordle_app --port 8001
    python -m uvicorn --factory openenvgen_testsupport.fixture_envs:make_wordle_app  # fresh app
"""

from __future__ import annotations

import os
import re
import uuid
from collections import Counter
from enum import StrEnum
from typing import Any, Literal

from fastapi import FastAPI
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
)
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_SECRET",
    "MCP_TARGET_SUM",
    "EchoAddMCPEnvironment",
    "GridAction",
    "GridMoveEnvironment",
    "GridObservation",
    "GridState",
    "Mode",
    "TaggedWordGuessEnvironment",
    "Target",
    "WordGuessAction",
    "WordGuessEnvironment",
    "WordGuessObservation",
    "WordGuessState",
    "extract_guess",
    "grid_app",
    "make_grid_app",
    "make_mcp_app",
    "make_tagged_wordle_app",
    "make_wordle_app",
    "mcp_app",
    "wordle_app",
    "wordle_feedback",
    "wordle_prompt",
]


# ---------------------------------------------------------------------------
# Wordle-like word guessing
# ---------------------------------------------------------------------------

DEFAULT_SECRET = "crane"
DEFAULT_MAX_GUESSES = 6

# TextArena-style: the guess is the first "[word]" token in the message.
_BRACKETED = re.compile(r"\[([^\[\]]*)\]")


class WordGuessAction(Action):
    """One free-text move; the guess is the first ``[word]`` in ``message``."""

    message: str = Field(..., description="Your move, e.g. 'I guess [crane]'.")


class WordGuessObservation(Observation):
    prompt: str = Field(..., description="Instructions or the result of the last guess.")
    feedback: str = Field(
        "",
        description="Per-letter feedback for the last guess: G=right spot, Y=wrong spot, X=absent.",
    )


class WordGuessState(State):
    guesses: list[str] = Field(default_factory=list)
    max_guesses: int = DEFAULT_MAX_GUESSES
    won: bool = False


def extract_guess(message: str) -> str:
    """The first bracketed token, else the whole message; stripped and lowercased."""
    match = _BRACKETED.search(message)
    raw = match.group(1) if match else message
    return raw.strip().lower()


def wordle_feedback(guess: str, secret: str) -> str:
    """Standard Wordle marks, space separated (e.g. ``"G G X Y X"``).

    Greens are assigned first so a repeated letter only earns as many Y marks
    as there are unmatched copies left in the secret.
    """
    if len(guess) != len(secret):
        raise ValueError("guess and secret must have the same length")
    marks = ["X"] * len(secret)
    unmatched: Counter[str] = Counter()
    for i, (g, s) in enumerate(zip(guess, secret, strict=True)):
        if g == s:
            marks[i] = "G"
        else:
            unmatched[s] += 1
    for i, g in enumerate(guess):
        if marks[i] != "G" and unmatched[g] > 0:
            marks[i] = "Y"
            unmatched[g] -= 1
    return " ".join(marks)


def wordle_prompt(word_length: int, max_guesses: int) -> str:
    """The reset prompt (exposed so tests can match conversations by it)."""
    return (
        f"Guess the secret {word_length}-letter word in at most {max_guesses} guesses. "
        "Reply with your guess in square brackets, e.g. [crane]. After each guess you get "
        "feedback per letter: G = right letter, right spot; Y = in the word, wrong spot; "
        "X = not in the word."
    )


class WordGuessEnvironment(Environment[WordGuessAction, WordGuessObservation, WordGuessState]):
    """Wordle-like game. Every step consumes a guess (even a malformed one) so
    episodes always terminate within ``max_guesses`` steps."""

    # Each instance owns all of its state, so one instance per WS session is safe.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._secret = DEFAULT_SECRET
        self._state = WordGuessState(episode_id=str(uuid.uuid4()))

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        secret: str | None = None,
        max_guesses: int = DEFAULT_MAX_GUESSES,
        **kwargs: Any,
    ) -> WordGuessObservation:
        # `seed` is accepted for API compatibility; the game is deterministic.
        self._secret = (secret or DEFAULT_SECRET).strip().lower()
        if max_guesses < 1:
            raise ValueError("max_guesses must be >= 1")
        self._state = WordGuessState(episode_id=episode_id or str(uuid.uuid4()), max_guesses=max_guesses)
        return WordGuessObservation(
            prompt=wordle_prompt(len(self._secret), max_guesses),
            done=False,
            reward=0.0,
        )

    def step(
        self,
        action: WordGuessAction,
        timeout_s: float | None = None,
        **kwargs: Any,
    ) -> WordGuessObservation:
        state = self._state
        if state.won or len(state.guesses) >= state.max_guesses:
            # Stepping a finished episode is not an error; report it as over.
            return WordGuessObservation(prompt="The game is over. Reset to play again.", done=True, reward=0.0)

        guess = extract_guess(action.message)
        state.step_count += 1
        state.guesses = [*state.guesses, guess]
        left = state.max_guesses - len(state.guesses)

        if guess == self._secret:
            state.won = True
            return WordGuessObservation(
                prompt=f"Correct! The word was {self._secret}.",
                feedback=wordle_feedback(guess, self._secret),
                done=True,
                reward=1.0,
            )

        if len(guess) != len(self._secret):
            prompt = f"Invalid guess {guess!r}: it must be a {len(self._secret)}-letter word."
            feedback = ""
        else:
            prompt = f"Wrong guess [{guess}]."
            feedback = wordle_feedback(guess, self._secret)
        if left == 0:
            prompt += f" Out of guesses; the word was {self._secret}."
        else:
            prompt += f" {left} guess{'es' if left != 1 else ''} left."
        return WordGuessObservation(prompt=prompt, feedback=feedback, done=left == 0, reward=0.0)

    @property
    def state(self) -> WordGuessState:
        return self._state


class TaggedWordGuessEnvironment(WordGuessEnvironment):
    """The same game; a reset prompt ends with "(server TAG)" when $WORDLE_FIXTURE_TAG is
    set, so a test can tell which server of a fleet a conversation is on."""

    def reset(self, *args: Any, **kwargs: Any) -> WordGuessObservation:
        observation = super().reset(*args, **kwargs)
        tag = os.environ.get("WORDLE_FIXTURE_TAG")
        if not tag:
            return observation
        return observation.model_copy(update={"prompt": f"{observation.prompt} (server {tag})"})


# ---------------------------------------------------------------------------
# GridMove: multi-field action schema
# ---------------------------------------------------------------------------

GRID_SIZE = 5
GRID_MAX_STEPS = 10


class Mode(StrEnum):
    walk = "walk"
    run = "run"


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")

    x: int = Field(..., ge=0, le=GRID_SIZE - 1)
    y: int = Field(..., ge=0, le=GRID_SIZE - 1)


class GridAction(Action):
    """Move on a 5x5 grid; the move scores if it ends on ``target``."""

    direction: Literal["up", "down", "left", "right"]
    steps: int = Field(1, ge=1, le=3, description="Cells to move (doubled when running).")
    note: str | None = Field(None, max_length=20, description="Free-form note, echoed back.")
    target: Target
    mode: Mode = Mode.walk


class GridObservation(Observation):
    position: list[int] = Field(..., description="[x, y] after the move.")
    message: str = ""


class GridState(State):
    position: list[int] = Field(default_factory=lambda: [0, 0])


# "up" increases y (maths orientation); moves are clamped to the grid.
_DELTAS: dict[str, tuple[int, int]] = {
    "up": (0, 1),
    "down": (0, -1),
    "left": (-1, 0),
    "right": (1, 0),
}


def _clamp(value: int) -> int:
    return max(0, min(GRID_SIZE - 1, value))


class GridMoveEnvironment(Environment[GridAction, GridObservation, GridState]):
    """Single-session grid walker (openenv's default concurrency of 1)."""

    SUPPORTS_CONCURRENT_SESSIONS = False

    def __init__(self) -> None:
        super().__init__()
        self._state = GridState(episode_id=str(uuid.uuid4()))

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        start: list[int] | None = None,
        **kwargs: Any,
    ) -> GridObservation:
        x, y = start if start is not None else (0, 0)
        position = [_clamp(int(x)), _clamp(int(y))]
        self._state = GridState(episode_id=episode_id or str(uuid.uuid4()), position=position)
        return GridObservation(
            position=list(position),
            message=(
                f"You are at {position} on a {GRID_SIZE}x{GRID_SIZE} grid. Move onto your "
                f"target within {GRID_MAX_STEPS} moves."
            ),
            done=False,
            reward=0.0,
        )

    def step(self, action: GridAction, timeout_s: float | None = None, **kwargs: Any) -> GridObservation:
        state = self._state
        dx, dy = _DELTAS[action.direction]
        distance = action.steps * (2 if action.mode is Mode.run else 1)
        x, y = state.position
        state.position = [_clamp(x + dx * distance), _clamp(y + dy * distance)]
        state.step_count += 1

        hit = state.position == [action.target.x, action.target.y]
        message = f"{action.mode.value} {action.direction} {distance} -> {state.position}"
        if action.note:
            message += f" (note: {action.note})"
        if hit:
            message += "; on target!"
        return GridObservation(
            position=list(state.position),
            message=message,
            done=hit or state.step_count >= GRID_MAX_STEPS,
            reward=1.0 if hit else 0.0,
        )

    @property
    def state(self) -> GridState:
        return self._state


# ---------------------------------------------------------------------------
# MCP tools environment
# ---------------------------------------------------------------------------

MCP_TARGET_SUM = 42


class EchoAddMCPEnvironment(MCPEnvironment):
    """MCP tool env: ``echo_message``, ``add`` and an always-failing ``fail``.

    Rewards live in ``step``/``step_async`` (overridden below) because
    ``MCPEnvironment`` routes ``CallToolAction`` to the FastMCP server and
    returns a plain ``CallToolObservation`` (done=False, reward=None). Note the
    HTTP ``POST /mcp`` ``tools/call`` path bypasses ``step`` entirely, so it
    never reports reward/done; only WS/HTTP ``step`` with ``call_tool`` does.
    """

    # A fresh FastMCP server per instance: sessions share nothing.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        server = FastMCP("echo-add")

        @server.tool()
        def echo_message(message: str) -> str:
            """Echo the message back unchanged."""
            return message

        @server.tool()
        def add(a: int, b: int) -> int:
            """Return a + b. The episode is won when the sum is 42."""
            return a + b

        @server.tool()
        def fail() -> str:
            """Always raises a tool error."""
            # ToolError text is passed through to the client even when FastMCP
            # masks error details; avoid the words "invalid"/"argument"/"not found",
            # which openenv would classify as a different ToolErrorType.
            raise ToolError("fail() always fails on purpose")

        # Tools must be registered before super().__init__, which validates names.
        super().__init__(server)
        self._state = State(episode_id=str(uuid.uuid4()))
        self._won = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        **kwargs: Any,
    ) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        self._won = False
        return Observation(
            done=False,
            reward=0.0,
            metadata={
                "status": "ready",
                "message": f"Call tools; make add() return {MCP_TARGET_SUM} to win.",
            },
        )

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        # Only reachable with a non-MCP Action subclass (the app's action_cls is
        # CallToolAction, so the server never deserializes one).
        return Observation(
            done=False,
            reward=0.0,
            metadata={"error": f"unsupported action type {type(action).__name__}"},
        )

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return self._score(action, super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        # The WS handler prefers step_async (MCPEnvironment overrides it), so
        # scoring has to be applied on this path as well.
        observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return self._score(action, observation)

    def _score(self, action: Action, observation: Observation) -> Observation:
        self._state.step_count += 1
        if isinstance(action, ListToolsAction):
            return observation  # discovery is free: no reward, never ends the episode
        if self._won:
            # Already won: stay done, but never pay the reward twice.
            observation.reward = 0.0
            observation.done = True
            return observation
        won = (
            isinstance(action, CallToolAction)
            and isinstance(observation, CallToolObservation)
            and action.tool_name == "add"
            and observation.error is None
            and _tool_result_value(observation.result) == MCP_TARGET_SUM
        )
        self._won = won
        observation.reward = 1.0 if won else 0.0
        observation.done = won
        return observation

    @property
    def state(self) -> State:
        return self._state


def _tool_result_value(result: Any) -> Any:
    """The structured value of a FastMCP ``CallToolResult`` (``.data``)."""
    return getattr(result, "data", None)


# ---------------------------------------------------------------------------
# Apps
# ---------------------------------------------------------------------------


def make_wordle_app(max_concurrent_envs: int = 8) -> FastAPI:
    # create_app defaults to max_concurrent_envs=1 even for envs that declare
    # SUPPORTS_CONCURRENT_SESSIONS, so concurrency must be requested explicitly.
    return create_app(
        WordGuessEnvironment,
        WordGuessAction,
        WordGuessObservation,
        env_name="wordle_fixture",
        max_concurrent_envs=max_concurrent_envs,
    )


def make_tagged_wordle_app() -> FastAPI:
    """The wordle app with $WORDLE_FIXTURE_TAG in its reset prompts (same schema)."""
    return create_app(
        TaggedWordGuessEnvironment,
        WordGuessAction,
        WordGuessObservation,
        env_name="wordle_fixture",
        max_concurrent_envs=8,
    )


def make_grid_app() -> FastAPI:
    # Default concurrency (1 WS session): a second concurrent /ws gets CAPACITY_REACHED.
    return create_app(GridMoveEnvironment, GridAction, GridObservation, env_name="grid_fixture")


def make_mcp_app(max_concurrent_envs: int = 8) -> FastAPI:
    # CallToolAction as action_cls is what makes openenv deserialize
    # {"type": "list_tools"} / {"type": "call_tool", ...} step payloads.
    return create_app(
        EchoAddMCPEnvironment,
        CallToolAction,
        CallToolObservation,
        env_name="mcp_fixture",
        max_concurrent_envs=max_concurrent_envs,
    )


wordle_app = make_wordle_app()
grid_app = make_grid_app()
mcp_app = make_mcp_app()

"""Hand-written server-side action models for the captured upstream envs.

Each is written the way an OpenEnv env author writes its action (a subclass of
openenv's `Action`), from the field list in the capture. A test proves each one's JSON
schema equals the captured `/schema` action exactly, so each stands in for the
upstream server's own model in the validation-equivalence tests.
"""

from __future__ import annotations

from typing import Any, Literal

from openenv.core.env_server.types import Action
from pydantic import Field


class TextArenaAction(Action):
    """Action issued by the agent for TextArena games."""

    message: str


class ChessAction(Action):
    """Action for Chess environment.

    Attributes:
        move: UCI format move string (e.g., "e2e4", "e7e8q" for promotion)."""

    move: str


class CodeAction(Action):
    """Represents a single code execution request."""

    code: str


class Connect4Action(Action):
    """Action for Connect4 environment.

    Attributes:
        column: The column index (0 to 6) where the piece will be placed."""

    column: int


class MazeAction(Action):
    """Action for the Maze environment."""

    action: int


class ReasoningGymAction(Action):
    """Action for the Reasoning Gym environment - the agent's answer."""

    answer: str = Field(..., description="The agent's answer to the current question")


class CallToolAction(Action):
    """Call a specific tool via MCP.

    This action triggers MCP's tools/call operation with the
    specified tool name and arguments."""

    type: Literal["call_tool"] = Field(default="call_tool", description="Action type discriminator")
    tool_name: str = Field(..., description="Name of the tool to call")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments to pass to the tool")


SERVER_ACTIONS: dict[str, type[Action]] = {
    "textarena_env": TextArenaAction,
    "chess_env": ChessAction,
    "coding_env": CodeAction,
    "connect4_env": Connect4Action,
    "maze_env": MazeAction,
    "reasoning_gym_env": ReasoningGymAction,
    "echo_env": CallToolAction,
}

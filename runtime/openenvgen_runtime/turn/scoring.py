"""How an episode ends and what it earned."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Stop:
    """Stop conditions this runtime sets on the trace (verifiers' own limits, such as
    `max_turns`, keep their names)."""

    ENV_DONE = "env_done"
    """The environment said the episode is over."""
    EMPTY_ACTION = "empty_action"
    """The model replied with nothing; no action can advance the env."""
    INVALID_ACTION = "invalid_action"
    """Too many consecutive replies that were not valid actions."""
    ENV_LOST = "env_lost"
    """The connection to the environment broke, or it gave no reply within `reply_timeout`."""
    ENV_PROTOCOL_ERROR = "env_protocol_error"
    """A reply of the environment broke OpenEnv's wire contract (`turn.replies`)."""


REWARD_NAME = "openenv_reward"
METRICS_NAME = "openenv_metrics"
"""The runtime's metric function: the final observation's numbers, `env_steps`, `invalid_actions`."""
SCORE_INFO = "openenv_score"
"""Where an episode records what it earned, in `trace.info`: its per-step rewards and its
invalid replies, from which the runtime's reward and metrics are scored (and rescored)."""


@dataclass
class Score:
    """Per-step rewards as OpenEnv reports them; the episode scores their sum."""

    rewards: list[float] = field(default_factory=list)
    invalid_actions: int = 0

    def add(self, reward: float | int | bool | None) -> None:
        self.rewards.append(float(reward or 0.0))

    @property
    def total(self) -> float:
        return sum(self.rewards)

    def info(self) -> dict[str, Any]:
        """What `trace.info[SCORE_INFO]` holds."""
        return {"rewards": list(self.rewards), "invalid_actions": self.invalid_actions}

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> Score:
        """The score an episode recorded in `info` (a trace's `info`)."""
        recorded = info.get(SCORE_INFO)
        if not isinstance(recorded, dict):
            raise ValueError(
                f"the trace has no {SCORE_INFO!r} in its info (saved by an older openenvgen-runtime): "
                "the env's rewards cannot be scored from it"
            )
        return cls([float(r) for r in recorded.get("rewards") or []], int(recorded.get("invalid_actions") or 0))

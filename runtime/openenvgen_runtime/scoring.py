"""How an episode ends and what it earned."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """The connection to the environment broke mid-episode."""


REWARD_NAME = "openenv_reward"


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

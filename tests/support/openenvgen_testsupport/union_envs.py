"""A real OpenEnv environment whose action is a discriminated union of three models.

Served with openenv's own `create_app`, like the other fixtures. Its action class is an
`Action` whose `model_validate`/`model_json_schema` are those of a Pydantic
`Annotated[PeekAction | AddAction | SubmitAction, Field(discriminator="kind")]`: the way
upstream's agent_world_model_env serves its list/call union. So `/schema.action` is what
Pydantic writes for the union (`oneOf` + `discriminator` + `$defs`), the server validates
every step with that union, and the env receives the concrete member.

The game: reach `target` (a reset kwarg, default 7) by adding 1..5 at a time, then submit
the total. `peek` shows the total, `add` adds, `submit` ends the episode with reward 1.0
when the submitted total is the target, else 0.0.

`make_union_app(reset_observation=True)` also serves `/schema.reset_observation` (as
openenv >= 0.10 does) with a reset observation model of its own, `CounterStart`.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, ClassVar, Literal

from fastapi import FastAPI
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "AddAction",
    "CounterAction",
    "CounterEnvironment",
    "CounterObservation",
    "CounterStart",
    "PeekAction",
    "SubmitAction",
    "UnionAction",
    "make_union_app",
]

DEFAULT_TARGET = 7


class PeekAction(BaseModel):
    """Look at the running total without changing it."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["peek"] = "peek"


class AddAction(BaseModel):
    """Add 1 to 5 to the running total."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["add"] = "add"
    amount: int = Field(..., ge=1, le=5, description="How much to add (1-5).")


class SubmitAction(BaseModel):
    """Submit the total: the episode ends, rewarded when it is the target."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["submit"] = "submit"
    total: int = Field(..., description="The total you reached.")


class UnionAction(Action):
    """A union as openenv's action class (set `UNION`): validating returns the concrete member,
    and its JSON schema is the union's."""

    UNION: ClassVar[TypeAdapter[Any]]

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return cls.UNION.validate_python(obj)

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return cls.UNION.json_schema(**kwargs)


CounterUnion = Annotated[PeekAction | AddAction | SubmitAction, Field(discriminator="kind")]


class CounterAction(UnionAction):
    """The counter's union as openenv's action class."""

    UNION = TypeAdapter(CounterUnion)


class CounterObservation(Observation):
    total: int = Field(0, description="The running total.")
    message: str = Field("", description="What happened.")


class CounterStart(Observation):
    """What reset returns: the target as well."""

    total: int = Field(0, description="The running total.")
    target: int = Field(..., description="The total to reach.")
    message: str = Field("", description="What to do.")


class CounterEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._target = DEFAULT_TARGET
        self._total = 0
        self._state = State(episode_id=str(uuid.uuid4()))

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, target: int = DEFAULT_TARGET, **kwargs: Any
    ) -> Observation:
        self._target, self._total = int(target), 0
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return CounterStart(
            total=0, target=self._target, message=f"Reach {self._target}, then submit it.", done=False, reward=0.0
        )

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        if isinstance(action, AddAction):
            self._total += action.amount
            return CounterObservation(total=self._total, message=f"added {action.amount}", done=False, reward=0.0)
        if isinstance(action, SubmitAction):
            won = action.total == self._total == self._target
            return CounterObservation(
                total=self._total, message="won" if won else "lost", done=True, reward=1.0 if won else 0.0
            )
        if isinstance(action, PeekAction):
            return CounterObservation(total=self._total, message="peeked", done=False, reward=0.0)
        raise TypeError(f"not a counter action: {type(action).__name__}")

    @property
    def state(self) -> State:
        return self._state


def make_union_app(*, reset_observation: bool = False) -> FastAPI:
    app = create_app(CounterEnvironment, CounterAction, CounterObservation, env_name="counter", max_concurrent_envs=4)
    if reset_observation:
        # openenv 0.4.1 has no `reset_observation`; serve /schema as openenv >= 0.10 does.
        app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) != "/schema"]

        @app.get("/schema")
        def schema() -> dict[str, Any]:
            return {
                "action": CounterAction.model_json_schema(),
                "observation": CounterObservation.model_json_schema(),
                "reset_observation": CounterStart.model_json_schema(),
                "state": State.model_json_schema(),
            }

    return app

"""Every step goes through OpenEnv's public client (`episode.step_action` is `client.step`): the
result, a refused action and a late reply come out as the runtime reads them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from openenvgen_runtime.episodes.episode import EnvLost, step_action
from openenvgen_runtime.launching.openenv_import import openenv_module
from openenvgen_runtime.turn.actions import InvalidAction
from openenvgen_testsupport.servers import serve_app


async def _outcome(step: Any) -> tuple[Any, ...]:
    """What awaiting a step gave: its observation, reward and done, or its error."""
    try:
        result = await step
    except Exception as e:
        return type(e).__name__, str(e)
    return result.observation, result.reward, result.done


def test_a_step_is_the_clients_step(wordle_server: str) -> None:
    """The same observation, reward and done as `client.step` on a second session; an
    action the server refuses is an InvalidAction the model can read."""
    client_class = openenv_module("openenv.core").GenericEnvClient

    async def play() -> None:
        ours, theirs = client_class(base_url=wordle_server), client_class(base_url=wordle_server)
        try:
            for client in (ours, theirs):
                await client.reset(max_guesses=10)
            for action in ({"message": "[slate]"}, {"message": "[crane]"}):
                a, b = await _outcome(step_action(ours, action)), await _outcome(theirs.step(action))
                assert a == b and a[0] != "RuntimeError", (a, b)
            with pytest.raises(InvalidAction, match="VALIDATION_ERROR") as refused:
                await step_action(ours, {"guess": "x"})
            assert not str(refused.value).startswith("Server error")
        finally:
            await ours.close()
            await theirs.close()

    asyncio.run(play())


def _nap_app() -> Any:
    """A real OpenEnv server whose step takes as long as the action asks."""
    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class NapAction(Action):
        seconds: float

    class NapObservation(Observation):
        slept: float = 0.0

    class NapEnvironment(Environment[NapAction, NapObservation, State]):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State()

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> NapObservation:
            return NapObservation()

        def step(self, action: NapAction, timeout_s: float | None = None, **kwargs: Any) -> NapObservation:
            time.sleep(action.seconds)
            return NapObservation(slept=action.seconds)

        @property
        def state(self) -> State:
            return self._state

    return create_app(NapEnvironment, NapAction, NapObservation, env_name="nap", max_concurrent_envs=4)


def test_a_late_reply_loses_the_session_under_the_clients_timeout() -> None:
    """Each reply has the client's `message_timeout_s`: replies in time (one after an earlier
    reply's deadline included) are results; a late one ends the episode as `env_lost`."""
    client_class = openenv_module("openenv.core").GenericEnvClient

    async def play(url: str) -> None:
        client = client_class(base_url=url, message_timeout_s=1.0)
        try:
            await client.reset()
            naps = (0.0, 0.6, 0.6)
            done = [await _outcome(step_action(client, {"seconds": seconds})) for seconds in naps]
            assert done == [({"slept": seconds, "metadata": {}}, None, False) for seconds in naps]
            with pytest.raises(EnvLost, match="TimeoutError"):
                await step_action(client, {"seconds": 2.0})
        finally:
            await client.close()

    with serve_app(_nap_app(), ready_path="/health") as url:
        asyncio.run(play(str(url)))

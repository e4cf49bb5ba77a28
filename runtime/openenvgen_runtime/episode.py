"""One episode: reset → (model turn → validate → step)* → done, over one WebSocket session.

The runtime plays the user: the reset observation opens the chat, every valid reply is
stepped host-side, and the next observation (with the live action schema) is the next
user turn. A reply that is not a valid action goes back to the model with the reason,
up to `max_invalid_actions` times in a row. The step rewards are summed onto the trace
before the interaction closes, so they are part of the score verifiers reports.

A WebSocket that breaks mid-episode ends the episode as `env_lost` (and failed): the
server-side env is gone, and a new session would be a different episode.
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.exceptions import ConnectionClosed

from openenvgen_runtime.actions import ActionSpace, InvalidAction
from openenvgen_runtime.pool import ServerPool
from openenvgen_runtime.prompts import invalid, turn
from openenvgen_runtime.scoring import REWARD_NAME, Score, Stop

# What a broken session looks like from openenv's client.
_LOST = (ConnectionClosed, ConnectionError, asyncio.TimeoutError, OSError)


class EnvLost(RuntimeError):
    """The environment's session broke mid-episode."""


async def _step(client: Any, action: dict[str, Any]) -> Any:
    try:
        return await client.step(action)
    except _LOST as e:
        raise EnvLost(f"lost the environment session: {type(e).__name__}: {e}") from e
    except RuntimeError as e:
        if "VALIDATION_ERROR" in str(e):
            # The server refused an action our model accepted: tell the model, like any
            # invalid reply (the schema may have drifted since generation).
            raise InvalidAction(str(e).removeprefix("Server error: ")) from None
        raise


async def play(task: Any, agents: Any, pool: ServerPool, space_for: Any, max_invalid: int) -> None:
    score = Score()
    async with pool.session(task.data.reset) as (server, client, result):
        space: ActionSpace = space_for(server)
        async with agents.player.interaction(task) as interaction:
            trace = interaction.trace
            try:
                segment = await interaction.turn(turn(result.observation, space))
                streak = 0
                while not segment.terminated:
                    reply = segment.last_reply
                    if not reply.strip():
                        trace.stop(Stop.EMPTY_ACTION)
                        break
                    try:
                        result = await _step(client, space.parse(reply))
                    except InvalidAction as e:
                        score.invalid_actions += 1
                        streak += 1
                        if streak > max_invalid:
                            trace.stop(Stop.INVALID_ACTION)
                            break
                        segment = await interaction.turn(invalid(str(e), max_invalid - streak + 1))
                        continue
                    streak = 0
                    score.add(result.reward)
                    if result.done:
                        trace.stop(Stop.ENV_DONE)
                        break
                    segment = await interaction.turn(turn(result.observation, space, result.reward))
            except EnvLost:
                # Named first (the first stop condition wins), then raised: verifiers
                # records the failure on the trace and fails the episode, so it is
                # never scored as a finished game and `--env.retries` can rerun it.
                trace.stop(Stop.ENV_LOST)
                raise
            finally:
                trace.record_reward(REWARD_NAME, score.total)
                trace.record_metric("env_steps", len(score.rewards))
                trace.record_metric("invalid_actions", score.invalid_actions)

"""One episode: reset → (model turn → validate → step)* → done, over one WebSocket session.

The runtime plays the user: the reset observation opens the chat, every valid action is
stepped host-side, and the next observation is the next turn, rendered by `observations`
(hidden fields out, media as content parts; the env's `system_prompt` leads the system
message) or by the package's `custom.py` renderer (given the package's observation model
when it asks for it, `typed_hooks`). An action comes either as
text (parsed as JSON, or a bare value) or, with `action_format="tools"`, as a native tool
call; then the observation goes back as that call's tool result, so the conversation
stays well-formed for chat templates (a plain-text reply is still parsed as text). A
reply that is not a valid action goes back to the model with the reason, up to
`max_invalid_actions` times in a row. The step rewards are summed onto the trace before
the interaction closes, so they are part of the score verifiers reports; the final
observation goes to `trace.info["openenv"]` and its numeric fields become metrics; when a
`custom.py` reward or metric asks for `observation(s)`, those observations go to
`trace.info["openenv_observations"]`, whence the hooks read them.

A WebSocket that breaks mid-episode, or a server that does not answer within
`reply_timeout`, ends the episode as `env_lost` (and failed): the server-side env is gone,
and a new session would be a different episode. A reply that breaks OpenEnv's wire contract
(`turn.replies`: a NaN reward, a `done` that is no boolean, a frame that is not JSON, ...)
ends it as `env_protocol_error` (and failed): nothing of that reply is scored. Either way
the error is raised after the stop is named, so verifiers records it on the trace and
`--env.retries` can rerun the episode (its rules match `EnvLost` or `EnvProtocolError`).
Both apply to the reset too: its episode ends the same way, before the model is asked.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, Self, TypeVar

from verifiers.v1.types import AssistantMessage, ToolMessage, UserMessage
from websockets.exceptions import ConnectionClosed

from openenvgen_runtime.config import AdapterConfig, AdapterData
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.hooks.extensions import NO_EXTENSION, Extension
from openenvgen_runtime.hooks.typed_hooks import INFO_KEY, NO_MODELS, RESET, STEP, ObservationModels, entry
from openenvgen_runtime.launching.open_files import too_many_open_files
from openenvgen_runtime.launching.servers import Server
from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction, ToolCallRequest
from openenvgen_runtime.turn.observations import (
    ObservationView,
    env_system_prompt,
    final_info,
    numeric_metrics,
    system_prompt_with_env,
)
from openenvgen_runtime.turn.prompts import invalid, turn
from openenvgen_runtime.turn.replies import EnvLost, EnvProtocolError, protocol_failure
from openenvgen_runtime.turn.scoring import REWARD_NAME, SCORE_INFO, Score, Stop

# What a broken session looks like from openenv's client.
_LOST = (ConnectionClosed, ConnectionError, asyncio.TimeoutError, OSError)


class EpisodeTask(Protocol):
    """What an episode reads of its task (`taskset.AdapterTask` is one)."""

    @property
    def data(self) -> AdapterData: ...

    def with_system_prompt(self, system_prompt: str) -> Self: ...


TaskT = TypeVar("TaskT", bound=EpisodeTask)


class EpisodeTaskset(Protocol[TaskT]):
    """What an episode calls back into its taskset for (`taskset.AdapterTaskset` is one): the
    options, and per server the action space and the observation view, per episode the MCP
    tools a task brings."""

    @property
    def config(self) -> AdapterConfig: ...

    def action_space(self, server: Server) -> ActionSpace: ...

    async def episode_space(
        self, space: ActionSpace, server: Server, client: Any, task: TaskT
    ) -> tuple[ActionSpace, TaskT]: ...

    def observation_view(self, server: Server) -> ObservationView: ...


__all__ = ["EnvLost", "EnvProtocolError", "next_turn", "play", "session_failure", "step_action"]

# What OpenEnv's client raises on a reply it cannot read (`replies.protocol_failure` reads them).
_UNREADABLE = (ValueError, OverflowError, AttributeError, TypeError)


def session_failure(error: Exception, where: str = "") -> EnvLost | EnvProtocolError | InvalidAction | None:
    """What an error of a session request means: the reply broke the contract
    (`EnvProtocolError`), the session is lost (`EnvLost`), the server refused the action
    (`InvalidAction`), or none of these (None: let it propagate). `where` names the server
    in the message."""
    if isinstance(error, EnvLost):
        return error
    protocol = protocol_failure(error)
    if protocol is not None:
        return protocol.on(where) if where else protocol
    if isinstance(error, _LOST):
        detail = str(error) or ("no reply within reply_timeout" if isinstance(error, asyncio.TimeoutError) else "")
        return EnvLost(f"lost the environment session{where}: {type(error).__name__}: {detail}")
    if isinstance(error, RuntimeError) and "VALIDATION_ERROR" in str(error):
        # The server refused an action our model accepted: tell the model, like any
        # invalid reply (the schema may have drifted since generation).
        return InvalidAction(str(error).removeprefix("Server error: "))
    return None


def episode_metrics(final: dict[str, Any], score: Score) -> dict[str, float]:
    """The runtime's metrics of an episode: the final observation's numbers, then its own
    counts (last, so they win a name clash)."""
    return {
        **numeric_metrics(final),
        "env_steps": float(len(score.rewards)),
        "invalid_actions": float(score.invalid_actions),
    }


async def step_action(client: Any, action: dict[str, Any]) -> Any:
    """`await client.step(action)` (OpenEnv's client, under its own `message_timeout_s`),
    its failures read by `session_failure`."""
    try:
        return await client.step(action)
    except (*_LOST, RuntimeError, *_UNREADABLE) as e:
        failure = session_failure(e)
        if failure is None:
            raise
        raise failure from (e if isinstance(failure, EnvLost) and failure is not e else None)


def _tool_calls(segment: Any) -> list[ToolCallRequest]:
    """The tool calls of the segment's last assistant message (none for a text reply)."""
    for message in reversed(segment.messages):
        if isinstance(message, AssistantMessage):
            return [ToolCallRequest(c.id, c.name, c.arguments) for c in message.tool_calls or []]
    return []


def _answer(calls: list[ToolCallRequest], content: str | list[Any]) -> str | list[Any]:
    """The next turn: `content` as the user's message, or as the result of each tool call
    (every call gets one, so the conversation stays well-formed). A tool result carries
    text only: attachments follow it in a user message."""
    text: str
    if not isinstance(content, str):
        text, attachments = content[0].text, content[1:]
        if not calls:
            return [UserMessage(content=content)]
    else:
        text, attachments = content, []
    if not calls:
        return text
    results: list[Any] = [ToolMessage(tool_call_id=call.id, name=call.name, content=text) for call in calls]
    return results + ([UserMessage(content=attachments)] if attachments else [])


async def next_turn(
    view: ObservationView,
    space: ActionSpace,
    observation: dict[str, Any],
    reward: float | None = None,
    *,
    tools: bool = False,
    extension: Extension = NO_EXTENSION,
    models: ObservationModels = NO_MODELS,
    kind: str = STEP,
) -> str | list[Any]:
    """What the model reads for one observation (a `kind` of `reset` or `step`): its text
    (the package's renderer, if it set one: given `models`' instance, or the visible
    fields), the reward and, unless actions are tools, the action schema; with media,
    verifiers content parts."""
    rendered = await view.render(observation)
    if extension.typed_renderer:
        text = extension.render(models.instance(kind, observation, reward, False))
    else:
        text = rendered.text if extension.renderer is None else extension.render(rendered.fields)
    return rendered.content(turn(text, space, reward, schema=not tools))


async def play(task: TaskT, agents: Any, pool: ServerPool, taskset: EpisodeTaskset[TaskT]) -> None:
    """Play `task` on a pooled server; `taskset` gives the per-server action space and
    observation view, its config the action format and the invalid-reply budget. An episode
    that runs out of open files ends as `OpenFilesError`, which says so, whatever raised."""
    try:
        await _play(task, agents, pool, taskset)
    except Exception as error:
        named = too_many_open_files(error)
        if named is None:
            raise
        raise named from error


async def _play(task: TaskT, agents: Any, pool: ServerPool, taskset: EpisodeTaskset[TaskT]) -> None:
    opened = False
    try:
        async with pool.session(task.data.reset) as (server, client, result):
            opened = True
            await _play_session(task, agents, taskset, server, client, result)
    except (EnvLost, EnvProtocolError) as error:
        if opened:
            raise
        # The reset failed: the episode ends before the model is asked, on a trace of its own.
        async with agents.player.interaction(task) as interaction:
            interaction.trace.stop(_stop_for(error))
            record(interaction.trace, Score(), {}, [], records=None)
            raise


def _stop_for(error: EnvLost | EnvProtocolError) -> str:
    return Stop.ENV_LOST if isinstance(error, EnvLost) else Stop.ENV_PROTOCOL_ERROR


def observed(seen: list[dict[str, Any]], records: str, kind: str, observation: dict[str, Any], result: Any) -> None:
    """Keep `observation` for the hooks in `seen`, as the extension's `records` asks: every
    one (`all`), the last (`last`) or none."""
    if records == "last":
        seen.clear()
    if records:
        seen.append(entry(kind, observation, result.reward, bool(result.done)))


def record(trace: Any, score: Score, last: dict[str, Any], seen: list[dict[str, Any]], records: Any) -> None:
    """What the episode earned and its final observation (without media) stay on the trace:
    the task's own reward and metrics are scored from them (`AdapterTask.openenv_reward`),
    live, by `vf-replay` and by a TRL environment's `get_reward` alike. Recorded for an
    episode that fails before it is scored too."""
    trace.record_reward(REWARD_NAME, score.total)
    trace.info[SCORE_INFO] = score.info()
    trace.info["openenv"] = last_info = final_info(last)
    if records:
        trace.info[INFO_KEY] = [
            {**e, "observation": last_info if e["observation"] is last else final_info(e["observation"])} for e in seen
        ]
    trace.record_metrics(episode_metrics(trace.info["openenv"], score))


async def _play_session(
    task: TaskT, agents: Any, taskset: EpisodeTaskset[TaskT], server: Server, client: Any, result: Any
) -> None:
    """`play` on its open session, `result` its reset's."""
    config = taskset.config
    tools = config.action_format == "tools"
    max_invalid = config.max_invalid_actions
    extension = getattr(task, "EXTENSION", NO_EXTENSION)  # the package's custom.py
    models: ObservationModels = getattr(task, "OBSERVATION_MODELS", NO_MODELS)
    records = extension.records  # which observations the hooks read: all, the last, or none
    seen: list[dict[str, Any]] = []
    score = Score()
    space = taskset.action_space(server)
    if space.tools_per_episode:
        # MCP tools that follow the task: listed on this session, after its reset.
        space, task = await taskset.episode_space(space, server, client, task)
    view = taskset.observation_view(server)

    async def observe(observation: dict[str, Any], reward: float | None = None, kind: str = STEP) -> Any:
        return await next_turn(
            view, space, observation, reward, tools=tools, extension=extension, models=models, kind=kind
        )

    last = result.observation
    observed(seen, records, RESET, last, result)
    if env_system_prompt(last):
        task = task.with_system_prompt(system_prompt_with_env(task.data.system_prompt or "", last))
    async with agents.player.interaction(task) as interaction:
        trace = interaction.trace
        try:
            segment = await interaction.turn(_answer([], await observe(last, kind=RESET)))
            streak = 0
            while not segment.terminated:
                calls = _tool_calls(segment)
                reply = segment.last_reply
                if not calls and not reply.strip():
                    trace.stop(Stop.EMPTY_ACTION)
                    break
                try:
                    action = space.parse_tool_calls(calls) if calls else space.parse(reply)
                    result = await step_action(client, action)
                except InvalidAction as e:
                    score.invalid_actions += 1
                    streak += 1
                    if streak > max_invalid:
                        trace.stop(Stop.INVALID_ACTION)
                        break
                    segment = await interaction.turn(_answer(calls, invalid(str(e), max_invalid - streak + 1)))
                    continue
                streak = 0
                last = result.observation
                observed(seen, records, STEP, last, result)
                score.add(result.reward)
                if result.done:
                    trace.stop(Stop.ENV_DONE)
                    break
                segment = await interaction.turn(_answer(calls, await observe(last, result.reward)))
        except (EnvLost, EnvProtocolError) as error:
            # Named first (the first stop condition wins), then raised: verifiers records
            # the failure on the trace and fails the episode, so it is never scored as a
            # finished game and `--env.retries` can rerun it.
            trace.stop(_stop_for(error))
            raise
        finally:
            record(trace, score, last, seen, records)

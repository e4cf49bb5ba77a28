"""A generated package's env as the class TRL's `GRPOTrainer` takes as its `environment_factory`.

Execution model: TRL makes one instance at start-up to read its tools, then one per
rollout of a batch, and reuses them across steps; it calls `reset(**row)` on each, then the
tool methods the model calls, then `get_reward()`, all synchronously from its training loop.
Making the class (`environment_class(**config)`, the taskset's own config keys and
defaults) or an instance starts nothing. The first `reset` of a class starts its one server
pool (`fleet.pool`: every launch mode, fleet health, retries, the drift guard, as in a
verifiers run) on the process's shared event loop thread (`runner`); every instance of the
class shares that pool, each episode on one WebSocket session of its own. TRL resets every
instance of a batch before any acts, so the pool may launch as many servers as there are
instances (`max_servers` is raised to that number; a server holds as many sessions as it
accepts), and a `base_url` fleet that cannot hold them all fails the reset that waits past
`unavailable_timeout`, with one line. A session is closed when its episode ends or when the
instance is reset again. The class's `close()` ends its open episodes and stops its pool
(the TRL page has the script call it once `trainer.train()` ends, however it ends); what is
still open when the process exits is closed then (`runner`).

One episode is the verifiers path's (`episodes.episode`): a tool call is checked by the
action space as a native tool call is (`ActionSpace.parse_tool_calls`: the generated
models, the same invalid-action feedback, `max_invalid_actions` in a row ending the
episode), stepped with the same judging of every reply, and answered with the next
observation as `next_turn` renders it for tools (`custom.py` renderers apply); `reset`
returns the opening observation the same way. Nothing raises into TRL's step for the
model's or the env's faults: an invalid call gets the feedback text, a call after the end
gets `EPISODE_OVER` and steps nothing, a lost session, a hung server (`reply_timeout`) or a
reply that breaks the wire contract (a NaN reward) ends the episode with one line, and its
`get_reward()` is NaN, which TRL reads as an unscorable rollout (left out of the group's
baseline, advantage 0). A `reset` row key the env does not know raises, with one line: it is
the dataset's fault, not the episode's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel
from verifiers.v1 import AgentConfig, TasksetConfig
from verifiers.v1.trace import AgentInfo, Trace, TraceTask
from verifiers.v1.utils.generic import concrete_type

from openenvgen_runtime.access.tokens import for_people
from openenvgen_runtime.config import AdapterConfig, AdapterData
from openenvgen_runtime.episodes.episode import (
    EnvLost,
    EnvProtocolError,
    episode_metrics,
    next_turn,
    observed,
    record,
    step_action,
)
from openenvgen_runtime.episodes.taskset import AdapterTask, AdapterTaskset
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.hooks.drift import check_drift
from openenvgen_runtime.hooks.extensions import NO_EXTENSION, Extension
from openenvgen_runtime.hooks.typed_hooks import NO_MODELS, RESET, STEP, ObservationModels
from openenvgen_runtime.launching import open_files
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.trl import runner
from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction, ToolCallRequest
from openenvgen_runtime.turn.observations import ObservationView, final_info
from openenvgen_runtime.turn.prompts import invalid
from openenvgen_runtime.turn.scoring import Score, Stop

EnvironmentT = TypeVar("EnvironmentT", bound="TrlEnvironment")
logger = logging.getLogger(__name__)

ANY_TOOL = "call_tool"
"""`tool(ANY_TOOL)`: an MCP env's tools known per episode only, called by name (`tool_name`, `arguments`)."""
TOOL_ACTION = "openenvgen_action"
"""The attribute of a tool method holding what it sends (`tool`'s `action`)."""
TOOL_FIELDS = "openenvgen_renamed"
"""The attribute of a tool method holding its parameters renamed to their fields."""
EPISODE_OVER = "The episode is over: no more actions are taken. Stop calling tools."
"""What a tool call after the episode's end returns (nothing is stepped)."""
TRL_COLUMNS = frozenset({"prompt"})
"""Dataset columns TRL itself reads and passes to `reset` with the rest of the row."""


def tool(
    action: type[BaseModel] | str, *, renamed: dict[str, str] | None = None
) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Make a method one of the env's tools: `action` is the action model (or union member)
    it sends, or an MCP tool's name (`ANY_TOOL`: the tool its `tool_name` argument names).
    The method's signature and docstring are what TRL shows the model
    (`transformers.utils.get_json_schema`); its body is never run: the arguments the model
    gave, exactly as given (a parameter `renamed` to its field's name), go through the action
    model, so a missing, extra or mistyped argument gets the verifiers path's invalid-action
    feedback, never a TypeError."""
    fields = renamed or {}

    def decorate(method: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(method)
        def call(self: TrlEnvironment, /, **arguments: Any) -> str:
            return self._tool_call(action, {fields.get(k, k): v for k, v in arguments.items()})

        vars(call)[TOOL_ACTION] = action
        vars(call)[TOOL_FIELDS] = dict(fields)
        return call

    return decorate


class _Shared:
    """What every instance of one environment class shares: its taskset, its pool."""

    def __init__(self, taskset: AdapterTaskset) -> None:
        self.taskset = taskset
        self.config: AdapterConfig = taskset.config
        self.max_servers = self.config.max_servers
        self.pool: ServerPool | None = None
        self.instances = 0
        self.live: weakref.WeakSet[TrlEnvironment] = weakref.WeakSet()
        task_type: Any = taskset.task_type()
        self.task_type: type[AdapterTask] = task_type
        self.extension: Extension = getattr(task_type, "EXTENSION", NO_EXTENSION)
        self.models: ObservationModels = getattr(task_type, "OBSERVATION_MODELS", NO_MODELS)
        self.reset_keys = {"seed", "episode_id"} | {k for r in self.config.resets for k in r}

    async def started_pool(self) -> ServerPool:
        # Every instance of a batch is reset before any acts: each may need a server of its own.
        self.config.max_servers = max(self.max_servers, self.instances)
        if self.pool is None:
            open_files.require_for(self.config)  # as the verifiers path: the soft limit raised, the plan checked
            pool = ServerPool(self.config, mcp=self.taskset.IS_MCP)
            runner.on_close(self.close)
            await pool.start()
            self.pool = pool
            check_drift(pool.servers, self.taskset.SNAPSHOT, self.config.on_drift)
        return self.pool

    async def close(self) -> None:
        """End every open episode (its session closed) and stop the pool; a later reset starts anew."""
        for env in list(self.live):
            if env._session is not None:
                await env._end(Stop.ENV_LOST)
        pool, self.pool = self.pool, None
        if pool is not None:
            await pool.stop()


class TrlEnvironment:
    """The base of a package's TRL environment class (`<module>.trl`): `reset`, the typed
    tool methods the package generates, `get_reward`; and the class methods `close` and
    `metrics`. No other public function: TRL offers every public function of the class as
    a tool."""

    TASKSET: ClassVar[type[AdapterTaskset]]
    """The package's taskset (set by the generated subclass)."""
    CONFIG: ClassVar[dict[str, Any]] = {}
    """The taskset config keys this class was made with (`environment_class`)."""
    _shared: ClassVar[_Shared | None] = None

    def __init__(self) -> None:
        shared = self._shared_state()
        shared.instances += 1
        shared.live.add(self)
        self._session: contextlib.AsyncExitStack | None = None
        self._client: Any = None
        self._space: ActionSpace | None = None
        self._view: ObservationView | None = None
        self._score = Score()
        self._task: AdapterTask | None = None
        self._last: dict[str, Any] = {}
        self._seen: list[dict[str, Any]] = []
        self._streak = 0
        self._stop: str | None = None
        self._reset = False
        self._list_tools = False

    @classmethod
    def close(cls) -> None:
        """Stop everything this class started: end its instances' open episodes (their
        sessions closed) and stop its server pool (servers, containers, relays). Call it when
        `trainer.train()` returns, raises or is interrupted:
        `with contextlib.closing(environment_class()) as Env: ...`. Not a tool: TRL offers an
        instance's functions only. A later `reset` starts a new pool."""
        shared = cls.__dict__.get("_shared")
        if shared is not None and shared.pool is not None:
            runner.run(shared.close())

    @classmethod
    def metrics(cls, environments: list[Any], log_metric: Callable[[str, float], None], **_: Any) -> list[float]:
        """A reward function that logs the env's metrics in TRL's logs and adds nothing to
        the reward (0.0 for every rollout): `GRPOTrainer(reward_funcs=[Env.metrics], ...)`.
        Each metric a verifiers run records for an episode (`env_steps`, `invalid_actions`,
        the final observation's numbers) is averaged over the batch's episodes of this class
        and logged as `<class name>/<metric>`."""
        mine = [e._episode_metrics() for e in environments if type(e) is cls and e._reset]
        for name in sorted({name for metrics in mine for name in metrics}):
            values = [metrics[name] for metrics in mine if name in metrics]
            log_metric(f"{cls.__name__}/{name}", sum(values) / len(values))
        return [0.0] * len(environments)

    def _episode_metrics(self) -> dict[str, float]:
        return episode_metrics(final_info(self._last), self._score)

    @classmethod
    def _shared_state(cls) -> _Shared:
        shared = cls.__dict__.get("_shared")
        if shared is None:
            config_type = concrete_type(cls.TASKSET, TasksetConfig) or TasksetConfig
            shared = _Shared(cls.TASKSET(config_type(**cls.CONFIG)))
            cls._shared = shared
        return shared

    def reset(self, **row: Any) -> str:
        """Start a new episode from a dataset row (`seed`, `episode_id` and the reset
        arguments the taskset's `resets` name; TRL's own `prompt` column is left out);
        the opening observation, as the model reads it."""
        shared = self._shared_state()
        unknown = sorted(set(row) - shared.reset_keys - TRL_COLUMNS)
        if unknown:
            known = ", ".join(sorted(shared.reset_keys))
            raise ValueError(
                f"{type(self).__name__}.reset: unknown dataset column(s) {', '.join(map(repr, unknown))}; "
                f"a row may hold {known} (and TRL's prompt)"
            )
        base = dict(shared.config.resets[0]) if len(shared.config.resets) == 1 else {}
        kwargs = {**base, **{k: v for k, v in row.items() if k not in TRL_COLUMNS}}
        return runner.run(self._start(shared, kwargs))

    def get_reward(self) -> float:
        """The episode's score as the runtime scores it for verifiers: the task's rewards
        (the env's per-step rewards, summed, and `custom.py`'s `@vf.reward` functions),
        weighted and summed, from the episode recorded as on a verifiers trace. NaN for an
        episode the env failed or whose scoring failed (unscorable for TRL), with a warning."""
        if self._stop in (Stop.ENV_LOST, Stop.ENV_PROTOCOL_ERROR):
            return math.nan
        if self._task is None:
            return self._score.total
        return runner.run(self._scored(self._task))

    async def _scored(self, task: AdapterTask) -> float:
        trace: Trace[Any, Any, Any] = Trace(
            task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=AgentConfig())
        )
        record(trace, self._score, self._last, self._seen, self._shared_state().extension.records)
        try:
            await task.score(trace)
        except Exception as e:
            logger.warning(
                "%s: the episode could not be scored (%s); its reward is NaN", type(self).__name__, for_people(str(e))
            )
            return math.nan
        return trace.reward

    async def _start(self, shared: _Shared, kwargs: dict[str, Any]) -> str:
        await self._end()
        self._score, self._streak, self._stop, self._reset = Score(), 0, None, True
        self._task, self._last, self._seen = None, {}, []
        pool = await shared.started_pool()
        stack = contextlib.AsyncExitStack()
        try:
            # Waiting longer than unavailable_timeout for a free session: the fleet is too small.
            server, client, result = await asyncio.wait_for(
                stack.enter_async_context(pool.session(kwargs)), shared.config.unavailable_timeout
            )
        except (EnvLost, EnvProtocolError) as e:
            await stack.aclose()
            return self._failed(e)
        except TimeoutError:
            await stack.aclose()
            raise LaunchError(
                f"no session free for {type(self).__name__} within unavailable_timeout "
                f"({shared.config.unavailable_timeout:g}s): the servers must hold at least one session per "
                f"instance ({shared.instances}; TRL resets a whole batch before any rollout acts)"
            ) from None
        self._session, self._client = stack, client
        space = shared.taskset.action_space(server)
        # Tools listed per episode cannot be TRL's methods: the observations list them (`call_tool`).
        self._list_tools = space.tools_per_episode
        task = shared.task_type(AdapterData(name="trl", prompt=None, reset=kwargs), shared.config.task)
        if space.tools_per_episode:
            space, task = await shared.taskset.episode_space(space, server, client, task)
        self._space, self._view, self._task = space, shared.taskset.observation_view(server), task
        self._last = result.observation
        observed(self._seen, shared.extension.records, RESET, result.observation, result)
        if result.done:
            await self._end(Stop.ENV_DONE)
        return await self._render(result.observation, None, RESET)

    def _tool_call(self, action: type[BaseModel] | str, arguments: dict[str, Any]) -> str:
        if self._stop is not None or not self._reset:
            return EPISODE_OVER if self._reset else "Call reset first: no episode has started."
        return runner.run(self._act(action, arguments))

    async def _act(self, action: type[BaseModel] | str, arguments: dict[str, Any]) -> str:
        space, shared = self._space, self._shared_state()
        assert space is not None
        max_invalid = shared.config.max_invalid_actions
        try:
            wire = space.parse_tool_calls([_tool_call_request(space, action, arguments)])
            result = await step_action(self._client, wire)
        except InvalidAction as e:
            self._score.invalid_actions += 1
            self._streak += 1
            if self._streak > max_invalid:
                await self._end(Stop.INVALID_ACTION)
                return f"That reply is not a valid action: {e}\n{EPISODE_OVER}"
            return invalid(str(e), max_invalid - self._streak + 1)
        except (EnvLost, EnvProtocolError) as e:
            await self._end()
            return self._failed(e)
        self._streak = 0
        self._score.add(result.reward)
        self._last = result.observation
        observed(self._seen, shared.extension.records, STEP, result.observation, result)
        text = await self._render(result.observation, result.reward, STEP)
        if result.done:
            await self._end(Stop.ENV_DONE)
            return f"{text}\n\n{EPISODE_OVER}"
        return text

    async def _render(self, observation: dict[str, Any], reward: float | None, kind: str) -> str:
        assert self._view is not None and self._space is not None
        shared = self._shared_state()
        content = await next_turn(
            self._view,
            self._space,
            observation,
            reward,
            tools=not self._list_tools,
            extension=shared.extension,
            models=shared.models,
            kind=kind,
        )
        # Media go to verifiers as content parts; TRL gets their text, which names each attachment.
        return content if isinstance(content, str) else str(content[0].text)

    def _failed(self, error: EnvLost | EnvProtocolError) -> str:
        self._stop = Stop.ENV_LOST if isinstance(error, EnvLost) else Stop.ENV_PROTOCOL_ERROR
        return f"The environment failed ({error}). {EPISODE_OVER}"

    async def _end(self, stop: str | None = None) -> None:
        """Close the episode's session (its server slot goes back to the pool)."""
        if stop is not None and self._stop is None:
            self._stop = stop
        session, self._session, self._client = self._session, None, None
        if session is not None:
            await session.aclose()


def _tool_call_request(space: ActionSpace, action: type[BaseModel] | str, arguments: dict[str, Any]) -> ToolCallRequest:
    """The tool call a method's call stands for, as a native tool call names it: an MCP
    tool's name, a union member's, or `act`."""
    if action == ANY_TOOL:
        name, arguments = arguments.get("tool_name"), arguments.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise InvalidAction("call_tool takes tool_name (a string) and arguments (an object)")
        return ToolCallRequest("trl", name, _json(arguments))
    return ToolCallRequest("trl", _tool_name(space, action), _json(arguments))


def _tool_name(space: ActionSpace, action: type[BaseModel] | str) -> str:
    if isinstance(action, str):
        return action
    union = space.union
    if union is not None:
        return next(m.name for m in union.members if m.model is action)
    return space.function_tools[0]["function"]["name"]  # type: ignore[no-any-return]


def _json(arguments: dict[str, Any]) -> str:
    """The arguments as a tool call's JSON text, which the action space reads as it reads a
    native tool call's (a NaN is written as such, and refused there)."""
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError) as e:
        raise InvalidAction(f"the arguments are not JSON data: {e}") from None


def configure(base: type[EnvironmentT], config: dict[str, Any]) -> type[EnvironmentT]:
    """`base` configured with the taskset config keys `config` (checked now, with the
    taskset's own config class): the class to pass as `environment_factory`. Each call makes
    a new class with its own pool."""
    config_type = concrete_type(base.TASKSET, TasksetConfig) or TasksetConfig
    config_type(**config)
    return type(base.__name__, (base,), {"CONFIG": dict(config), "__module__": base.__module__})

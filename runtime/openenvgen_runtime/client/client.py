"""A generated package as a typed client: drive its env from a script or a notebook.

Execution model: `Connection` opens one WebSocket session (OpenEnv's `GenericEnvClient`) on
the server given by `base_url` (the first, for a fleet), or on one it launches exactly as the
package's taskset would: the same config class, keys and defaults (the UV provider with the
package's `PROVIDER_DEFAULTS`, `use_docker`, `use_swarm`, `provider_kwargs`), through the same
server pool, drift guard included. It stops whatever it launched on exit, Ctrl-C included.

Actions are the package's generated models: a dict is validated against the action model
first, and an invalid one raises pydantic's `ValidationError` with nothing sent. MCP envs
call tools by name (`call_tool`), each checked against its generated argument model (or one
built from the tool's listed input schema); an MCP union whose tools follow the task
(agent_world_model) lists them after each `reset`.
Observations come back as the package's generated models (the reset observation's model
for `reset`), under `typed_observations`' rule for one that does not validate.

Every reply is judged first (`turn.replies`, as in a run): one that breaks OpenEnv's wire
contract (a non-finite or non-numeric reward, a `done` that is no boolean, an observation
that is no object or is too deep, a frame that is not JSON text) raises `EnvProtocolError`,
whatever the fault; every wait on the server (connecting, each reset, step, state and the
close) takes at most the config's `reply_timeout`, past which `EnvLost` is raised; an
observation over `max_observation_chars` is cut or refused per `observation_overflow`.

The same connection is an async context manager (`async with connect(...) as env`) and a
synchronous one (`with connect(...) as env`): the synchronous form runs the async client
on an event loop of its own, in a background thread, so it also works where a loop is
already running (a notebook).

Opening a connection installs the runtime's process-wide hooks as a run does
(`launching.process_hooks`): a launch failure left uncaught prints as one line (`error:
MESSAGE`, with what to try) instead of a traceback, and the soft open-file limit is raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from verifiers.v1 import TasksetConfig
from verifiers.v1.utils.generic import concrete_type

from openenvgen_runtime.episodes.episode import EnvLost, session_failure
from openenvgen_runtime.fleet.pool import ServerPool, close_client, session_client
from openenvgen_runtime.hooks.drift import check_drift
from openenvgen_runtime.hooks.typed_hooks import RESET, STEP, ObservationModels
from openenvgen_runtime.launching import process_hooks
from openenvgen_runtime.launching.servers import Server
from openenvgen_runtime.turn.actions import ActionSpace
from openenvgen_runtime.turn.mcp_tools import session_tools

ObservationT = TypeVar("ObservationT", bound=BaseModel)
ResetObservationT = TypeVar("ResetObservationT", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True)
class StepResult(Generic[ObservationT]):
    """What one step returned: the observation as the generated model, the step's reward, done."""

    observation: ObservationT
    reward: float | None
    done: bool


class Env(Generic[ObservationT, ResetObservationT]):
    """One open session on an env server: `reset`, `step`, and for MCP envs `tools` and `call_tool`."""

    def __init__(self, taskset: type[Any], server: Server, client: Any) -> None:
        self._taskset = taskset
        self._client = client
        self.url = server.url
        """The server this session plays on."""
        per_episode = taskset.TOOLS_PER_EPISODE and server.tools is None
        self._space: ActionSpace = taskset.space_for(
            server.schema.get("action", {}), server.tools, per_episode=per_episode
        )
        self.tools: list[dict[str, Any]] = list(self._space.tools or [])
        """MCP envs: the tools offered (name, description, input schema), for tools that follow
        the task those listed after the last `reset`; empty otherwise."""
        self._owner = taskset.__module__.partition(".")[0]
        self._models = ObservationModels(taskset.OBSERVATION_MODEL, taskset.RESET_OBSERVATION_MODEL, self._owner)

    async def reset(self, **kwargs: Any) -> ResetObservationT:
        """Start a new episode (`seed=`, `episode_id=` and the env's own reset arguments);
        the opening observation."""
        result = await self._call(self._client.reset(**kwargs))
        if self._space.tools_per_episode:
            listed = await self._call(session_tools(self._client))
            space = self._taskset.space_for(self._space.action_schema, listed, per_episode=True)
            self._space, self.tools = space, list(space.tools or [])
        return self._models.instance(RESET, result.observation, result.reward, bool(result.done))  # type: ignore[no-any-return]

    async def step(self, action: BaseModel | dict[str, Any]) -> StepResult[ObservationT]:
        """Send one action: an instance of the generated action model, or a dict validated
        against it first (pydantic's `ValidationError` if it does not fit; nothing is sent)."""
        if not isinstance(action, BaseModel):
            validated: BaseModel = self._taskset.ACTION_MODEL.model_validate(action)
            action = validated
        return await self._send(self._space.wire_action(action))

    async def call_tool(self, name: str, /, **arguments: Any) -> StepResult[ObservationT]:
        """MCP envs: call tool `name`; its arguments are validated against the tool's
        generated argument model first (`InvalidAction` if they do not fit; nothing is sent)."""
        if not self._taskset.IS_MCP:
            raise TypeError(f"{self._owner} is not an MCP env: send actions with step()")
        return await self._send(self._space.tool_action(name, arguments))

    async def state(self) -> dict[str, Any]:
        """The env's `state()` as the server sends it (a dict: OpenEnv serves no schema for it)."""
        return await self._call(self._client.state())

    async def _send(self, wire: dict[str, Any]) -> StepResult[ObservationT]:
        result = await self._call(self._client.step(wire))
        observation = self._models.instance(STEP, result.observation, result.reward, bool(result.done))
        return StepResult(observation=observation, reward=result.reward, done=bool(result.done))

    async def _call(self, request: Coroutine[Any, Any, T]) -> T:
        try:
            return await request
        except Exception as e:
            # The episode loop's reading of a failed request: a lost session or a refused action.
            failure = session_failure(e, where=f" on {self.url}")
            if failure is None:
                raise
            raise failure from (e if isinstance(failure, EnvLost) and failure is not e else None)


class Connection(Generic[ObservationT, ResetObservationT]):
    """`async with` or `with` it: an open `Env` on a given or launched server, closed on exit."""

    def __init__(self, taskset: type[Any], *, base_url: str | list[str] | None = None, **config: Any) -> None:
        config_type = concrete_type(taskset, TasksetConfig) or TasksetConfig
        if base_url is not None:
            config["base_url"] = base_url
        # The taskset's own config class: the same keys, defaults and validation as a run.
        self._config = config_type(**config)
        self._taskset = taskset
        self._pool: ServerPool | None = None
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def __aenter__(self) -> Env[ObservationT, ResetObservationT]:
        # As a run's env does: a launch failure uncaught prints as one line, and the soft
        # open-file limit is raised.
        process_hooks.install()
        pool = self._pool = ServerPool(self._config, mcp=self._taskset.IS_MCP)
        try:
            await pool.start()
            check_drift(pool.servers, self._taskset.SNAPSHOT, self._config.on_drift)
            server = pool.servers[0]
            client = self._client = session_client(self._config, await pool.session_url(server))
            await client.connect()
        except BaseException:
            await self._close()
            raise
        return Env(self._taskset, server, client)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        await self._close()

    async def _close(self) -> None:
        try:
            if self._client is not None:
                await close_client(self._client, self._config.reply_timeout)
        finally:
            self._client = None
            if self._pool is not None:
                await asyncio.shield(self._pool.stop())
                self._pool = None

    def __enter__(self) -> SyncEnv[ObservationT, ResetObservationT]:
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="openenvgen-client", daemon=True)
        self._thread.start()
        try:
            env = _run(loop, self.__aenter__())
        except BaseException:
            self._stop_loop()
            raise
        return SyncEnv(env, loop)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._loop is not None:
                _run(self._loop, self._close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()


class SyncEnv(Generic[ObservationT, ResetObservationT]):
    """The synchronous face of an `Env` (what `with connect(...)` gives)."""

    def __init__(self, env: Env[ObservationT, ResetObservationT], loop: asyncio.AbstractEventLoop) -> None:
        self._env, self._loop = env, loop
        self.url = env.url

    @property
    def tools(self) -> list[dict[str, Any]]:
        """See `Env.tools`."""
        return self._env.tools

    def reset(self, **kwargs: Any) -> ResetObservationT:
        """See `Env.reset`."""
        return _run(self._loop, self._env.reset(**kwargs))

    def step(self, action: BaseModel | dict[str, Any]) -> StepResult[ObservationT]:
        """See `Env.step`."""
        return _run(self._loop, self._env.step(action))

    def call_tool(self, name: str, /, **arguments: Any) -> StepResult[ObservationT]:
        """See `Env.call_tool`."""
        return _run(self._loop, self._env.call_tool(name, **arguments))

    def state(self) -> dict[str, Any]:
        """See `Env.state`."""
        return _run(self._loop, self._env.state())


def _run(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the connection's loop thread and wait for it; Ctrl-C cancels it."""
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise

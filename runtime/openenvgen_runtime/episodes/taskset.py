"""The taskset and Env base classes a generated package subclasses.

A generated package adds only its defaults (env id, ASGI app, resets), its typed action
model and its schema snapshot; every behaviour is here, shared and tested once.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar, cast

import verifiers.v1 as vf
from pydantic import BaseModel

from openenvgen_runtime.access.tokens import for_people
from openenvgen_runtime.config import AdapterConfig, AdapterData, AdapterEnvConfig
from openenvgen_runtime.episodes import episode, tasks
from openenvgen_runtime.episodes.seat import require_in_process_seat
from openenvgen_runtime.fleet.pool import ServerPool
from openenvgen_runtime.hooks.drift import check_drift
from openenvgen_runtime.hooks.extensions import NO_EXTENSION, Extension, load_extension
from openenvgen_runtime.hooks.typed_hooks import NO_MODELS, ObservationModels
from openenvgen_runtime.launching import launch, open_files, process_hooks
from openenvgen_runtime.launching.servers import Server
from openenvgen_runtime.turn.actions import ActionSpace
from openenvgen_runtime.turn.mcp_tools import ToolListError, argument_model, session_tools
from openenvgen_runtime.turn.observations import ObservationView
from openenvgen_runtime.turn.prompts import system_prompt
from openenvgen_runtime.turn.scoring import Score
from openenvgen_runtime.turn.unions import mcp_union_of
from openenvgen_schemas.modeldiff import is_mcp_action

logger = logging.getLogger(__name__)

# verifiers' Taskset, re-exported for the `Taskset[Task, Config]` base a package restates:
# generated code then imports only the runtime (one import block however a linter sorts it).
Taskset = vf.Taskset
ToolArguments = dict[str, type[BaseModel]]
"""MCP envs: tool name → its generated argument model (`AdapterTaskset.TOOL_ARGUMENTS`)."""
MAX_LISTED_SPACES = 256
"""Action spaces kept per server for the tool lists its episodes listed (one per scenario, say)."""


class AdapterTask(vf.Task[AdapterData]):
    EXTENSION: ClassVar[Extension] = NO_EXTENSION
    """The package's user-owned hooks: its `custom.py` beside the module that defines the
    Task subclass (`<module>/custom.py`), loaded and checked when the subclass is made, so a
    task rebuilt from wire data by verifiers keeps them. No `custom.py`, no hooks."""

    OBSERVATION_MODELS: ClassVar[ObservationModels] = NO_MODELS
    """The package's generated observation models, which typed hooks get: set from its
    taskset (`AdapterTaskset.OBSERVATION_MODEL`, `RESET_OBSERVATION_MODEL`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        package = cls.__module__.rpartition(".")[0]
        if "EXTENSION" not in cls.__dict__ and package:
            cls.EXTENSION = load_extension(f"{package}.custom")

    @vf.reward
    async def openenv_reward(self, trace: Any) -> float:
        """The env's per-step rewards, summed, read from the trace (`vf-replay` gets the same)."""
        return Score.from_info(trace.info).total

    @vf.metric
    async def openenv_metrics(self, trace: Any) -> dict[str, float]:
        """The final observation's numbers, `env_steps` and `invalid_actions`, from the trace."""
        return episode.episode_metrics(trace.info.get("openenv") or {}, Score.from_info(trace.info))

    def hooks(self, attr: str) -> list[Any]:
        """verifiers' merge of decorated and config-plugged scoring functions, with the
        extension's `@vf.reward`/`@vf.metric` functions counted as decorated: a plugged
        entry of the same name (`--env.taskset.task.rewards.NAME.weight`) still overrides."""
        extra = self.EXTENSION.hooks(attr, self.OBSERVATION_MODELS)
        if not extra:
            return super().hooks(attr)
        from verifiers.v1.utils.decorators import discover_decorated
        from verifiers.v1.utils.loaders import load_plugged_fn

        plugged = {"metric": self.config.metrics, "reward": self.config.rewards}[attr]
        merged = {fn.__name__: fn for fn in discover_decorated(self, attr)}
        merged |= {fn.__name__: fn for fn in extra}
        merged |= {
            name: load_plugged_fn(name, spec, attr, decorated=merged.get(name)) for name, spec in plugged.items()
        }
        return sorted(merged.values(), key=lambda fn: (-getattr(fn, f"{attr}_priority", 0), fn.__name__))


class AdapterTaskset(vf.Taskset[AdapterTask, AdapterConfig]):
    """What a generated package's taskset sets: its action model, its tool argument models
    (MCP envs) and its schema snapshot; the rest is read from them when it is subclassed.

    verifiers finds a taskset's config and task types on a direct `vf.Taskset[Task, Config]`
    base of the class itself (`concrete_type` reads each class's own `__orig_bases__`), so a
    package restates it beside this class: `class T(AdapterTaskset, Taskset[MyTask, MyConfig])`."""

    ACTION_MODEL: ClassVar[type[BaseModel]]
    """The generated, typed action model (CallToolAction for MCP envs)."""
    OBSERVATION_MODEL: ClassVar[type[BaseModel] | None] = None
    """The generated step observation model; None: observations stay dicts (`connect`)."""
    RESET_OBSERVATION_MODEL: ClassVar[type[BaseModel] | None] = None
    """The generated reset observation model (often the step observation's)."""
    IS_MCP: ClassVar[bool] = False
    """Whether the env takes MCP tool calls: derived from `ACTION_MODEL` (OpenEnv's
    `CallToolAction` shape, told by its `type` const `call_tool`) unless a subclass sets it."""
    TOOL_ARGUMENTS: ClassVar[ToolArguments] = {}
    """MCP envs: tool name → generated argument model. Empty for typed-action envs."""
    TOOLS_PER_EPISODE: ClassVar[bool] = False
    """MCP unions with openenv's `ListToolsAction` (agent_world_model): where a server lists
    no tools at pool start (`POST /mcp`), each episode lists them on its session after its
    reset, so they may follow the task. Derived from `ACTION_MODEL` unless a subclass sets it."""
    UNLISTED_TOOLS: ClassVar[list[dict[str, Any]]] = []
    """MCP envs: tools the env takes without listing them (`name`, `description`,
    `input_schema`), offered beside the listed ones (default: the snapshot's
    `defaults.unlisted_tools`)."""
    ACTION_HINT: ClassVar[str] = ""
    """Env-specific advice on phrasing an action, appended to the system prompt (default:
    the snapshot's `defaults.action_hint`)."""
    SHOWN_METADATA: ClassVar[list[str]] = []
    """Keys of an observation's `metadata` the model reads (the question an env puts there);
    the rest of `metadata` stays hidden (default: the snapshot's `defaults.shown_metadata`)."""
    SYSTEM_PROMPT: ClassVar[str | None] = None
    """Replaces the runtime's system prompt for this package (verifiers'
    `--env.taskset.system-prompt FILE` still overrides it per run)."""
    SNAPSHOT: ClassVar[Path | None] = None
    """The schema snapshot the package was generated from."""
    SEED_VERDICT: ClassVar[str | None] = None
    """Whether the env honours `seed`, as `openenv-gen capture` measured it (reproducible,
    deterministic, not_reproducible, unmeasured; None: never measured)."""
    SEED_EVIDENCE: ClassVar[str] = ""
    """What the verdict rests on, in one line (default: the snapshot's)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "ACTION_MODEL" in own:
            # A union with openenv's CallToolAction among its members (agent_world_model's
            # list/call union) is MCP too: its calls go out as that member.
            union = mcp_union_of(cls.ACTION_MODEL)
            if "IS_MCP" not in own:
                cls.IS_MCP = union is not None or is_mcp_action(cls.ACTION_MODEL.model_json_schema())
            if "TOOLS_PER_EPISODE" not in own:
                cls.TOOLS_PER_EPISODE = union is not None and union.lists_tools
        if "OBSERVATION_MODEL" in own or "RESET_OBSERVATION_MODEL" in own:
            task_type = cls.task_type()
            if issubclass(task_type, AdapterTask) and "OBSERVATION_MODELS" not in task_type.__dict__:
                task_type.OBSERVATION_MODELS = ObservationModels(
                    step=cls.OBSERVATION_MODEL,
                    reset=cls.RESET_OBSERVATION_MODEL,
                    owner=task_type.EXTENSION.source or cls.__module__,
                )
        snapshot = own.get("SNAPSHOT")
        if snapshot is not None:
            # The env's measured defaults travel in its snapshot; a subclass may still set them.
            defaults = json.loads(snapshot.read_text("utf-8")).get("defaults") or {}
            for attr, key in (
                ("ACTION_HINT", "action_hint"),
                ("SEED_VERDICT", "seed_verdict"),
                ("SEED_EVIDENCE", "seed_evidence"),
                ("UNLISTED_TOOLS", "unlisted_tools"),
                ("SHOWN_METADATA", "shown_metadata"),
            ):
                if attr not in own and defaults.get(key) is not None:
                    setattr(cls, attr, defaults[key])

    def action_space(self, server: Server) -> ActionSpace:
        """Validation uses the generated models; the model is shown the live schema. One
        per server, so what is sent every turn is built once."""
        space = server.action_space
        if space is None:
            space = server.action_space = self._make_action_space(server)
        return space

    def _make_action_space(self, server: Server) -> ActionSpace:
        per_episode = self.TOOLS_PER_EPISODE and server.tools is None
        return self.space_for(server.schema.get("action", {}), server.tools, per_episode=per_episode)

    @classmethod
    def space_for(
        cls, action_schema: dict[str, Any], tools: list[dict[str, Any]] | None, *, per_episode: bool = False
    ) -> ActionSpace:
        """The action space for an action schema and a tool list. An MCP env offers each
        listed tool and each unlisted one, by its generated argument model or, for a tool not
        known ahead, by one built from its input schema (`mcp_tools.argument_model`)."""
        if not cls.IS_MCP:
            return ActionSpace(action_model=cls.ACTION_MODEL, action_schema=action_schema)
        offered = list(tools or [])
        names = {t.get("name") for t in offered}
        offered += [t for t in cls.UNLISTED_TOOLS if t.get("name") not in names]
        arguments = dict(cls.TOOL_ARGUMENTS)
        for tool in offered:
            name = tool.get("name")
            if isinstance(name, str) and name not in arguments:
                schema = tool.get("input_schema", tool.get("inputSchema"))
                arguments[name] = argument_model(name, schema, tool.get("description") or "")
        return ActionSpace(
            action_model=cls.ACTION_MODEL,
            action_schema=action_schema,
            tool_arguments=arguments,
            tools=offered,
            tools_per_episode=per_episode,
        )

    async def episode_space(
        self, space: ActionSpace, server: Server, client: Any, task: AdapterTask
    ) -> tuple[ActionSpace, AdapterTask]:
        """For an env whose MCP tools follow the task (`space.tools_per_episode`): the
        episode's action space, from the tools its session lists after its reset, and its
        task, offering them as function tools with `action_format="tools"`. One space per
        tool list a server has shown, built once."""
        try:
            tools = await session_tools(client)
        except ToolListError as e:
            raise ToolListError(for_people(f"{server.url}: {e}")) from None
        except Exception as e:
            failure = episode.session_failure(e, where=f" on {server.url}")
            if isinstance(failure, episode.EnvLost):
                raise failure from e
            if failure is not None:
                raise ToolListError(for_people(f"{server.url}: list_tools was refused: {failure}")) from None
            raise
        key = json.dumps(tools, sort_keys=True, default=str)
        listed = server.listed_spaces.get(key)
        if listed is None:
            if len(server.listed_spaces) >= MAX_LISTED_SPACES:
                server.listed_spaces.clear()
            listed = server.listed_spaces[key] = self.space_for(space.action_schema, tools)
        config: AdapterConfig = self.config
        if config.action_format == "tools":
            task = task.with_data(action_tools=listed.function_tools)
        return listed, task

    def load(self) -> Iterator[AdapterTask]:
        config: AdapterConfig = self.config
        check_as_a_worker(config)
        snapshot_space = self.space_for(self.ACTION_MODEL.model_json_schema(), self._snapshot_tools())
        as_tools = config.action_format == "tools"
        # verifiers resolves this taskset's task type parameter, but types the result as its base Task.
        task_type = cast(type[AdapterTask], self.task_type())
        extension: Extension = getattr(task_type, "EXTENSION", NO_EXTENSION)
        hint = self.ACTION_HINT if extension.action_hint is None else extension.action_hint
        prompt = extension.system_prompt
        if prompt is None:
            prompt = self.SYSTEM_PROMPT or system_prompt(snapshot_space, hint, tools=as_tools)
        action_tools = snapshot_space.function_tools if as_tools else None
        # An explicit `--env.taskset.resets` beats the extension's task list.
        resets = None if "resets" in config.model_fields_set else extension.task_resets(config)
        for spec in tasks.load_specs(config, mcp=self.IS_MCP, resets=resets):
            yield task_type(
                AdapterData(
                    name=spec.name, prompt=None, system_prompt=prompt, reset=spec.reset, action_tools=action_tools
                ),
                config.task,
            )

    def observation_view(self, server: Server) -> ObservationView:
        """How observations are rendered for the model; one per server (assets come from it),
        cached on it like its action space."""
        view = server.observation_view
        if view is None:
            config: AdapterConfig = self.config
            extension: Extension = getattr(self.task_type(), "EXTENSION", NO_EXTENSION)
            view = server.observation_view = ObservationView(
                hidden_fields=[*config.hidden_fields, *sorted(extension.hidden_fields)],
                shown_metadata=self.SHOWN_METADATA,
                max_media_bytes=config.max_media_bytes,
                asset_base_url=server.url,
                asset_auth=server.access,
                asset_verify=server.access.ssl_context if server.access is not None else True,
            )
        return view

    def _snapshot_tools(self) -> list[dict[str, Any]] | None:
        """MCP envs: the tool list (names, descriptions) the package was generated from."""
        if not self.IS_MCP or self.SNAPSHOT is None:
            return None
        return json.loads(self.SNAPSHOT.read_text("utf-8")).get("tools") or []


def check_as_a_worker(config: AdapterConfig) -> None:
    """Fail where the tasks are loaded (the eval process, or a trainer's orchestrator) with the
    error a served worker would give at start-up, before any worker starts: a worker rebuilds
    the config from its JSON dump (verifiers' `env_config_data`), and its pool start checks the
    launch mode's provider options."""
    type(config).model_validate(config.model_dump(mode="json"))
    if not config.base_urls:
        mode = launch.mode_name(use_docker=config.use_docker, use_swarm=config.use_swarm)
        kwargs = dict(config.provider_kwargs)
        if mode != "uv":
            kwargs.pop("labels", None)  # Docker and Swarm labels are added to the pool's own
        launch.provider_options(kwargs, mode)


def served_by_env_server() -> bool:
    """Whether this call runs under verifiers' env server (`EnvServer.run`, in a `serve_env`
    process or one of its pool's workers), told by the awaiting frames: verifiers hands the
    env nothing that says so."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "verifiers.v1.serve.server":
            return True
        frame = frame.f_back
    return False


class AdapterEnv(vf.SingleAgentEnv, vf.Env[AdapterEnvConfig]):
    """Starts the shared server pool once per run and plays each task as one episode.

    A single-agent env (one seat, `player`, one trace per episode and no cross-trace
    score), so verifiers' offline tools that take only such envs (`vf-replay`) take it; its
    config is its own (`Env[AdapterEnvConfig]`, found before SingleAgentEnv's).

    Under verifiers' env server a failed start does not end the worker: verifiers 0.4.0 would
    leave the episodes sent to a dead worker unanswered, so the worker logs the reason once
    and fails each episode it is sent with it, which the client sees."""

    pool: ServerPool | None = None
    start_error: str | None = None
    _resets_played: frozenset[str] = frozenset()
    _warned_replay: bool = False

    def __init__(self, config: AdapterEnvConfig) -> None:
        # verifiers builds the env once in each process that plays episodes, after setting
        # up its logging: where the runtime's process-wide hooks belong.
        process_hooks.install()
        super().__init__(config)

    def _ensure_pool(self) -> ServerPool:
        if self.pool is None:
            taskset: Any = self.taskset
            self.pool = ServerPool(taskset.config, mcp=taskset.IS_MCP)
        return self.pool

    async def start(self) -> None:
        try:
            await self._start()
        except Exception as e:
            if not served_by_env_server():
                raise
            self.start_error = f"{type(e).__name__}: {e}"
            logger.error("the env cannot start in this worker; every episode it is sent fails: %s", self.start_error)

    @property
    def adapter_taskset(self) -> AdapterTaskset:
        """`taskset`, as the adapter taskset it always is (verifiers types it as any Taskset)."""
        taskset = self.taskset
        if not isinstance(taskset, AdapterTaskset):
            raise TypeError(f"{type(self).__name__} plays an AdapterTaskset, not {type(taskset).__name__}")
        return taskset

    async def _start(self) -> None:
        taskset = self.adapter_taskset
        if taskset.config.action_format == "tools":
            require_in_process_seat(self.config.player.harness)
        open_files.require_for(taskset.config)
        pool = self._ensure_pool()
        await pool.start()
        check_drift(pool.servers, taskset.SNAPSHOT, taskset.config.on_drift)

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.stop()
            self.pool = None

    # Narrower than Env.run's Task: verifiers hands run() only tasks of this env's own taskset.
    async def run(self, task: AdapterTask, agents: Any) -> None:  # type: ignore[override]
        if self.start_error is not None:
            raise RuntimeError(f"the env did not start in this worker: {self.start_error}")
        self._note_replay(task)
        await episode.play(task, agents, self._ensure_pool(), self.adapter_taskset)

    def _note_replay(self, task: AdapterTask) -> None:
        """Warn once when a task's reset is played again (rollouts per task > 1, or two
        tasks with one seed) on an env recorded as not honouring `seed`: its rollouts do
        not start from one state, so a group compared against itself (GRPO) compares
        different episodes."""
        taskset: Any = self.taskset
        if taskset.SEED_VERDICT != "not_reproducible" or self._warned_replay:
            return
        key = json.dumps(task.data.reset, sort_keys=True, default=str)
        if key not in self._resets_played:
            self._resets_played = self._resets_played | {key}
            return
        self._warned_replay = True
        env = taskset.config.env or type(taskset).__name__
        logger.warning(
            "%s does not honour seed (%s): task %s is played more than once and its rollouts "
            "start from different states, so comparing them compares different episodes",
            env,
            taskset.SEED_EVIDENCE or "measured by openenv-gen capture",
            task.data.name,
        )

"""The taskset and Env base classes a generated package subclasses.

A generated package adds only its defaults (env id, ASGI app, resets), its typed action
model and its schema snapshot; every behaviour is here, shared and tested once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import verifiers.v1 as vf
from pydantic import BaseModel

from openenvgen_runtime import episode
from openenvgen_runtime.actions import ActionSpace
from openenvgen_runtime.config import AdapterConfig, AdapterData, AdapterEnvConfig
from openenvgen_runtime.pool import Server, ServerPool
from openenvgen_runtime.prompts import system_prompt


class AdapterTask(vf.Task[AdapterData]):
    pass


class AdapterTaskset(vf.Taskset[AdapterTask, AdapterConfig]):
    ACTION_MODEL: ClassVar[type[BaseModel]]
    """The generated, typed action model (CallToolAction for MCP envs)."""
    IS_MCP: ClassVar[bool] = False
    """Whether the env takes MCP tool calls (`CallToolAction`)."""
    TOOL_ARGUMENTS: ClassVar[dict[str, type[BaseModel]]] = {}
    """MCP envs: tool name → generated argument model. Empty for typed-action envs."""
    ACTION_HINT: ClassVar[str] = ""
    """Env-specific advice on phrasing an action, appended to the system prompt."""
    SYSTEM_PROMPT: ClassVar[str | None] = None
    """Replaces the runtime's system prompt for this package (verifiers'
    `--env.taskset.system-prompt FILE` still overrides it per run)."""
    SNAPSHOT: ClassVar[Path | None] = None
    """The schema snapshot the package was generated from."""

    def action_space(self, server: Server) -> ActionSpace:
        """Validation uses the generated models; the model is shown the live schema. One
        per server, so what is sent every turn is built once."""
        space = server.action_space
        if space is None:
            space = server.action_space = self._make_action_space(server)
        return space

    def _make_action_space(self, server: Server) -> ActionSpace:
        if self.IS_MCP:
            return ActionSpace(
                action_model=self.ACTION_MODEL,
                action_schema=server.schema.get("action", {}),
                tool_arguments=dict(self.TOOL_ARGUMENTS),
                tools=server.tools or [],
            )
        return ActionSpace(action_model=self.ACTION_MODEL, action_schema=server.schema.get("action", {}))

    def load(self) -> Iterator[AdapterTask]:
        config: AdapterConfig = self.config
        source = ", ".join(config.base_urls) or config.env
        snapshot_space = ActionSpace(
            action_model=self.ACTION_MODEL,
            action_schema=self.ACTION_MODEL.model_json_schema(),
            tool_arguments=dict(self.TOOL_ARGUMENTS) if self.IS_MCP else None,
        )
        prompt = self.SYSTEM_PROMPT or system_prompt(snapshot_space, self.ACTION_HINT)
        for idx, reset in enumerate(config.resets):
            yield AdapterTask(
                AdapterData(name=f"{source}#{idx}", prompt=None, system_prompt=prompt, reset=reset),
                config.task,
            )


class AdapterEnv(vf.Env[AdapterEnvConfig]):
    """Starts the shared server pool once per run and plays each task as one episode."""

    pool: ServerPool | None = None

    def _ensure_pool(self) -> ServerPool:
        if self.pool is None:
            taskset: Any = self.taskset
            self.pool = ServerPool(taskset.config, mcp=taskset.IS_MCP)
        return self.pool

    async def start(self) -> None:
        await self._ensure_pool().start()

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.stop()
            self.pool = None

    async def run(self, task: AdapterTask, agents: Any) -> None:
        taskset: Any = self.taskset
        await episode.play(
            task, agents, self._ensure_pool(), taskset.action_space, taskset.config.max_invalid_actions
        )

"""openenvgen-runtime: the shared base of every package openenv-gen generates.

Above `openenvgen_schemas` (the one package of ours it imports; never the generator,
`openenvgen`), verifiers and OpenEnv.

Layers (each module imports only modules of layers left of its own): json_text, media, openenv_import,
passthrough < mcp_models, mcp_tools, typed_observations, unions < actions, errors, health,
observations, provider, ranges, scoring, seat, typed_hooks < config, docker_cli,
drift, extensions, process_hooks, prompts, servers, uv_provider < docker_provider, fleet, reaper,
swarm_provider < launch < watch < pool < episode, tasks < client, taskset < play

Nothing of OpenEnv is imported up front: `openenv_import.openenv_module` imports it (without
its web UI) when a pool starts, and a launch mode's provider module (`uv_provider`,
`docker_provider`, `swarm_provider`) only when that mode runs; the pool sees any of them
as a `provider.Provider`.

Execution model: one server pool per run (OpenEnv's UV provider by default, its Docker
provider, or existing `base_url` servers), shared by all episodes. Each entry of
`resets` is one task; each episode is one WebSocket session on a pooled server, driven
turn by turn by the runtime acting as the user (see `episode`). Rewards are OpenEnv's
per-step rewards, summed.
"""

from openenvgen_runtime.actions import ActionSpace, InvalidAction
from openenvgen_runtime.client import Connection
from openenvgen_runtime.config import AdapterConfig, AdapterData, AdapterEnvConfig, default_resets
from openenvgen_runtime.scoring import REWARD_NAME, Stop
from openenvgen_runtime.seat import InProcessHarness, InProcessHarnessConfig
from openenvgen_runtime.taskset import AdapterEnv, AdapterTask, AdapterTaskset, Taskset, ToolArguments

__all__ = [
    "ActionSpace",
    "AdapterConfig",
    "AdapterData",
    "AdapterEnv",
    "AdapterEnvConfig",
    "AdapterTask",
    "AdapterTaskset",
    "Connection",
    "InProcessHarness",
    "InProcessHarnessConfig",
    "InvalidAction",
    "REWARD_NAME",
    "Stop",
    "default_resets",
    "Taskset",
    "ToolArguments",
]

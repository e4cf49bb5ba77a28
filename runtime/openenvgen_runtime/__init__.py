"""openenvgen-runtime: the shared base of every package openenv-gen generates.

Layers (each module imports only modules of layers left of its own): actions, errors, health, observations, ranges, scoring, seat, upstream < config, containers, drift, extensions, prompts < launch < swarm < pool < episode, tasks < taskset

Execution model: one server pool per run (OpenEnv's UV provider by default, its Docker
provider, or existing `base_url` servers), shared by all episodes. Each entry of
`resets` is one task; each episode is one WebSocket session on a pooled server, driven
turn by turn by the runtime acting as the user (see `episode`). Rewards are OpenEnv's
per-step rewards, summed.
"""

from openenvgen_runtime.actions import ActionSpace, InvalidAction
from openenvgen_runtime.config import AdapterConfig, AdapterData, AdapterEnvConfig
from openenvgen_runtime.scoring import REWARD_NAME, Stop
from openenvgen_runtime.seat import InProcessHarness, InProcessHarnessConfig
from openenvgen_runtime.taskset import AdapterEnv, AdapterTask, AdapterTaskset

__all__ = [
    "ActionSpace",
    "AdapterConfig",
    "AdapterData",
    "AdapterEnv",
    "AdapterEnvConfig",
    "AdapterTask",
    "AdapterTaskset",
    "InProcessHarness",
    "InProcessHarnessConfig",
    "InvalidAction",
    "REWARD_NAME",
    "Stop",
]

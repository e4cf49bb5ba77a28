"""openenvgen-runtime: the shared base of every package openenv-gen generates.

Above `openenvgen_schemas` and `openenvgen_servers` (the packages of ours it imports; never
the generator, `openenvgen`), verifiers and OpenEnv.

Layers (each module imports only modules of layers left of its own): config, mcp_models, turn,
access < launching < fleet, hooks, replay < episodes < client, trl < doctor

One subpackage per concern: `turn` (what the model reads of an observation, what its reply
becomes, what a step earns), `launching` (OpenEnv's providers and the servers they start),
`fleet` (the pool of servers a run shares), `hooks` (a package's `custom.py`, its typed
models, the drift guard), `episodes` (the taskset verifiers drives and the episode loop) and
`client` (a typed `Connection`, the interactive player), `trl` (a package's env as TRL's
`GRPOTrainer(environment_factory=...)` class), `access` (what a run presents to
servers beyond loopback: a Swarm launch's secret, a fleet's headers and TLS trust),
`doctor` (whether an env is fit to train on: `python -m openenvgen_runtime.doctor`) and
`replay` (the catalog's recorded sessions served on loopback, so the first hour runs offline:
`python -m openenvgen_runtime.replay`). `config` is every option;
`mcp_models` the MCP models packages import. `openenvgen_runtime.extensions`, what a package's
`custom.py` is written against, is `hooks.extensions` (named so below).

Nothing of OpenEnv is imported up front: `launching.openenv_import.openenv_module` imports it
(without its web UI) when a pool starts, and a launch mode's provider module (`uv_provider`,
`docker_provider`, `swarm_provider`) only when that mode runs; the pool sees any of them
as a `provider.Provider`.

Execution model: one server pool per run (OpenEnv's UV provider by default, its Docker
provider, or existing `base_url` servers), shared by all episodes. Each entry of
`resets` is one task; each episode is one WebSocket session on a pooled server, driven
turn by turn by the runtime acting as the user (see `episodes.episode`). Rewards are OpenEnv's
per-step rewards, summed.
"""

import sys

from openenvgen_runtime.client.client import Connection
from openenvgen_runtime.config import AdapterConfig, AdapterData, AdapterEnvConfig, default_resets
from openenvgen_runtime.episodes.seat import InProcessHarness, InProcessHarnessConfig
from openenvgen_runtime.episodes.taskset import AdapterEnv, AdapterTask, AdapterTaskset, Taskset, ToolArguments
from openenvgen_runtime.hooks import extensions
from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction
from openenvgen_runtime.turn.replies import EnvLost, EnvProtocolError
from openenvgen_runtime.turn.scoring import REWARD_NAME, Stop

__all__ = [
    "ActionSpace",
    "AdapterConfig",
    "AdapterData",
    "AdapterEnv",
    "AdapterEnvConfig",
    "AdapterTask",
    "AdapterTaskset",
    "Connection",
    "EnvLost",
    "EnvProtocolError",
    "InProcessHarness",
    "InProcessHarnessConfig",
    "InvalidAction",
    "REWARD_NAME",
    "Stop",
    "default_resets",
    "Taskset",
    "ToolArguments",
]

# The documented import path of a package's hooks (`from openenvgen_runtime.extensions import ...`).
sys.modules[f"{__name__}.extensions"] = extensions

"""TRL's `environment_factory`: a generated package's env as the class `GRPOTrainer` trains on.

`environment` is the base class a package's `<module>/trl.py` subclasses (`TrlEnvironment`,
its `tool` decorator, `environment_class`); `runner` is the one event loop thread a
process's TRL environments share, and what closes their pools at exit.

Layers: runner < environment
"""

from pydantic import MISSING

from openenvgen_runtime.trl.environment import (
    ANY_TOOL,
    EPISODE_OVER,
    TOOL_ACTION,
    TOOL_FIELDS,
    TrlEnvironment,
    configure,
    tool,
)

# pydantic's MISSING, for the generated methods' parameters that are sent only when given:
# generated code then imports only the runtime (one import block however a linter sorts it).
__all__ = ["ANY_TOOL", "EPISODE_OVER", "MISSING", "TOOL_ACTION", "TOOL_FIELDS", "TrlEnvironment", "configure", "tool"]

"""OpenEnv's MCP models that every MCP env shares, as one schema copy (`mcp_models.json`).

`CallToolAction`, `ListToolsAction`, `CallToolObservation` and its `ToolError` (with
`ToolErrorType`), as their servers' `/schema` states them. The runtime's
`openenvgen_runtime.mcp_models` is generated from this copy once (the generator's
`codegen.shared_models_source`; a test regenerates it and compares), and the generator's
codegen imports a class from there instead of generating it again when a package's
definition of that name is this copy's, exactly, and so are the definitions it refers to.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

MODULE = "openenvgen_runtime.mcp_models"
"""Where generated packages import the shared models from."""
_COPY = Path(__file__).with_name("mcp_models.json")


@functools.cache
def _read() -> dict[str, dict[str, Any]]:
    defs: dict[str, dict[str, Any]] = json.loads(_COPY.read_text("utf-8"))["$defs"]
    return defs


def definitions() -> dict[str, dict[str, Any]]:
    """The shared models' schemas by class name (a fresh copy); they refer to each other as `#/$defs/NAME`."""
    return copy.deepcopy(_read())

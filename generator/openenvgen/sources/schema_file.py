"""A saved schema as a schema source: `openenv-gen NAME --schema-file FILE`.

FILE is a saved `/schema` reply, or a whole server interface `{"schema": ..., "metadata":
..., "tools": ...}` (what `from_server` reads, as a catalog snapshot keeps it). It is read
as strict JSON and returned as a `ServerInterface`, unchecked: a part it lacks or gets
wrong is named by `spec.build_spec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openenvgen.errors import SchemaError, SourceError, UsageError
from openenvgen.spec import ServerInterface
from openenvgen_schemas.interface import NonStandardJSON, interface_schemas, strict_json


def from_schema_file(path: Path) -> ServerInterface:
    """A saved `/schema` reply, or a server interface `{"schema": ..., "metadata": ..., "tools": ...}`."""
    try:
        data = strict_json(path.read_text("utf-8"))
    except NonStandardJSON as e:
        raise SchemaError(f"--schema-file {path}: not valid JSON ({e} is not a JSON number)") from None
    except OSError as e:
        raise UsageError(f"--schema-file {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"--schema-file {path}: not JSON ({e})") from None
    except RecursionError:
        raise SchemaError(f"--schema-file {path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError(f"--schema-file {path}: expected a JSON object")
    if "schema" in data:
        return _interface(path, data["schema"], data.get("metadata") or {}, data.get("tools"))
    return _interface(path, data, {}, None)


def _interface(path: Path, schema: Any, metadata: Any, tools: Any) -> ServerInterface:
    if not isinstance(schema, dict):
        raise SourceError("schema is not a JSON object")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise SourceError("tool list is not a list")
    # A missing action or observation is kept as None, so build_spec names the part missing.
    kept = interface_schemas(str(path), {"action": None, "observation": None, **schema})
    return ServerInterface(
        schema_=kept,
        metadata=metadata if isinstance(metadata, dict) else {},
        tools=None if tools is None else tuple(tools),
    )

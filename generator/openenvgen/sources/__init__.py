"""Schema sources: where an env's `/schema`, `/metadata` and tool list are read from.

Each source returns a `spec.ServerInterface` (what the server said, unchecked):
`server` reads a live server (`--base-url`), `schema_file` a saved one (`--schema-file`),
`project` starts an author's env project with `uv_server` and reads it live (`--project`).
The catalog's snapshots are the fourth source (`openenvgen.catalog`, a layer above).

Layers: uv_server, server, schema_file < project
"""

from openenvgen.sources.schema_file import from_schema_file
from openenvgen.sources.server import TIMEOUT_S, from_server

__all__ = ["TIMEOUT_S", "from_schema_file", "from_server"]

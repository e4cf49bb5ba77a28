"""openenvgen-schemas: what the generator (`openenvgen`) and the runtime (`openenvgen_runtime`) both
need, so neither pulls in the other's dependencies: the schema normalisation and model diff
(`check`, `check --upstream`, `regen`, and the runtime's drift guard at pool start), and the
server wire helpers (reading `/health`, `/schema` and `tools/list`, stopping a server's
process group). The lowest layer: it imports none of the two, and only httpx besides the
standard library.

Layers: mcp_models, normalise, schema_types, wire, processes < changes, docstrings < compatibility < modeldiff
(each module imports only modules of layers left of its own)

- `mcp_models`: the one copy of OpenEnv's MCP models' schemas (the runtime's shared models).
- `normalise`: the normalisation under which two schemas are equal (and a union's members).
- `schema_types`: what a JSON schema lets through (its JSON types, listed values, union branches).
- `changes`: a diff's result, each `Change` with a path and a semver impact, and `bump`.
- `docstrings`: a tool's docstring read as FastMCP renders it (summary, documented arguments).
- `compatibility`: `diff_schemas`, whether a JSON schema's change breaks its inputs' senders
  or its outputs' readers.
- `modeldiff`: the diff of two specs or two live interfaces (`diff_specs`, `is_mcp_action`).
- `wire`: what a server says over HTTP, strictly parsed and size-bounded; `wait_healthy`.
- `processes`: stopping a server's process group; finding `uv`.
"""

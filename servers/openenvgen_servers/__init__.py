"""openenvgen-servers: talking to OpenEnv env servers and starting them, one way for the generator
(`openenvgen`) and the runtime (`openenvgen_runtime`), which never import each other: reading
what a server says over HTTP (`/health`, `/schema`, `tools/list`), a free port, running an env
with `uv run` as OpenEnv's UV provider does, and stopping a server's process group. Above
`openenvgen_schemas` (what a server's JSON means), the one package of ours it imports; httpx
besides the standard library.

Layers: environment, ports, processes, wire < uv
(each module imports only modules of layers left of its own)

- `environment`: the minimal environment a launched server gets (an allowlist of this process's
  variables, plus the ones its user names), never this process's whole one.
- `ports`: `free_port`, for a server about to start.
- `processes`: stopping a server's process group, ending it with its parent; finding `uv`.
- `wire`: what a server says over HTTP, strictly parsed and size-bounded; `wait_healthy`.
- `uv`: the `uv run ... uvicorn` command OpenEnv's UV provider runs, and `UVServerProcess`,
  which runs it (logged, in its own process group) and waits for its `/health`.
"""

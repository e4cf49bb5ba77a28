"""openenvgen-servers: talking to OpenEnv env servers and starting them, one way for the generator
(`openenvgen`) and the runtime (`openenvgen_runtime`), which never import each other: reading
what a server says over HTTP (`/health`, `/schema`, `tools/list`), the headers and CA bundle a
gated server needs, a free port, running an env
with `uv run` as OpenEnv's UV provider does, and stopping a server's process group. Above
`openenvgen_schemas` (what a server's JSON means), the one package of ours it imports; httpx
besides the standard library.

Layers: access, environment, logs, ports, processes, wire < uv
(each module imports only modules of layers left of its own)

- `access`: a gated server's headers, their values read from environment variables, and its
  CA bundle (`--header NAME=VARIABLE`, `--ca-bundle`; the runtime's `base_url_headers`).
- `environment`: the minimal environment a launched server gets (an allowlist of this process's
  variables, plus the ones its user names), never this process's whole one.
- `logs`: a server's log bounded (`LogLimit`: Docker's json-file options, and the rotation of a
  UV server's output).
- `ports`: `free_port`, for a server about to start.
- `processes`: stopping a server's process group, ending it with its parent; finding `uv`.
- `wire`: what a server says over HTTP, strictly parsed and size-bounded; `wait_healthy`.
- `uv`: the `uv run ... uvicorn` command OpenEnv's UV provider runs, and `UVServerProcess`,
  which runs it (logged within a `LogLimit`, in its own process group) and waits for its `/health`.
"""

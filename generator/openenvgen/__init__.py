"""openenv-gen: turn an OpenEnv environment into a typed verifiers (V1) adapter package.

Layers: errors < schema_checks < spec < sources < catalog < capture, generation < lifecycle, doctor < commands <
maintainer_commands, play_command < cli
(each subpackage or top-level module imports only from the layers left of its own)

- `errors`: the failures the CLI reports, each with its exit code;
- `schema_checks`: the bounds and union rules an untrusted server's schema must pass;
- `spec`: `EnvSpec`, the one frozen model of an env every later step reads;
- `sources`: where a live env's schema is read from (a server, a schema file, an env project);
- `catalog`: the embedded envs (their defaults, snapshots and seed verdicts), read and listed;
- `capture`: upstream envs' servers recorded, and the catalog's data rewritten from the records;
- `generation`: spec → models → files → an atomic write with a lock, and reading a package back;
- `lifecycle`: `check`, `check --upstream`, `regen` and `publish` of existing packages;
- `doctor`: `doctor`'s report (a versioned JSON document) and its terminal, JSON and HTML forms;
- `commands`: the `openenv-gen` commands, a thin typer layer over the rest;
- `maintainer_commands`: `publish` and `capture`, added to that typer app;
- `play_command`: `play`, added to it too (it runs the runtime's player in a child process);
- `cli`: the entry point (`--version` without importing typer, else `commands`).

Flow, one direction only: a schema source (embedded catalog, live server or schema file)
→ one frozen `EnvSpec` → codegen + render (pure: spec in, `{path: text}` out) → atomic
write with a lock file. Nothing here imports verifiers or openenv.
"""

__version__ = "0.1.0"

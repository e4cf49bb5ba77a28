"""openenv-gen: turn an OpenEnv environment into a typed verifiers (V1) adapter package.

Layers: errors < schema_checks < spec < sources < catalog < capture, generation < lifecycle, reporting < cli
(each subpackage or top-level module imports only from the layers left of its own)

- `errors`: the failures the CLI reports, each with its exit code;
- `schema_checks`: the bounds and union rules an untrusted server's schema must pass;
- `spec`: `EnvSpec`, the one frozen model of an env every later step reads;
- `sources`: where a live env's schema is read from (a server, a schema file, an env project);
- `catalog`: the embedded envs (their defaults, snapshots and seed verdicts), read and listed;
- `capture`: upstream envs' servers recorded, and the catalog's data rewritten from the records;
- `generation`: spec → models → files → an atomic write with a lock, and reading a package back;
- `lifecycle`: `check`, `check --upstream`, `regen` and `publish` of existing packages;
- `reporting`: `doctor`'s report (a versioned JSON document) rendered: terminal, JSON and HTML;
- `cli`: the `openenv-gen` command tree, a thin typer layer over the rest (one module per
  subcommand, registered on one app), and its entry point.

Flow, one direction only: a schema source (embedded catalog, live server or schema file)
→ one frozen `EnvSpec` → codegen + render (pure: spec in, `{path: text}` out) → atomic
write with a lock file. Nothing here imports verifiers or openenv.
"""

__version__ = "0.1.0"

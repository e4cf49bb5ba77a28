"""openenv-gen: turn an OpenEnv environment into a typed verifiers (V1) adapter package.

Layers (each module imports only modules of layers left of its own): errors, seeding, verdicts < corpus < spec, capture < catalog, codegen, sources < render < checking < publish, writer < regen < pipeline < cli

Flow, one direction only: a schema source (embedded catalog, live server or schema file)
→ one frozen `EnvSpec` → codegen + render (pure: spec in, `{path: text}` out) → atomic
write with a lock file. Nothing here imports verifiers or openenv.
"""

__version__ = "0.1.0"

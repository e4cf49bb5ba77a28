"""openenvgen-schemas: how openenv-gen compares JSON schemas, shared by the generator
(`check`, `check --upstream`, `regen`) and the runtime (its drift guard at pool start).

Layers (each module imports only modules of layers left of its own): normalise < modeldiff

Pure and dependency-free, so neither side pulls in the other's dependencies:
`normalise` (the normalisation under which two schemas are equal) and `modeldiff` (the
model-level diff of two specs or two live interfaces, each change with a path and a
semver impact).
"""

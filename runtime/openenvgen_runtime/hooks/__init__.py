"""A package's hooks: its `custom.py`, its typed observation models, and the drift guard.

Layer 2 (after `launching`): may import `config`, `turn` and `launching`.

`extensions` loads and checks `custom.py` (its public face is `openenvgen_runtime.extensions`);
`typed_hooks` and `typed_observations` give hooks the package's generated models; `drift`
compares a server's interface with the package's snapshot.

Layers: drift, typed_observations < typed_hooks < extensions
"""

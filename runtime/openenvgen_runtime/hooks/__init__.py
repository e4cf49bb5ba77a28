"""A package's hooks: its `custom.py`, its typed observation models, and the drift guard.

`extensions` loads and checks `custom.py` (imported as `openenvgen_runtime.extensions` too);
`typed_hooks` and `typed_observations` give hooks the package's generated models; `drift`
compares a server's interface with the package's snapshot.

Layers: drift, typed_observations < typed_hooks < extensions
"""

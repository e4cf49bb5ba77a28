"""Capture: record upstream envs' real servers, and rewrite the catalog's data from the captures.

`checkout` runs `openenv-gen capture`: each env folder of an OpenEnv checkout is started
with `sources.uv_server` (and the `stand_ins` it needs here), its replies recorded into
its capture (`recording`, over `ws_session`), with its seed verdict (`seed_check`) and its
server's validation rulings (`validation`); `snapshots` rewrites the catalog's snapshots,
seed verdicts and source commit (`openenvgen.catalog`'s data/) from the captures.

Layers: stand_ins, ws_session < seed_check, validation < recording < snapshots < checkout
"""

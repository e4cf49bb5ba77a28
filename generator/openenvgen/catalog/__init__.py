"""The catalog: the embedded envs (data/), how they are captured from upstream, what the captures measured.

`reader` is the one reader of `data/catalog.toml` (entries, their defaults and
snapshots); `listing` shows them (`openenv-gen list`). `capture` runs `openenv-gen
capture`: each upstream env folder is started with `sources.uv_server` (and the
`stand_ins` it needs here), its replies recorded into its capture (`recording`, over
`ws_session`), with its seed verdict (`seed_check`) and its server's validation rulings
(`validation`); `snapshots` makes the embedded snapshots from the captures.

Layer 4 of the generator (errors < schema_checks < spec < sources < catalog < generation < lifecycle < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources and openenvgen_schemas;
never build, lifecycle or cli.

Layers: reader, stand_ins, ws_session < listing, seed_check, validation < recording < snapshots < capture
"""

from openenvgen.catalog.reader import CatalogEntry, entries, lookup, seeding, unavailable

__all__ = ["CatalogEntry", "entries", "lookup", "seeding", "unavailable"]

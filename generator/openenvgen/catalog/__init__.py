"""The catalog: the embedded envs (data/), their defaults, snapshots and seed verdicts, and their listing.

`reader` is the one reader of `data/catalog.toml` (entries, their defaults and
snapshots) and of `data/seeding.json`; `listing` shows them (`openenv-gen list`).
What is in data/ is written by `openenvgen.capture` from real upstream servers.

Layers: reader < listing
"""

from openenvgen.catalog.reader import CatalogEntry, entries, find, lookup, seeding, unavailable

__all__ = ["CatalogEntry", "entries", "find", "lookup", "seeding", "unavailable"]

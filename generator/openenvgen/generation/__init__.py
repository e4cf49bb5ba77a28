"""Make a package: spec → codegen → render (pure) → atomic write with a lock; read one back from disk.

Layer 5 of the generator (errors < schema_checks < spec < sources < catalog < generation < lifecycle < commands < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog and
openenvgen_schemas; never lifecycle or cli.

`memo` answers a repeated `openenv-gen NAME` from the record of the same generation; it and
what it imports (`layout`, `marked`, `scaffold`, `writer`, and `report` for what is printed)
import neither pydantic nor Jinja at module level, so such a run imports neither.

Layers: layout, shared_models < codegen < render, marked < on_disk, scaffold, writer, report < memo < package
"""

"""Make a package: spec → codegen → render (pure) → atomic write with a lock; read one back from disk.

Layer 5 of the generator (errors < schema_checks < spec < sources < catalog < build < lifecycle < commands < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog and
openenvgen_schemas; never lifecycle or cli.

Layers: codegen < render, marked < on_disk, scaffold, writer < package
"""

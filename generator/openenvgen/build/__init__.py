"""Make a package: spec → codegen → render (pure) → atomic write with a lock; read one back from disk.

Layer 4 of the generator (errors < spec < sources < catalog < build < lifecycle < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog and
openenvgen_schemas; never lifecycle or cli.

Layers: codegen < render, marked < on_disk, scaffold, writer < package
"""

"""Make a package: spec → codegen → render (pure) → atomic write with a lock; read one back from disk.

Layer 5 of the generator (errors < schema_checks < spec < sources < catalog < generation < lifecycle < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog and
openenvgen_schemas; never lifecycle or cli.

Layers: layout, python_format, shared_models, codegen_worker < codegen < trl_tools < render, marked < on_disk, scaffold,
    writer, report < package
"""

"""Keep packages current: check them, compare them with upstream, regenerate and publish them.

Layer 6 of the generator (errors < schema_checks < spec < sources < catalog < generation < lifecycle < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog,
openenvgen.generation and openenvgen_schemas; never cli.

Layers: mypy_report < hook_types < check, index, upstream, scaffold_update < changelog, distributions < regen, publish
"""

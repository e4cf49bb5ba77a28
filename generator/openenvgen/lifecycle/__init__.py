"""Keep packages current: check them, compare them with upstream, regenerate and publish them.

Layer 5 of the generator (errors < spec < sources < catalog < build < lifecycle < cli):
may import openenvgen.errors, openenvgen.spec, openenvgen.sources, openenvgen.catalog,
openenvgen.build and openenvgen_schemas; never cli.

Layers: check, index, upstream < changelog, distributions < regen, publish
"""

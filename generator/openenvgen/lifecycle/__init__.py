"""Keep packages current: check them, compare them with upstream, regenerate and publish them.

Layers: mypy_report < hook_types < check, index, upstream, scaffold_update < changelog, distributions < regen, publish
"""

"""Tests of `openenvgen_schemas`, the lowest layer: the interface a server's JSON states, schema
normalisation and the model diff (all pure)."""

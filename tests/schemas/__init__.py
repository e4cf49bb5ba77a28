"""Tests of `openenvgen_schemas`, the lowest layer: schema normalisation and the model diff (pure), and the
server wire helpers and process groups against real servers on loopback and real processes."""

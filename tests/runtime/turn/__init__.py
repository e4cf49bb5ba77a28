"""Tests of `openenvgen_runtime.turn`."""

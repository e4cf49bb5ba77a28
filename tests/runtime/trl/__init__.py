"""Tests of `openenvgen_runtime.trl`."""

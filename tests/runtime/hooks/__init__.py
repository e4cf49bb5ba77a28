"""Tests of `openenvgen_runtime.hooks`."""

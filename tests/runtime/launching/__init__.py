"""Tests of `openenvgen_runtime.launching`."""

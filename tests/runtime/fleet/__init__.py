"""Tests of `openenvgen_runtime.fleet`."""

"""Tests of `openenvgen_runtime.episodes`."""

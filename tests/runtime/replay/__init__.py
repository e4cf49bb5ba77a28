"""Tests of `openenvgen_runtime.replay`, the catalog's recorded sessions it ships."""

"""Tests of `openenvgen_runtime.client`."""

"""Tests of `openenvgen_servers`: the wire helpers against real servers on loopback, process groups
on real processes, a free port, and env servers started with `uv run` as OpenEnv's UV provider
starts them."""

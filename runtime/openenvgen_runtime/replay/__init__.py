"""Offline envs: the catalog's recorded sessions served by real OpenEnv servers on loopback.

`python -m openenvgen_runtime.replay ENV_FOLDER --port PORT` (what `openenv-gen replay NAME`
runs) serves one: its `/schema`, `/metadata` and tools are the recorded ones, and each session
replays the recorded episode (`server`), so `play`, `doctor`, a typed `connect()` and `vf-eval`
run against it with no network. The recordings ship in `recordings/` (`recording`).

Layers: recording < server < __main__
"""

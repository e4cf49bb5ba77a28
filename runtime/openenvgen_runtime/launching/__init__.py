"""Launching env servers: OpenEnv's providers (UV, Docker, Swarm), their health, and cleanup.

`launch.Launcher` starts one server per call through a launch mode's provider (`uv_provider`,
`docker_provider`, `swarm_provider`, imported only when that mode runs, each seen as a
`provider.Provider`), waits for `/health` and reads its interface (`servers`); `reaper`
removes containers a dead run left; `swarm_gate` puts an access gate in front of each
Swarm replica (a per-launch secret that only the run holds); `swarm_isolation` keeps a
sandboxed launch's replicas on a network of their own behind a router; `openenv_import` imports OpenEnv
without its web UI; `process_hooks` prints a launch failure as one line and raises the soft
open-file limit (`open_files`, which also checks a run's plan against the hard limit);
`errors.LaunchError` is the one error; `sandbox` hardens the containers of a run that executes model-written code.

Layers: errors, openenv_import, provider < docker_cli, open_files < process_hooks, servers <
sandbox < docker_provider, reaper, swarm_gate, uv_provider < swarm_isolation < swarm_provider < launch
"""

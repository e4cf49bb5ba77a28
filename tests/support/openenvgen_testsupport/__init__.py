"""The tests' and the benchmarks' shared helpers (tests/support, installed editable by
`make install`; never published): real OpenEnv servers on loopback (`fixture_envs`,
`media_envs`, `union_envs`, `mcp_union_envs`, `replay_env`, run by `servers`), a scripted
OpenAI-compatible model (`scripted_model`), running the generator (`generating`) and generated packages
(`adapters`, `rollout`, `served`, `drift`), Docker images (`docker_images`), loud skips
(`skips`) and where things are (`paths`).

It sits above everything it tests: it may import `openenvgen`, `openenvgen_runtime`,
`openenvgen_schemas` and `openenvgen_servers`, never a test module (nor `tests`), so `bench/` can use it too.
"""

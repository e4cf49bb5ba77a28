"""A generated package's user-owned hooks: `<module>/custom.py`, loaded and checked once.

openenv-gen scaffolds `custom.py` once and never rewrites it; the generated taskset loads
it with `load_extension` at import, so what it defines takes effect without editing
generated code. Every hook is optional, and a module that sets none (or no module at all)
changes nothing: the same prompts, the same tasks, the same scores.

| hook | what it changes |
|---|---|
| `@vf.reward(weight=W)` / `@vf.metric` functions | scored after each episode like a Task's own (see below) |
| `SYSTEM_PROMPT` | replaces the system prompt (`--env.taskset.system-prompt FILE` still wins) |
| `ACTION_HINT` | replaces the package's action hint appended to the runtime's system prompt |
| `HIDDEN_FIELDS` | observation fields the model never reads |
| `render_observation(observation) -> str` | the text the model reads (from its model, or its visible fields) |
| `RESETS` or `build_resets(config)` | the task list: reset kwargs, one task each (`--env.taskset.resets` still wins) |

Reward and metric functions take `(task, trace, runtime)` by name, and `observation` /
`observations` as the package's typed models (`typed_hooks`); rewards add to the env's
summed reward.

Everything that can be checked without playing is checked here, at import: a syntax
error, a hook of the wrong type or signature, a misspelt hook name. It fails with one
line naming the file and the hook (an `ExtensionError`, a `ValueError`, which vf-eval
reports as a one-line exit). What can only fail while playing (a renderer or a reward
that raises, or returns the wrong type) raises `HookError` with the same kind of line,
which verifiers records as that episode's error; the run goes on. `build_resets(config)`
runs when verifiers reads the task list, before any episode: its failure is an
`ExtensionError` that stops the run there.

What a package imports (the scaffolded `custom.py` names the hooks listed here); the loader
itself is `openenvgen_runtime.hooks.extensions`.
"""

from openenvgen_runtime.hooks.extensions import HOOKS, ExtensionError, HookError, load_extension

__all__ = ["HOOKS", "ExtensionError", "HookError", "load_extension"]

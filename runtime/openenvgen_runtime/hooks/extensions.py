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

Packages and users import this module as `openenvgen_runtime.extensions` (the package's
`__init__` names it so).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import inspect
import math
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from openenvgen_runtime.hooks import typed_hooks
from openenvgen_runtime.hooks.typed_hooks import NO_MODELS, AnnotationError, ObservationModels
from openenvgen_runtime.turn.scoring import METRICS_NAME, REWARD_NAME

SCORE_ARGUMENTS = ("task", "trace", "runtime")
"""What verifiers passes a reward or metric, by parameter name."""
RESERVED_SCORES = frozenset({REWARD_NAME, METRICS_NAME, "env_steps", "invalid_actions"})
"""Names the runtime records itself; a hook of the same name would overwrite them."""
HOOKS = ("SYSTEM_PROMPT", "ACTION_HINT", "HIDDEN_FIELDS", "render_observation", "RESETS", "build_resets")


class ExtensionError(ValueError):
    """`custom.py` is broken in a way visible before any episode; the message is one line."""


class HookError(RuntimeError):
    """A hook failed while an episode was played or scored; recorded on that episode."""


@dataclass(frozen=True)
class ScoreHook:
    """A `@vf.reward` or `@vf.metric` function of `custom.py`, and what it asks for."""

    fn: Callable[..., Any]
    kind: str
    """`reward` or `metric`."""
    asks: dict[str, bool] = field(default_factory=dict)
    """`observation` / `observations` → whether as the package's model (else a dict)."""


@dataclass(frozen=True)
class Extension:
    """The hooks one package's `custom.py` sets; the defaults change nothing."""

    source: str = ""
    """The module's file, named in every error."""
    system_prompt: str | None = None
    action_hint: str | None = None
    hidden_fields: frozenset[str] = frozenset()
    renderer: Callable[[Any], str] | None = None
    typed_renderer: bool = False
    """Whether `renderer` takes the package's observation model (else a dict of visible fields)."""
    resets: tuple[dict[str, Any], ...] | None = None
    build_resets: Callable[..., Any] | None = None
    scores: tuple[ScoreHook, ...] = ()
    _bound: dict[tuple[str, ObservationModels], tuple[Callable[..., Any], ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def records(self) -> str:
        """Which observations an episode records for the hooks: `all`, `last` or `` (none)."""
        asked = {name for hook in self.scores for name in hook.asks}
        return "all" if typed_hooks.OBSERVATIONS in asked else "last" if asked else ""

    def render(self, observation: Any) -> str:
        """`render_observation(observation)`, checked; only call when `renderer` is set."""
        assert self.renderer is not None
        try:
            text = self.renderer(observation)
        except Exception as e:
            raise HookError(f"{self.source}: render_observation raised {_error(e)}") from e
        if not isinstance(text, str):
            raise HookError(f"{self.source}: render_observation returned {type(text).__name__}, not str")
        return text

    def task_resets(self, config: Any) -> list[dict[str, Any]] | None:
        """The task list the module sets (RESETS, or build_resets(config)); None if unset."""
        if self.resets is not None:
            return [dict(reset) for reset in self.resets]
        if self.build_resets is None:
            return None
        try:
            built = self.build_resets(config)
        except Exception as e:
            raise ExtensionError(f"{self.source}: build_resets raised {_error(e)}") from e
        return _resets(built, self.source, "build_resets(config)", "must return")

    def hooks(self, attr: str, models: ObservationModels = NO_MODELS) -> tuple[Callable[..., Any], ...]:
        """The module's `@vf.reward` or `@vf.metric` functions, by decorator name, guarded and
        given what they ask for as `models` (made once per models)."""
        key = (attr, models)
        if key not in self._bound:
            self._bound[key] = tuple(_guarded(h, self.source, models) for h in self.scores if h.kind == attr)
        return self._bound[key]


NO_EXTENSION = Extension()


def load_extension(module_name: str) -> Extension:
    """Import and check `module_name` (a package's `custom` module); no module, no hooks."""
    try:
        spec = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        return NO_EXTENSION
    source = spec.origin or module_name
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as e:
        where = f"{e.filename or source}:{e.lineno}" if e.lineno else source
        raise ExtensionError(f"{where}: syntax error: {e.msg}") from None
    except Exception as e:
        raise ExtensionError(f"{source}{_line_in(e, source)}: importing it raised {_error(e)}") from None
    return _check(vars(module), source, module_name)


def _check(namespace: dict[str, Any], source: str, module_name: str) -> Extension:
    hooks: dict[str, Any] = {name: namespace[name] for name in HOOKS if namespace.get(name) is not None}
    _misspelt(namespace, source, module_name)

    for name in ("SYSTEM_PROMPT", "ACTION_HINT"):
        if name in hooks and not isinstance(hooks[name], str):
            raise ExtensionError(f"{source}: {name} must be a str, not {type(hooks[name]).__name__}")
    hidden = hooks.get("HIDDEN_FIELDS", ())
    if (
        isinstance(hidden, str)
        or not isinstance(hidden, list | tuple | set | frozenset)
        or not all(isinstance(field, str) for field in hidden)
    ):
        raise ExtensionError(f"{source}: HIDDEN_FIELDS must be a set (or list) of field names, not {hidden!r:.80}")
    models_module = f"{module_name.rpartition('.')[0]}.models"
    renderer = hooks.get("render_observation")
    typed_renderer = False
    if renderer is not None:
        _callable_with(renderer, source, "render_observation", "(observation)", ({},))
        if inspect.iscoroutinefunction(renderer):
            raise ExtensionError(f"{source}: render_observation must be a plain function, not async")
        typed_renderer = _typed(renderer, _first_parameter(renderer), source, "render_observation", models_module)
    if "RESETS" in hooks and "build_resets" in hooks:
        raise ExtensionError(f"{source}: set RESETS or build_resets, not both")
    resets = tuple(_resets(hooks["RESETS"], source, "RESETS", "must be")) if "RESETS" in hooks else None
    build = hooks.get("build_resets")
    if build is not None:
        _callable_with(build, source, "build_resets", "(config)", (object(),))

    scores: list[ScoreHook] = []
    for name, value in namespace.items():
        kinds = [kind for kind in ("reward", "metric") if callable(value) and getattr(value, kind, False) is True]
        if not kinds:
            continue
        if len(kinds) == 2:
            raise ExtensionError(f"{source}: {name} is marked both @vf.reward and @vf.metric; pick one")
        (kind,) = kinds
        asks = _check_score(value, kind, name, source)
        label = f"{kind} {name}"
        typed = {parameter: _typed(value, parameter, source, label, models_module) for parameter in asks}
        scores.append(ScoreHook(value, kind, typed))
    return Extension(
        source=source,
        system_prompt=hooks.get("SYSTEM_PROMPT"),
        action_hint=hooks.get("ACTION_HINT"),
        hidden_fields=frozenset(hidden),
        renderer=renderer,
        typed_renderer=typed_renderer,
        resets=resets,
        build_resets=build,
        scores=tuple(scores),
    )


def _first_parameter(fn: Any) -> str:
    try:
        return next(iter(inspect.signature(fn).parameters), "")
    except (TypeError, ValueError):
        return ""


def _typed(fn: Any, parameter: str, source: str, label: str, models_module: str) -> bool:
    """Whether `fn`'s `parameter` takes the package's model: a renderer only when annotated
    with one, a score hook unless annotated as a dict."""
    try:
        return typed_hooks.wants_model(fn, parameter, models_module, default=label != "render_observation")
    except AnnotationError as e:
        raise ExtensionError(f"{source}: {label}: {e}") from None


def _misspelt(namespace: dict[str, Any], source: str, module_name: str) -> None:
    """A hook under a near-miss name would silently do nothing: say which name was meant.
    Imported modules, classes and functions (`from ...prompts import system_prompt`) are
    not hooks the user meant to define, so they are left alone."""
    for name, value in namespace.items():
        if name in HOOKS or name.startswith("_") or inspect.ismodule(value):
            continue
        if getattr(value, "__module__", module_name) != module_name and (inspect.isclass(value) or callable(value)):
            continue
        by_case = [hook for hook in HOOKS if hook.lower() == name.lower()]
        near = by_case or (difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.85) if name.isupper() else [])
        if near:
            raise ExtensionError(f"{source}: {name} is not a hook; did you mean {near[0]}?")


def _callable_with(fn: Any, source: str, name: str, shape: str, args: tuple[Any, ...]) -> None:
    if not callable(fn):
        raise ExtensionError(f"{source}: {name} must be a function {name}{shape}, not {type(fn).__name__}")
    try:
        inspect.signature(fn).bind(*args)
    except TypeError:
        raise ExtensionError(f"{source}: {name} must take one argument: {name}{shape}") from None
    except ValueError:  # no signature to inspect (a builtin): it is called and checked then
        pass


def _resets(value: Any, source: str, what: str, verb: str) -> list[dict[str, Any]]:
    if not isinstance(value, list | tuple) or not value:
        raise ExtensionError(f"{source}: {what} {verb} a non-empty list of reset kwargs (dicts), not {value!r:.80}")
    for i, reset in enumerate(value):
        if not isinstance(reset, Mapping) or not all(isinstance(key, str) for key in reset):
            raise ExtensionError(f"{source}: {what} item {i} must be a dict of reset kwargs, not {reset!r:.80}")
    return [dict(reset) for reset in value]


def _check_score(fn: Callable[..., Any], kind: str, name: str, source: str) -> list[str]:
    """Check a reward or metric's name, signature and weight; what it asks for beyond
    verifiers' arguments (`observation`, `observations`)."""
    label = f"{kind} {name}"
    asks: list[str] = []
    if name in RESERVED_SCORES or fn.__name__ in RESERVED_SCORES:
        raise ExtensionError(f"{source}: {label}: {fn.__name__!r} is recorded by the runtime; rename the function")
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise ExtensionError(f"{source}: {label}: cannot read its signature; make it a plain function") from None
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name in typed_hooks.ARGUMENTS:
            asks.append(parameter.name)
        elif parameter.name not in SCORE_ARGUMENTS and parameter.default is parameter.empty:
            raise ExtensionError(
                f"{source}: {label} takes {parameter.name!r}, but a {kind} is given only "
                f"{', '.join((*SCORE_ARGUMENTS, *typed_hooks.ARGUMENTS))} (by name)"
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ExtensionError(
                f"{source}: {label}: {parameter.name!r} is positional-only; {kind}s are called by name"
            )
    weight = getattr(fn, "_vf_weight", 1.0)
    if kind == "reward" and (not isinstance(weight, Real) or isinstance(weight, bool) or not math.isfinite(weight)):
        raise ExtensionError(f"{source}: {label}: weight must be a finite number, not {weight!r}")
    return asks


def _guarded(hook: ScoreHook, source: str, models: ObservationModels) -> Callable[..., Any]:
    """`hook` as verifiers calls it (awaited, by name), failing with a line naming the hook.

    `functools.wraps` keeps the name and the decorator's marks (weight, priority); the
    signature verifiers reads to pass arguments is the hook's own, with `observation(s)`
    replaced by `trace`, whence they are read."""
    fn = hook.fn
    label = f"{source}: {hook.kind} {fn.__name__}"
    signature = inspect.signature(fn)
    passed = [p for p in signature.parameters.values() if p.name not in typed_hooks.ARGUMENTS]
    adds_trace = bool(hook.asks) and "trace" not in signature.parameters
    if adds_trace:
        passed.append(inspect.Parameter("trace", inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(fn)
    async def guarded(**kwargs: Any) -> Any:
        try:
            if hook.asks:
                trace = kwargs.pop("trace") if adds_trace else kwargs["trace"]
                kwargs.update(typed_hooks.arguments(trace, hook.asks, models))
            value = fn(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        except Exception as e:
            raise HookError(f"{label} raised {_error(e)}") from e
        return _score_value(value, label)

    if hook.asks:
        guarded.__signature__ = signature.replace(parameters=_ordered(passed))  # type: ignore[attr-defined]
    return guarded


def _ordered(parameters: list[inspect.Parameter]) -> list[inspect.Parameter]:
    """`parameters` in an order `inspect.Signature` accepts (kinds ascending)."""
    return sorted(parameters, key=lambda p: p.kind)


def _score_value(value: Any, label: str) -> Any:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in RESERVED_SCORES:
                raise HookError(f"{label} returned {key!r}, a name the runtime records itself")
            _number(item, f"{label} returned {key!r}:")
        return value
    return _number(value, f"{label} returned")


def _number(value: Any, what: str) -> float:
    if not isinstance(value, Real):
        raise HookError(f"{what} {value!r:.80}, not a number")
    return float(value)


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _line_in(error: BaseException, source: str) -> str:
    """`:LINE` of the deepest frame of `error` inside `source`, or nothing."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == source]
    return f":{lines[-1]}" if lines else ""

"""What a `custom.py` hook asks for beyond verifiers' own arguments, and how it gets it typed.

verifiers calls a reward or metric with `task`, `trace` and `runtime`, by parameter name.
A hook in a generated package's `custom.py` may also ask for

- `observation`: the episode's last observation;
- `observations`: every observation of the episode in order, the reset observation first;

each an instance of the package's generated model: the reset observation's model for the
reset observation where the server serves one, the step observation's otherwise. A
parameter annotated `dict` (or `Mapping`, `Any`) gets the server's JSON instead. The
episode records these observations on the trace (`trace.info["openenv_observations"]`,
media payloads left out, each with its `reward` and `done`) only when a hook asks for
them: the last one alone when no hook asks for all. Hooks read them back from the trace,
never from live state, so rescoring a saved run (`vf-replay`) gives the same scores.

`render_observation(observation)` gets the package's model when its parameter is
annotated with one (or a union of them), and otherwise, as always, a dict of the visible
fields. A typed renderer is given the whole observation, hidden fields included: it
decides what the model reads. `HIDDEN_FIELDS` (and `metadata`, always hidden) apply to
the default rendering and to a renderer that takes a dict.

An annotation is checked when `custom.py` is imported: it must name the package's own
models (`from .models import ...`), a dict, or nothing. An observation that does not
validate against its model is reported once and kept with the server's values
(`typed_observations`).
"""

from __future__ import annotations

import collections.abc
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from openenvgen_runtime.hooks.typed_observations import checked_observation

OBSERVATION = "observation"
OBSERVATIONS = "observations"
ARGUMENTS = (OBSERVATION, OBSERVATIONS)
"""What a reward or metric may ask for beyond verifiers' `task`, `trace`, `runtime`."""
INFO_KEY = "openenv_observations"
"""Where an episode records the observations its hooks read, in `trace.info`."""
RESET, STEP = "reset", "step"

_DICT_ORIGINS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_SEQUENCE_ORIGINS = (list, tuple, collections.abc.Sequence, collections.abc.Iterable)


class AnnotationError(ValueError):
    """An annotation the runtime cannot honour; the message is a sentence fragment."""


@dataclass(frozen=True)
class ObservationModels:
    """A package's generated observation models (None: the package has none; hooks get dicts)."""

    step: type[BaseModel] | None = None
    reset: type[BaseModel] | None = None
    owner: str = ""
    """Who reports an observation that does not validate: the package's hooks module."""

    def model(self, kind: str) -> type[BaseModel] | None:
        """The model of a `reset` or `step` observation."""
        return self.reset if kind == RESET and self.reset is not None else self.step

    def instance(self, kind: str, observation: dict[str, Any], reward: Any, done: bool) -> Any:
        """An observation (the server's JSON, its reward and done) as the model of its `kind`,
        or its values when there is no model."""
        return self._checked(kind, observation, reward, done)[0]

    def _checked(
        self, kind: str, observation: dict[str, Any], reward: Any, done: bool
    ) -> tuple[Any, type[BaseModel] | None]:
        """`instance`, and the model it validated against (None: no model, or it did not validate)."""
        model = self.model(kind)
        values = {**observation, "reward": reward, "done": done}  # the server sends these two beside it
        if model is None:
            return values, None
        instance, valid = checked_observation(model, values, owner=self.owner)
        return instance, model if valid else None

    def typed(self, recorded: dict[str, Any]) -> Any:
        """One recorded observation (see `entry`) as its model, or its values without one."""
        kind, observation, done = recorded.get("kind", STEP), recorded.get("observation") or {}, recorded.get("done")
        return self.instance(kind, observation, recorded.get("reward"), bool(done))


NO_MODELS = ObservationModels()


def entry(kind: str, observation: dict[str, Any], reward: Any, done: bool) -> dict[str, Any]:
    """One observation as the trace records it (media payloads already left out)."""
    return {"kind": kind, "observation": observation, "reward": reward, "done": done}


def wants_model(fn: Any, parameter: str, models_module: str, *, default: bool) -> bool:
    """Whether `fn`'s `parameter` asks for the package's model (True) or a dict (False),
    from its annotation (`default` when it has none); `AnnotationError` when the annotation
    names something else. For `observations`, the annotation's item type decides."""
    try:
        hints = typing.get_type_hints(fn)
    except NameError as e:
        raise AnnotationError(f"an annotation names {getattr(e, 'name', None) or e}, which is not defined") from None
    except Exception:  # a builtin or an exotic callable: nothing to read
        return default
    if parameter not in hints:
        return default
    annotation = hints[parameter]
    if parameter == OBSERVATIONS:
        if typing.get_origin(annotation) not in _SEQUENCE_ORIGINS and annotation not in (list, tuple):
            raise AnnotationError(f"{parameter!r} is annotated {_name(annotation)}; make it list[<model>]")
        items = typing.get_args(annotation)
        if not items:
            return default
        annotation = items[0]
    return _is_model(annotation, parameter, models_module)


def _is_model(annotation: Any, parameter: str, models_module: str) -> bool:
    if annotation is Any or annotation is object or annotation in _DICT_ORIGINS:
        return False
    if typing.get_origin(annotation) in _DICT_ORIGINS:
        return False
    members = (
        typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType)
        else (annotation,)
    )
    members = tuple(m for m in members if m is not type(None))
    for member in members:
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            raise AnnotationError(
                f"{parameter!r} is annotated {_name(annotation)}; annotate it with the package's observation model "
                "(from .models) or dict"
            )
        module = sys.modules.get(models_module)
        if module is not None and getattr(module, member.__name__, None) is not member:
            raise AnnotationError(
                f"{parameter!r} is annotated {member.__name__}, which is not one of the package's models "
                f"({models_module})"
            )
    return True


def arguments(trace: Any, asks: dict[str, bool], models: ObservationModels) -> dict[str, Any]:
    """What a hook asks for (`asks`: parameter → typed?), read from the trace's record."""
    recorded: list[dict[str, Any]] = list(trace.info.get(INFO_KEY) or [])
    out: dict[str, Any] = {}
    for parameter, typed in asks.items():
        chosen = recorded if parameter == OBSERVATIONS else recorded[-1:]
        values = [(models if typed else NO_MODELS).typed(e) for e in chosen]
        out[parameter] = values if parameter == OBSERVATIONS else (values[0] if values else None)
    return out


def _name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")

"""Observations as the package's generated models, and what happens when one does not validate.

The server sends an observation as JSON with `reward` and `done` beside it; the package's
generated observation model (the reset observation's for a reset, where the server serves
one) holds them all. An observation that does not validate (the env drifted in a way the
start-up drift guard could not see) never loses the episode or the call that got it: it is
reported once per process and model, with the field's path, and the caller still gets an
instance of the model holding the server's values. Every field that validates on its own
is converted as usual; a field that does not is kept as the server sent it (a plain
dict, list or scalar), so a hook reading the fields the env did not change keeps working.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

_reported: set[tuple[str, str]] = set()
"""(owner, model) pairs already reported in this process."""


def checked_observation(model: type[ModelT], values: dict[str, Any], *, owner: str) -> tuple[ModelT, bool]:
    """`values` as an instance of `model`, and whether they validated. Values that do not are
    reported once (per `owner` and model) and kept as the server sent them (see the module
    docstring)."""
    try:
        return model.model_validate(values), True
    except ValidationError as error:
        _report(model, error, owner)
        return _lenient(model, values, error), False


def _lenient(model: type[ModelT], values: dict[str, Any], error: ValidationError) -> ModelT:
    bad = {str(e["loc"][0]) for e in error.errors() if e["loc"]}
    fields: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for name, value in values.items():
        info = model.model_fields.get(name)
        if info is None:
            unknown[name] = value
        elif name in bad or info.annotation is None:
            fields[name] = value  # invalid (or nothing to check it against): as the server sent it
        else:
            try:
                fields[name] = TypeAdapter(info.annotation).validate_python(value)
            except (ValidationError, TypeError):
                fields[name] = value
    # model_construct fills the defaults of fields the server left out and validates nothing.
    instance = model.model_construct(**fields)
    if unknown:
        # A field the model does not know (a forbidding model drops it): readable as an attribute.
        object.__setattr__(instance, "__pydantic_extra__", {**(instance.__pydantic_extra__ or {}), **unknown})
    return instance


def _report(model: type[BaseModel], error: ValidationError, owner: str) -> None:
    key = (owner, f"{model.__module__}.{model.__qualname__}")
    if key in _reported:
        return
    _reported.add(key)
    first = error.errors()[0]
    path = ".".join(str(part) for part in first["loc"]) or "(the observation)"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    logger.warning(
        "%s: an observation does not match %s at %s: %s%s; the env may have changed since the package was"
        " generated (run `openenv-gen check --upstream`); its values are passed on as the server sent them"
        " (reported once)",
        owner,
        model.__name__,
        path,
        first["msg"],
        more,
    )

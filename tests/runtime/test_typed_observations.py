"""Observations as generated models: which fields can hold media, and that a typed
renderer's turn finds exactly the attachments the default rendering finds."""

from __future__ import annotations

import asyncio
import base64
import enum
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import MISSING, BaseModel, ConfigDict, Field

from openenvgen_runtime.media import MediaError
from openenvgen_runtime.observations import ObservationView
from openenvgen_runtime.typed_hooks import ObservationModels
from openenvgen_runtime.typed_observations import media_free_fields
from openenvgen_testsupport.media_envs import png


class Colour(enum.Enum):
    RED = "red"


class Cell(BaseModel):
    model_config = ConfigDict(extra="forbid")
    row: int
    col: int


class OpenCell(BaseModel):
    """Takes keys it does not name (pydantic's default): a server may send `x_base64` in it."""

    row: int


class PictureCell(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thumb_base64: str = ""


class Tree(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    children: list[Tree] = []


class Board(BaseModel):
    model_config = ConfigDict(extra="forbid")
    done: bool = False
    reward: float | None = None
    prompt: str = ""
    colour: Colour = Colour.RED
    mode: Literal["a", "b"] = "a"
    cells: list[Cell] | MISSING = MISSING
    shape: tuple[int, ...] = ()
    grid: list[list[int | None]] = []
    tree: Tree | None = None
    info: dict[str, Any] = {}
    anything: Any = None
    open_cell: OpenCell | None = None
    pictures: list[PictureCell] = []
    frame_base64: str = ""
    shot: str = Field("", alias="shot_asset_path")


def test_only_fields_whose_type_names_every_key_are_media_free() -> None:
    assert media_free_fields(Board) == {
        "done",
        "reward",
        "prompt",
        "colour",
        "mode",
        "cells",
        "shape",
        "grid",
        "tree",
    }


PNG = base64.b64encode(png((1, 2, 3))).decode()
_MEDIA_KEYS = ["x_base64", "Frame_BASE64", "note"]
_LEAF = st.none() | st.integers(-3, 3) | st.sampled_from(["", "text", PNG])
_JSON = st.recursive(
    _LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_MEDIA_KEYS), inner, max_size=3)
)
_FIELDS = {
    "prompt": st.sampled_from(["hi", PNG]) | _JSON,
    "cells": st.lists(st.fixed_dictionaries({"row": st.integers(0, 3), "col": st.integers(0, 3)}), max_size=2) | _JSON,
    "grid": st.lists(st.lists(st.integers(0, 2) | st.none(), max_size=2), max_size=2) | _JSON,
    "info": st.dictionaries(st.sampled_from(_MEDIA_KEYS), _JSON, max_size=3),
    "anything": _JSON,
    "open_cell": st.fixed_dictionaries({"row": st.integers(0, 3)}, optional={"x_base64": st.just(PNG)}) | _JSON,
    "pictures": st.lists(st.fixed_dictionaries({}, optional={"thumb_base64": st.sampled_from(["", PNG])}), max_size=2),
    "frame_base64": st.sampled_from(["", PNG]),
    "shot_asset_path": st.just(""),
    "unknown": _JSON,  # a field the model does not know: the observation no longer validates
}


def _media(view: ObservationView, observation: dict[str, Any], media_free: frozenset[str] | None) -> Any:
    try:
        rendered = asyncio.run(view.render(observation, media_free=media_free))
    except MediaError as error:
        return str(error)
    return [(m.path, m.data) for m in rendered.media], rendered.fields


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional=_FIELDS), st.sampled_from([(), ("info",), ("open_cell.x_base64",)]))
def test_a_typed_renderers_turn_attaches_what_the_default_rendering_attaches(
    observation: dict[str, Any], hidden: tuple[str, ...]
) -> None:
    """Whether or not the observation validates: a field that does not is searched like any other."""
    view = ObservationView(hidden_fields=hidden)
    _, media_free = ObservationModels(step=Board, owner="test").for_renderer("step", observation, None)
    default = _media(view, observation, None)
    assert _media(view, observation, media_free) == default
    if media_free is not None and view.vouched_for(observation, media_free):  # the turn skips the search
        assert not isinstance(default, str) and default[0] == []


class Wordlike(BaseModel):  # the shape of a text game's generated observation model
    model_config = ConfigDict(extra="forbid")
    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] | MISSING = MISSING
    prompt: str
    feedback: str = ""


def test_a_typed_renderers_turn_of_vouched_fields_skips_the_rendering() -> None:
    """Every field the model may read is vouched for (`metadata`, open as it is, is never
    shown): the turn is the renderer's text as it stands, with no search for media."""
    from openenvgen_runtime.actions import ActionSpace
    from openenvgen_runtime.episode import next_turn
    from openenvgen_runtime.extensions import Extension
    from openenvgen_runtime.prompts import turn

    observation = {"prompt": "Wrong guess.", "feedback": "X G X X Y", "metadata": {"frame_base64": PNG}}
    models = ObservationModels(step=Wordlike, owner="test")
    _, media_free = models.for_renderer("step", observation, 0.0)
    view = ObservationView()
    assert media_free == {"done", "reward", "prompt", "feedback"} and view.vouched_for(observation, media_free)
    assert not view.vouched_for({**observation, "extra_base64": PNG}, media_free)

    class Guess(BaseModel):
        message: str

    space = ActionSpace(action_model=Guess, action_schema=Guess.model_json_schema())
    extension = Extension(source="test", renderer=lambda o: f"{o.prompt} {o.feedback}", typed_renderer=True)
    text = asyncio.run(next_turn(view, space, observation, 0.0, extension=extension, models=models))
    assert text == turn("Wrong guess. X G X X Y", space, 0.0)

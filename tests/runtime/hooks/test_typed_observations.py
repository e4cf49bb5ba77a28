"""A typed renderer's turn (the package's renderer given the generated observation model):
the renderer's text, with exactly the attachments the default rendering finds, whether or not
the observation validates."""

from __future__ import annotations

import asyncio
import base64
import enum
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import MISSING, BaseModel, ConfigDict, Field

from openenvgen_runtime.episodes.episode import next_turn
from openenvgen_runtime.hooks.extensions import NO_EXTENSION, Extension
from openenvgen_runtime.hooks.typed_hooks import NO_MODELS, ObservationModels
from openenvgen_runtime.turn.actions import ActionSpace
from openenvgen_runtime.turn.media import MediaError
from openenvgen_runtime.turn.observations import ObservationView
from openenvgen_runtime.turn.prompts import turn
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


class Guess(BaseModel):
    message: str


SPACE = ActionSpace(action_model=Guess, action_schema=Guess.model_json_schema())


def _turn(view: ObservationView, observation: dict[str, Any], extension: Extension, models: ObservationModels) -> Any:
    """The turn's text and attachment parts, or the MediaError's message."""
    try:
        content = asyncio.run(next_turn(view, SPACE, observation, None, extension=extension, models=models))
    except MediaError as error:
        return str(error)
    return (content, []) if isinstance(content, str) else (content[0].text, content[1:])


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional=_FIELDS), st.sampled_from([(), ("info",), ("open_cell.x_base64",)]))
def test_a_typed_renderers_turn_attaches_what_the_default_rendering_attaches(
    observation: dict[str, Any], hidden: tuple[str, ...]
) -> None:
    """Whether or not the observation validates: a field that does not is searched like any other."""
    view = ObservationView(hidden_fields=hidden)
    typed = Extension(source="test", renderer=lambda board: "typed", typed_renderer=True)
    models = ObservationModels(step=Board, owner="test")
    default = _turn(view, observation, NO_EXTENSION, NO_MODELS)
    mine = _turn(view, observation, typed, models)
    if isinstance(default, str):
        assert mine == default
    else:
        assert mine == (turn("typed", SPACE, None), default[1])


class Wordlike(BaseModel):  # the shape of a text game's generated observation model
    model_config = ConfigDict(extra="forbid")
    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] | MISSING = MISSING
    prompt: str
    feedback: str = ""


def test_a_typed_renderers_turn_is_its_text_and_the_visible_media() -> None:
    """The renderer's text as it stands; media in `metadata` (never shown) is not attached,
    a media field the model does not name is."""
    observation = {"prompt": "Wrong guess.", "feedback": "X G X X Y", "metadata": {"frame_base64": PNG}}
    models = ObservationModels(step=Wordlike, owner="test")
    extension = Extension(source="test", renderer=lambda o: f"{o.prompt} {o.feedback}", typed_renderer=True)
    view = ObservationView()
    text = asyncio.run(next_turn(view, SPACE, observation, 0.0, extension=extension, models=models))
    assert text == turn("Wrong guess. X G X X Y", SPACE, 0.0)
    content = asyncio.run(
        next_turn(view, SPACE, {**observation, "extra_base64": PNG}, 0.0, extension=extension, models=models)
    )
    assert isinstance(content, list) and content[0].text == turn("Wrong guess. X G X X Y", SPACE, 0.0)
    assert len(content) == 3 and "extra_base64" in content[1].text

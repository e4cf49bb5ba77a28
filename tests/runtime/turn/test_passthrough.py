"""A bare reply skips validation only where pydantic would give the same action
(`passthrough.takes_any_string`, `ActionSpace.parse`)."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    MISSING,
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from openenvgen_runtime.turn.actions import ACTION_TOOL, ActionSpace, InvalidAction, ToolCallRequest
from openenvgen_runtime.turn.passthrough import takes_any_string
from openenvgen_testsupport.paths import GENERATED


class Plain(BaseModel):
    message: str


class Generated(BaseModel):  # the shape openenv-gen writes for Wordle's action
    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] | MISSING = Field(MISSING, description="Additional metadata", title="Metadata")
    message: str = Field(..., title="Message", description="Your move")


class ExtraAllowed(BaseModel):
    model_config = ConfigDict(extra="allow", title="Allowed")
    message: str
    count: int = 3


class Aliased(BaseModel):
    message_: str = Field(..., alias="message")


class Bounded(BaseModel):
    message: str = Field(..., max_length=5)


class Patterned(BaseModel):
    message: str = Field(..., pattern=r"^\[\w+\]$")


class Stripping(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)
    message: str


class Lowering(BaseModel):
    model_config = ConfigDict(str_to_lower=True)
    message: str


class Strict(BaseModel):
    model_config = ConfigDict(strict=True)
    message: str


class FieldChecked(BaseModel):
    message: str

    @field_validator("message")
    @classmethod
    def no_x(cls, value: str) -> str:
        if "x" in value:
            raise ValueError("no x")
        return value


class ModelChecked(BaseModel):
    message: str

    @model_validator(mode="after")
    def not_empty(self) -> ModelChecked:
        if not self.message:
            raise ValueError("empty")
        return self


class FieldDumped(BaseModel):
    message: str

    @field_serializer("message")
    def upper(self, value: str) -> str:
        return value.upper()


class ModelDumped(BaseModel):
    message: str

    @model_serializer
    def dump(self) -> dict[str, Any]:
        return {"message": self.message, "extra": 1}


class Computed(BaseModel):
    message: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def length(self) -> int:
        return len(self.message)


class Chosen(BaseModel):
    message: Literal["[crane]", "[slate]"]


class Nullable(BaseModel):
    message: str | None


class TwoRequired(BaseModel):
    message: str
    other: int


class CheckedDefault(BaseModel):
    message: str
    other: int = Field(default=-1, ge=0, validate_default=True)


class PostInit(BaseModel):
    message: str

    def model_post_init(self, context: Any) -> None:
        if "x" in self.message:
            raise ValueError("no x")


TAKES_ANY_STRING = {Plain: True, Generated: True, ExtraAllowed: True}
"""Every other model here can change or refuse some string."""
MODELS = [
    Plain, Generated, ExtraAllowed, Aliased, Bounded, Patterned, Stripping, Lowering, Strict, FieldChecked,
    ModelChecked, FieldDumped, ModelDumped, Computed, Chosen, Nullable, TwoRequired, CheckedDefault, PostInit,
]  # fmt: skip


def test_only_models_that_take_any_string_skip_validation() -> None:
    verdicts = {model: takes_any_string(model, "message") for model in MODELS}
    assert verdicts == {model: TAKES_ANY_STRING.get(model, False) for model in MODELS}
    assert not takes_any_string(Plain, "other")


def space(model: type[BaseModel], *, skip: bool | None = None) -> ActionSpace:
    """The action space of `model` (its schema as the server's); `skip` forces the shortcut on or off."""
    action_space = ActionSpace(action_model=model, action_schema=model.model_json_schema(by_alias=True))
    if skip is not None:
        action_space.__dict__["_bare_reply_is_action"] = skip
    return action_space


def outcome(action_space: ActionSpace, reply: str) -> Any:
    try:
        return action_space.parse(reply)
    except InvalidAction as e:
        return "InvalidAction", str(e)


def tool_outcome(action_space: ActionSpace, value: str) -> Any:
    """The action of a native tool call (a TRL tool method's call) whose one argument is `value`."""
    field = action_space._raw_string_field
    try:
        return action_space.parse_tool_calls([ToolCallRequest("1", ACTION_TOOL, json.dumps({field: value}))])
    except InvalidAction as e:
        return "InvalidAction", str(e)


REPLIES = st.text(alphabet=" \n\t`[]{}\"'xXabcé😀\ud800", max_size=12) | st.sampled_from(
    ["[crane]", " [slate] ", "```\n[crane]\n```", "x", "", '"[crane]"', '{"message": "[crane]"}']
)


@given(REPLIES)
@settings(max_examples=300, deadline=None)
def test_skipping_validation_gives_what_validating_gives(reply: str) -> None:
    """For every model, any reply (and any tool call's one argument): the same action or the
    same error, shortcut or not; and
    forcing the shortcut where it is refused would change some outcome (see the next test)."""
    for model in MODELS:
        if space(model)._raw_string_field is None:
            continue
        assert outcome(space(model), reply) == outcome(space(model, skip=False), reply), model.__name__
        assert tool_outcome(space(model), reply) == tool_outcome(space(model, skip=False), reply), model.__name__


HARMLESS_BUT_REFUSED = (Aliased, Stripping, Strict)
"""Refused though no bare reply would change: the reply is stripped already, a strict `str`
takes any `str`, the alias is the field's name on the wire. The check does not know that:
it refuses what it cannot prove."""


@pytest.mark.parametrize("model", [m for m in MODELS if not TAKES_ANY_STRING.get(m)], ids=lambda m: m.__name__)
def test_each_refusal_matters_or_is_known_to_be_cautious(model: type[BaseModel]) -> None:
    """With the shortcut forced on, some bare reply gets another outcome than validating
    gives, except for the models refused only out of caution."""
    if space(model)._raw_string_field is None:
        return  # no one required string field: a bare reply is never the action
    replies = ["[crane]", " x ", "", "toolong-reply", "X"]
    changed = any(outcome(space(model, skip=True), r) != outcome(space(model, skip=False), r) for r in replies)
    assert changed != (model in HARMLESS_BUT_REFUSED)


def test_the_catalog_packages_skip_validation_exactly_where_pydantic_agrees() -> None:
    """Every catalog package with one required string field: the shortcut's action equals
    the validated one for typical replies, and Wordle's (the P3 benchmark's env) takes it."""
    replies = ["[crane]", "  ```json\nhello\n```", "print(1)", "x" * 300, ""]
    skipping = []
    for package in sorted(GENERATED.glob("*-openenv")):
        name = package.name.replace("-", "_")
        snapshot = json.loads((package / name / "snapshot.json").read_text())
        schema = snapshot["action_schema"]
        required = schema.get("required") or []
        if len(required) != 1 or (schema.get("properties") or {}).get(required[0], {}).get("type") != "string":
            continue
        sys.path.insert(0, str(package))
        try:
            taskset = importlib.import_module(f"{name}.taskset")
        finally:
            sys.path.remove(str(package))
        model = next(v.ACTION_MODEL for v in vars(taskset).values() if getattr(v, "ACTION_MODEL", None))
        checked = ActionSpace(action_model=model, action_schema=schema)
        validated = ActionSpace(action_model=model, action_schema=schema)
        validated.__dict__["_bare_reply_is_action"] = False
        for reply in replies:
            assert outcome(checked, reply) == outcome(validated, reply), (name, reply)
        if checked._bare_reply_is_action:
            skipping.append(name)
    assert "wordle_openenv" in skipping, skipping

"""The per-step path, pinned: the user turn's exact text and the action a reply becomes.

Every step renders a turn and parses a reply, so both have fast paths (a cached schema
string, a bare reply that needs no validation, no media walk for text without a media key);
these tests hold them to the text and the actions the plain calls give.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from openenvgen_runtime.episodes.episode import next_turn
from openenvgen_runtime.turn.actions import ActionSpace, InvalidAction
from openenvgen_runtime.turn.observations import ObservationView


class Guess(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] = Field(default_factory=dict)
    message: str = Field(..., description="Your move, e.g. 'I guess [crane]'.")


class Classify(BaseModel):
    model_config = ConfigDict(extra="forbid")
    class_: str = Field(..., alias="class")
    confidence: float | None = None


OBSERVATION = {
    "prompt": "Wrong guess [slaté]. 5 left.",
    "feedback": "X X G X G",
    "done": False,
    "reward": 0.5,
    "metadata": {"answer": "crane"},
}
SHOWN = '{"prompt": "Wrong guess [slaté]. 5 left.", "feedback": "X X G X G"}'
SCHEMA_SHOWN = (
    '{"additionalProperties": false, "properties": {"message": {"description": "Your move, e.g. '
    '\'I guess [crane]\'.", "title": "Message", "type": "string"}}, "required": ["message"], '
    '"title": "Guess", "type": "object"}'
)


def _turn(reward: float | None, *, tools: bool = False) -> Any:
    space = ActionSpace(action_model=Guess, action_schema=Guess.model_json_schema())
    return asyncio.run(next_turn(ObservationView(), space, OBSERVATION, reward, tools=tools))


def test_the_turn_text_is_exactly_observation_reward_and_schema() -> None:
    assert _turn(0.5) == (
        f"Observation:\n{SHOWN}\n\nReward for your last action: 0.5\n\nAction schema:\n{SCHEMA_SHOWN}"
    )
    assert _turn(None) == f"Observation:\n{SHOWN}\n\nAction schema:\n{SCHEMA_SHOWN}"
    assert (
        _turn(1e-7) == f"Observation:\n{SHOWN}\n\nReward for your last action: 1e-07\n\nAction schema:\n{SCHEMA_SHOWN}"
    )
    assert _turn(None, tools=True) == f"Observation:\n{SHOWN}"


def test_the_observation_text_is_plain_json_dumps() -> None:
    observation = {"text": 'é\u2028"\\', "values": [1, 2.5, float("nan"), -0.0, None, True], "nested": {"😀": 1e300}}
    rendered = asyncio.run(ObservationView().render(observation))
    assert rendered.text == json.dumps(observation, ensure_ascii=False)


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        ("[slate]", {"message": "[slate]"}),
        ('{"message": "crane"}', {"message": "crane"}),
        ('"crane"', {"message": "crane"}),
        ('{"message": "crane", "metadata": {"k": 1}}', {"message": "crane", "metadata": {"k": 1}}),
    ],
)
def test_a_reply_becomes_the_validated_dump_with_only_what_was_set(reply: str, action: dict[str, Any]) -> None:
    space = ActionSpace(action_model=Guess, action_schema=Guess.model_json_schema())
    assert space.parse(reply) == action


def test_an_aliased_field_goes_to_the_server_by_its_alias() -> None:
    space = ActionSpace(action_model=Classify, action_schema=Classify.model_json_schema(by_alias=True))
    assert space.parse('{"class": "cat"}') == {"class": "cat"}
    assert space.parse('{"class": "cat", "confidence": 1}') == {"class": "cat", "confidence": 1.0}


@pytest.mark.parametrize("reply", ['{"message": "crane", "extra": 1}', '{"message": 5}', "{}"])
def test_validation_stays_strict(reply: str) -> None:
    space = ActionSpace(action_model=Guess, action_schema=Guess.model_json_schema())
    with pytest.raises(InvalidAction):
        space.parse(reply)

"""What the model reads of an observation (openenvgen_runtime.turn.observations), against a real
OpenEnv server whose observations carry images, audio, an env system prompt and the
answer in `metadata` (openenvgen_testsupport.media_envs)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openenv import GenericEnvClient
from verifiers.v1.types import ImageUrlContentPart, TextContentPart, UserMessage

from openenvgen_runtime.turn.media import MediaError, media_type
from openenvgen_runtime.turn.observations import (
    BASE64_SUFFIX,
    ObservationView,
    _media_fields,  # with _replace: the full walk, final_info's reference
    _replace,
    env_system_prompt,
    final_info,
    numeric_metrics,
    system_prompt_with_env,
)
from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.media_envs import (
    COLOURS,
    GIF,
    JPEG,
    MP3,
    PICTURE_SYSTEM_PROMPT,
    WEBP,
    make_picture_app,
    png,
    wav,
)
from openenvgen_testsupport.servers import serve_app


@pytest.fixture(scope="module")
def picture_server() -> Iterator[str]:
    with serve_app(make_picture_app(), ready_path="/health") as url:
        yield str(url)


async def _reset(url: str, **kwargs: Any) -> dict[str, Any]:
    client = GenericEnvClient(base_url=url)
    try:
        return (await client.reset(**kwargs)).observation
    finally:
        await client.close()


def reset(url: str, **kwargs: Any) -> dict[str, Any]:
    return asyncio.run(_reset(url, **kwargs))


def render(view: ObservationView, observation: dict[str, Any]) -> Any:
    return asyncio.run(view.render(observation))


def test_media_types_come_from_magic_bytes() -> None:
    assert media_type(png((1, 2, 3))) == "image/png"
    assert media_type(JPEG) == "image/jpeg"
    assert media_type(GIF) == "image/gif"
    assert media_type(WEBP) == "image/webp"
    assert media_type(wav()) == "audio/wav"
    assert media_type(MP3) == "audio/mpeg"
    assert media_type(b"ID3\x04\x00" + MP3) == "audio/mpeg"
    assert media_type(b"<svg></svg>") is None
    assert media_type(b"RIFF\x00\x00\x00\x00AVI ") is None
    assert media_type(b"") is None


def test_image_fields_become_image_parts_and_the_answer_stays_hidden(picture_server: str) -> None:
    observation = reset(picture_server, colour="blue")
    assert observation["metadata"]["answer"] == "blue"  # the server does send it

    rendered = render(ObservationView(asset_base_url=picture_server), observation)
    text = json.loads(rendered.text)
    assert rendered.fields == text  # what a package's own renderer (custom.py) is given
    assert "metadata" not in text and "blue" not in rendered.text
    assert "system_prompt" not in text and "done" not in text and "reward" not in text
    assert text["prompt"] == "What colour is the picture?"
    size = len(png(COLOURS["blue"]))
    assert text["image_base64"] == f"<image/png, {size} B: attachment 1>"
    assert text["image_asset_path"] == f"<image/png, {size} B: attachment 2>"
    assert [(m.path, m.mime) for m in rendered.media] == [
        ("image_base64", "image/png"),
        ("image_asset_path", "image/png"),
    ]
    # The asset is the very PNG the server serves, fetched from it.
    assert rendered.media[1].data == png(COLOURS["blue"]) == base64.b64decode(observation["image_base64"])

    parts = rendered.content("Observation:\n" + rendered.text)
    assert isinstance(parts, list)
    assert parts[0] == TextContentPart(text="Observation:\n" + rendered.text)
    assert parts[1].text == "Attachment 1 (image_base64, image/png):"
    image = parts[2]
    assert isinstance(image, ImageUrlContentPart)
    assert image.image_url.url == "data:image/png;base64," + observation["image_base64"]
    # verifiers accepts the parts as a user message (what `interaction.turn` is given).
    UserMessage(content=parts)


def test_every_supported_image_and_audio_type_is_an_attachment(picture_server: str) -> None:
    observation = reset(picture_server, jpeg=True, gif=True, webp=True, mp3=True, audio=True)
    rendered = render(ObservationView(asset_base_url=picture_server), observation)
    assert [(m.path, m.mime) for m in rendered.media] == [
        ("image_base64", "image/png"),
        ("image_asset_path", "image/png"),
        ("audio_base64", "audio/wav"),
        ("frames_base64.0", "image/jpeg"),
        ("frames_base64.1", "image/gif"),
        ("frames_base64.2", "image/webp"),
        ("frames_base64.3", "audio/mpeg"),
    ]
    assert json.loads(rendered.text)["frames_base64"][1] == f"<image/gif, {len(GIF)} B: attachment 5>"
    wire = rendered.wire_content()
    assert wire[6] == {"type": "input_audio", "input_audio": {"data": observation["audio_base64"], "format": "wav"}}
    assert wire[-1]["input_audio"]["format"] == "mp3"
    assert wire[8]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    # verifiers' messages carry no audio part: say so instead of dropping the audio unseen.
    with pytest.raises(MediaError, match=r"'audio_base64' is audio \(audio/wav\).*only text and image parts"):
        rendered.content()


def test_hidden_fields_take_dotted_paths_and_apply_through_lists(picture_server: str) -> None:
    observation = {
        "board": {"cells": [1, 2], "solution": [3, 4]},
        "moves": [{"piece": "K", "eval": 0.3}, {"piece": "Q", "eval": -1}],
        "audio_base64": base64.b64encode(wav()).decode(),
        "metadata": {"answer": 7},
        "done": False,
        "reward": None,
    }
    view = ObservationView(hidden_fields=["board.solution", "moves.eval", "audio_base64", "not.there"])
    rendered = render(view, observation)
    assert rendered.media == ()
    assert rendered.text == json.dumps({"board": {"cells": [1, 2]}, "moves": [{"piece": "K"}, {"piece": "Q"}]})
    assert observation["board"]["solution"] == [3, 4]  # the caller's observation is untouched


def test_text_only_observations_stay_a_plain_string() -> None:
    with serve_app(make_wordle_app(), ready_path="/health") as url:
        observation = reset(str(url), secret="crane")
    view = ObservationView(asset_base_url=str(url))
    expected = {k: v for k, v in observation.items() if k not in ("done", "reward", "metadata")}
    rendered = render(view, observation)
    content = rendered.content(f"Observation:\n{rendered.text}")
    # Exactly the compact JSON the runtime has always sent, minus `metadata`.
    assert content == "Observation:\n" + json.dumps(expected, ensure_ascii=False)


def test_a_field_that_is_no_media_is_a_clear_error(picture_server: str) -> None:
    observation = reset(picture_server, blob=True)
    with pytest.raises(MediaError) as error:
        render(ObservationView(asset_base_url=picture_server), observation)
    message = str(error.value)
    assert "'blob_base64' is not a known media type (png, jpeg, webp, gif, wav, mp3)" in message
    assert "\n" not in message
    # Hiding the field is the way out.
    assert (
        len(render(ObservationView(hidden_fields=["blob_base64"], asset_base_url=picture_server), observation).media)
        == 2
    )


def test_bad_base64_and_missing_assets_are_clear_errors(picture_server: str) -> None:
    with pytest.raises(MediaError, match="'shot_base64' ends in 'base64' but is not valid base64"):
        render(ObservationView(), {"shot_base64": "not base64!"})
    observation = reset(picture_server, missing_asset=True)
    with pytest.raises(MediaError, match=r"'image_asset_path': GET http://.*/assets/missing.png answered 404"):
        render(ObservationView(asset_base_url=picture_server), observation)
    with pytest.raises(MediaError, match="'image_asset_path' names an asset, but no server URL is known"):
        render(ObservationView(), {"image_asset_path": "/assets/red.png"})
    with pytest.raises(MediaError, match="is not on the env server"):
        render(ObservationView(asset_base_url=picture_server), {"image_asset_path": "http://example.com/red.png"})


def test_the_size_cap_is_a_clear_error(picture_server: str) -> None:
    observation = reset(picture_server)
    size = len(png(COLOURS["red"]))
    ok = render(ObservationView(max_media_bytes=size, asset_base_url=picture_server), observation)
    assert len(ok.media) == 2
    # Over the cap from base64 (before decoding) and from a served asset (while streaming).
    with pytest.raises(MediaError, match=rf"'image_base64' holds .* more than max_media_bytes \({size - 1}\)"):
        render(ObservationView(max_media_bytes=size - 1, asset_base_url=picture_server), observation)
    asset_only = {"image_asset_path": observation["image_asset_path"]}
    with pytest.raises(MediaError, match=rf"'image_asset_path' holds {size} B, more than max_media_bytes \(10\)"):
        render(ObservationView(max_media_bytes=10, asset_base_url=picture_server), asset_only)
    big = {"big_base64": base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(4000)).decode()}
    with pytest.raises(MediaError, match=r"'big_base64' holds about 3.9 KiB, more than max_media_bytes \(1000\)"):
        render(ObservationView(max_media_bytes=1000), big)


def test_data_urls_and_empty_media_fields(picture_server: str) -> None:
    data = png((9, 9, 9))
    observation = {
        "a_base64": "data:image/png;base64," + base64.b64encode(data).decode(),
        "b_base64": "",
        "c_base64": None,
    }
    rendered = render(ObservationView(), observation)
    assert [m.data for m in rendered.media] == [data]
    note = f"<image/png, {len(data)} B: attachment 1>"
    assert json.loads(rendered.text) == {"a_base64": note, "b_base64": "", "c_base64": None}


def test_env_system_prompt_final_info_and_metrics(picture_server: str) -> None:
    observation = reset(picture_server, colour="green")
    assert env_system_prompt(observation) == PICTURE_SYSTEM_PROMPT
    assert env_system_prompt({"system_prompt": "  "}) is None
    assert env_system_prompt({"prompt": "x"}) is None
    assert system_prompt_with_env("Reply with JSON.", observation) == f"{PICTURE_SYSTEM_PROMPT}\n\nReply with JSON."
    assert system_prompt_with_env("Reply with JSON.", {"prompt": "x"}) == "Reply with JSON."

    info = final_info(observation)
    assert info["metadata"] == {"answer": "green", "difficulty": 2}
    assert info["image_base64"] == f"<{len(observation['image_base64'])} base64 characters omitted>"
    assert info["image_asset_path"] == "/assets/green.png"
    assert info["prompt"] == observation["prompt"]
    json.dumps(info)

    metrics = numeric_metrics(observation)
    assert metrics == {"score": 0.5, "attempts": 0.0, "won": 0.0, "metadata.difficulty": 2.0}
    assert numeric_metrics({"x": float("nan"), "y": [1, 2], "z": {"w": True}, "reward": 1.0, "done": True}) == {
        "z.w": 1.0
    }


_KEYS = st.sampled_from(["a", "image_base64", "IMG_BASE64", "frames_Base64", "x_asset_path", "base64", "metadata"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(_KEYS, _JSON, max_size=5))
@settings(max_examples=300, deadline=None)
def test_final_info_leaves_out_exactly_the_base64_payloads(observation: dict[str, Any]) -> None:
    """Its shortcut (no base64 key anywhere: a plain copy) agrees with the full walk."""
    notes = {
        path: f"<{len(value)} base64 characters omitted>"
        for path, value, source in _media_fields(observation)
        if source == BASE64_SUFFIX
    }
    assert final_info(observation) == _replace(observation, notes)
    assert final_info(observation) is not observation


_TEXT = st.text(alphabet='ab"\\\n\x00é€😀', max_size=6)  # no key can end in `base64` or `asset_path`
_TEXT_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(_TEXT, _TEXT_JSON, max_size=5))
@settings(max_examples=300, deadline=None)
def test_the_text_is_json_dumps_of_the_visible_fields(observation: dict[str, Any]) -> None:
    """The encoder built once writes what `json.dumps(..., ensure_ascii=False)` writes (NaN included)."""
    visible = ObservationView().visible(observation)
    assert render(ObservationView(), observation).text == json.dumps(visible, ensure_ascii=False)

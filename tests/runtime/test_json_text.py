"""`json_text`: the runtime's per-step JSON is `json.dumps`'s text, made by an encoder built once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenvgen_runtime import json_text

_TEXT = st.text(alphabet='ab"\\\n\x00é€😀\ud800', max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(_JSON)
@settings(max_examples=300, deadline=None)
def test_the_text_is_json_dumps(value: Any) -> None:
    """NaN, infinities, lone surrogates and non-ASCII text included."""
    assert json_text.dumps(value) == json.dumps(value)
    assert json_text.dumps_unicode(value) == json.dumps(value, ensure_ascii=False)


def test_without_the_c_encoder_the_text_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_text, "_MAKE_C_ENCODER", None)
    value = {"prompt": "é😀\n", "n": [1, 2.5, None, True], "nan": float("nan")}
    assert json_text._encoder(ensure_ascii=True)(value) == json.dumps(value)
    assert json_text._encoder(ensure_ascii=False)(value) == json.dumps(value, ensure_ascii=False)


def test_an_object_json_cannot_hold_is_refused_as_json_dumps_refuses_it() -> None:
    for dumps in (json_text.dumps, json_text.dumps_unicode):
        with pytest.raises(TypeError, match="not JSON serializable"):
            dumps({"when": object()})

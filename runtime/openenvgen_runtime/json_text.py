"""`json.dumps` for the JSON the runtime writes every step, by the stdlib's C encoder built once.

`json.dumps` (through `JSONEncoder.encode`) builds a C encoder, and a closure, on every
call: more than half the cost of encoding a step's small message or observation. The text
is the same, `dumps` `json.dumps(value)`'s and `dumps_unicode` `json.dumps(value,
ensure_ascii=False)`'s. Values are parsed JSON or validated actions: they hold no cycles,
so none are looked for (a cycle ends in RecursionError, not ValueError). Without CPython's
C encoder, `JSONEncoder.encode` does the work.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

_MAKE_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # CPython's; typeshed leaves it out


def _encoder(*, ensure_ascii: bool) -> Callable[[Any], str]:
    fallback = json.JSONEncoder(ensure_ascii=ensure_ascii)
    if _MAKE_C_ENCODER is None:
        return fallback.encode
    escape = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = _MAKE_C_ENCODER(None, fallback.default, escape, None, ": ", ", ", False, False, True)

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


dumps = _encoder(ensure_ascii=True)
"""`json.dumps(value)`: what OpenEnv's client sends."""
dumps_unicode = _encoder(ensure_ascii=False)
"""`json.dumps(value, ensure_ascii=False)`: what the model reads."""

"""What the model reads of an observation, and what the trace keeps of the last one.

An OpenEnv observation is a JSON object. The model gets:

- **text**: the observation as compact JSON (the same `json.dumps` the runtime always
  sent), without `done` and `reward` (reported beside it), without `system_prompt` (sent
  as the system message, see `env_system_prompt`) and without hidden fields: `metadata`
  (it may identify the answer) but for the keys a package names in `shown_metadata` (an
  env that puts the question or whose turn it is there), plus every `hidden_fields`
  entry, a dotted path (`board.solution`; a path through a list applies to each of its items);
- **media**: images (png, jpeg, webp, gif) and audio (wav, mp3) as content parts, from
  fields whose name ends in `base64` (a base64 string, a `data:` URL, or a list of them)
  and from fields whose name ends in `asset_path` (a path the env serves over HTTP,
  fetched from the server's base URL; an absolute URL must be on that server). The
  media type comes from the bytes' magic numbers, never from the field name. In the
  text such a field is replaced by a short note naming the attachment (`<image/png,
  12.3 KiB: attachment 1>`). A field that holds no known media type, bad base64, an
  asset the server does not serve, or more than `max_media_bytes` is a `MediaError`
  with one line saying which field and why.

Without media the content is a plain string, so text-only environments read exactly the
text they always did. With media it is verifiers' content parts: the text, then for each
attachment a one-line label and the image (a `data:` URL in an `image_url` part).
verifiers' messages carry text and image parts only; an audio attachment is built as
OpenAI's `input_audio` part (`wire_content`), and `content` raises a `MediaError` for it
unless the installed verifiers accepts such parts, rather than dropping it unseen.

For the trace: `final_info` is the observation without media payloads (for
`trace.info["openenv"]`), and `numeric_metrics` its numeric leaves by dotted path (bools
as 0/1, lists skipped, `done`/`reward` left out: the reward is recorded on its own).
Hidden fields are kept in both: they never reach the model from there.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import TypeAdapter, ValidationError
from verifiers.v1.types import ContentPart, ImageUrlContentPart, ImageUrlSource, TextContentPart

from openenvgen_runtime.turn.media import (
    ASSET_SUFFIX,
    BASE64_SUFFIX,
    KNOWN_MEDIA,
    Media,
    MediaError,
    media_source,
    media_type,
    size_text,
)

ALWAYS_HIDDEN = ("metadata",)
"""Fields the model never reads: `metadata` may carry the answer."""
NOT_IN_TEXT = ("done", "reward", "system_prompt")
"""Fields reported elsewhere: done/reward beside the observation, `system_prompt` as the
system message."""
DEFAULT_MAX_MEDIA_BYTES = 10 * 1024 * 1024
_DATA_URL = re.compile(r"^data:[\w.+/-]*(;[\w=.+-]+)*;base64,", re.IGNORECASE)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, every step
class RenderedObservation:
    """An observation as the model reads it: its visible fields (media replaced by notes),
    their compact JSON `text`, and the attachments."""

    fields: dict[str, Any]
    media: tuple[Media, ...] = ()
    rendered_text: str | None = None
    """`fields` as JSON, when already made."""

    @property
    def text(self) -> str:
        return self.rendered_text if self.rendered_text is not None else json.dumps(self.fields, ensure_ascii=False)

    def content(self, text: str | None = None) -> str | list[ContentPart]:
        """`text` (default: the observation's own text) as a user turn's content: the
        plain string without media, else verifiers' content parts with each attachment."""
        text = self.text if text is None else text
        if not self.media:
            return text
        parts: list[ContentPart] = [TextContentPart(text=text)]
        for number, item in enumerate(self.media, 1):
            parts.append(TextContentPart(text=f"Attachment {number} ({item.path}, {item.mime}):"))
            parts.append(_verifiers_part(item))
        return parts

    def wire_content(self, text: str | None = None) -> str | list[dict[str, Any]]:
        """Like `content`, as OpenAI chat wire dicts (audio included, as `input_audio`)."""
        text = self.text if text is None else text
        if not self.media:
            return text
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for number, item in enumerate(self.media, 1):
            parts.append({"type": "text", "text": f"Attachment {number} ({item.path}, {item.mime}):"})
            parts.append(item.wire_part())
        return parts


_CONTENT_PART: TypeAdapter[ContentPart] = TypeAdapter(ContentPart)


def _verifiers_part(item: Media) -> ContentPart:
    if item.kind == "image":
        return ImageUrlContentPart(image_url=ImageUrlSource(url=item.data_url))
    try:
        return _CONTENT_PART.validate_python(item.wire_part())
    except ValidationError:
        raise MediaError(
            f"observation field {item.path!r} is audio ({item.mime}), but the installed verifiers "
            "messages carry only text and image parts; hide the field with `hidden_fields`"
        ) from None


@dataclass
class ObservationView:
    """Renders observations for the model. One per server: assets come from `asset_base_url`."""

    hidden_fields: Iterable[str] = ()
    """Dotted paths never shown to the model, besides `metadata`."""
    shown_metadata: Iterable[str] = ()
    """Keys of `metadata` the model reads (`question`): `metadata` keeps only these."""
    max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES
    """Largest image or audio attachment, in bytes."""
    asset_base_url: str | None = None
    """The env server's base URL, for fields whose name ends in `asset_path`."""
    asset_auth: httpx.Auth | None = field(default=None, repr=False)
    """What an asset request carries (the server's headers: its pool's `ServerAccess`)."""
    asset_verify: ssl.SSLContext | bool = field(default=True, repr=False)
    """The TLS trust of an `https://` server's assets."""
    timeout: float = 30.0
    _hidden: tuple[tuple[str, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        paths = [tuple(p.split(".")) for p in (*ALWAYS_HIDDEN, *self.hidden_fields) if p]
        # Top-level names leave in the one pass that drops done/reward; paths walk.
        self._dropped = frozenset(NOT_IN_TEXT) | {p[0] for p in paths if len(p) == 1}
        self._hidden = tuple(p for p in paths if len(p) > 1)
        self._shown_metadata = tuple(self.shown_metadata)

    def visible(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation without the fields the model must not read (media still in)."""
        out = observation.copy()  # then deleting a few keys: half the time of filtering every key
        for key in self._dropped:
            if key in out:
                del out[key]
        metadata = observation.get("metadata") if self._shown_metadata else None
        if isinstance(metadata, dict):
            shown = {k: metadata[k] for k in self._shown_metadata if k in metadata}
            if shown:
                out["metadata"] = shown
        for path in self._hidden:
            out = _without(out, path)
        return out

    async def render(self, observation: dict[str, Any]) -> RenderedObservation:
        """The text and attachments the model reads for `observation`."""
        visible = self.visible(observation)
        text = json.dumps(visible, ensure_ascii=False)
        # A media key ends in `...64"` or `...path"` in the JSON: text without those needs no
        # walk (case aside, the walk decides). Kept for P3 (bench/p3_step.py, quick, side by
        # side): 1.057 with it, 1.117 walking every observation (target 1.10).
        if ('64"' not in text and 'ath"' not in text and 'ATH"' not in text) or not (found := _media_fields(visible)):
            return RenderedObservation(visible, rendered_text=text)
        media: list[Media] = []
        notes: dict[tuple[str | int, ...], str] = {}
        async with contextlib.AsyncExitStack() as stack:
            http: httpx.AsyncClient | None = None
            for path, value, source in found:
                if source == ASSET_SUFFIX and http is None:
                    http = await stack.enter_async_context(
                        httpx.AsyncClient(
                            timeout=self.timeout, trust_env=False, auth=self.asset_auth, verify=self.asset_verify
                        )
                    )
                item = await self._load(path, value, source, http)
                media.append(item)
                notes[path] = item.note(len(media))
        return RenderedObservation(_replace(visible, notes), tuple(media))

    async def _load(
        self, path: tuple[str | int, ...], value: str, source: str, http: httpx.AsyncClient | None
    ) -> Media:
        where = _dotted(path)
        if source == BASE64_SUFFIX:
            data = self._decode(where, value)
        else:
            assert http is not None
            data = await self._fetch(where, value, http)
        mime = media_type(data)
        if mime is None:
            raise MediaError(
                f"observation field {where!r} is not a known media type ({KNOWN_MEDIA}); "
                f"its first bytes are {data[:8].hex() or 'empty'}; hide it with `hidden_fields`"
            )
        return Media(where, mime, data)

    def _decode(self, where: str, value: str) -> bytes:
        text = _DATA_URL.sub("", value.strip(), count=1)
        # 4 base64 characters carry 3 bytes: refuse an oversized field before decoding it.
        if len(text) // 4 * 3 > self.max_media_bytes + 2:
            raise MediaError(
                f"observation field {where!r} holds about {size_text(len(text) // 4 * 3)}, more than "
                f"max_media_bytes ({self.max_media_bytes})"
            )
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise MediaError(f"observation field {where!r} ends in 'base64' but is not valid base64") from None
        self._checksize_text(where, len(data))
        return data

    async def _fetch(self, where: str, value: str, http: httpx.AsyncClient) -> bytes:
        if not self.asset_base_url:
            raise MediaError(f"observation field {where!r} names an asset, but no server URL is known to fetch it from")
        base = self.asset_base_url.rstrip("/") + "/"
        # A path from the server's root is under its base URL's path (a relay's token, a fleet's prefix).
        url = urljoin(base, value[1:] if value.startswith("/") and not value.startswith("//") else value)
        if urlsplit(url)[:2] != urlsplit(base)[:2]:
            raise MediaError(
                f"observation field {where!r}: asset {value!r} is not on the env server {self.asset_base_url}"
            )
        try:
            async with http.stream("GET", url) as response:
                if response.status_code != 200:
                    raise MediaError(f"observation field {where!r}: GET {url} answered {response.status_code}")
                length = response.headers.get("content-length")
                if length and length.isdigit():
                    self._checksize_text(where, int(length))
                chunks, total = [], 0
                async for chunk in response.aiter_bytes():
                    total += len(chunk)
                    self._checksize_text(where, total)
                    chunks.append(chunk)
        except httpx.HTTPError as e:
            raise MediaError(f"observation field {where!r}: cannot fetch {url}: {e}") from None
        return b"".join(chunks)

    def _checksize_text(self, where: str, size: int) -> None:
        if size > self.max_media_bytes:
            raise MediaError(
                f"observation field {where!r} holds {size_text(size)}, "
                f"more than max_media_bytes ({self.max_media_bytes})"
            )


def env_system_prompt(observation: dict[str, Any]) -> str | None:
    """The env's own system prompt (an observation's non-empty `system_prompt` string)."""
    prompt = observation.get("system_prompt")
    return prompt if isinstance(prompt, str) and prompt.strip() else None


def system_prompt_with_env(action_prompt: str, observation: dict[str, Any]) -> str:
    """The system message: the env's own `system_prompt` first, then the action-format
    instructions (just those when the env has none)."""
    env_prompt = env_system_prompt(observation)
    return f"{env_prompt.strip()}\n\n{action_prompt}" if env_prompt else action_prompt


def final_info(observation: dict[str, Any]) -> dict[str, Any]:
    """The observation for `trace.info`: every field, media payloads replaced by their size."""
    # Typed hooks record every observation of an episode: most have no base64 key at all,
    # which a look at the keys alone tells (2-3 times faster than the walk).
    if not _has_base64_key(observation):
        return dict(observation)
    notes = {
        path: f"<{len(value)} base64 characters omitted>"
        for path, value, source in _media_fields(observation)
        if source == BASE64_SUFFIX
    }
    return _replace(observation, notes) if notes else dict(observation)


def numeric_metrics(observation: dict[str, Any]) -> dict[str, float]:
    """Numeric leaves of the observation by dotted path (`score`, `metadata.moves`); bools
    count as 0/1; lists, non-finite numbers, `done` and `reward` are left out."""
    out: dict[str, float] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                walk(value, f"{name}.")
            elif isinstance(value, bool | int | float) and math.isfinite(value):
                out[name] = float(value)

    walk({k: v for k, v in observation.items() if k not in ("done", "reward")}, "")
    return out


# --- helpers ------------------------------------------------------------------------


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path)


def _media_fields(node: Any) -> list[tuple[tuple[str | int, ...], str, str]]:
    """(path, value, source) of every media string: a field named `...base64` or
    `...asset_path` holding a non-empty string, or a list of them."""
    found: list[tuple[tuple[str | int, ...], str, str]] = []
    _collect_media(node, (), found)
    return found


def _collect_media(node: Any, path: tuple[str | int, ...], found: list[tuple[tuple[str | int, ...], str, str]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            source = media_source(str(key))
            if source is not None and isinstance(value, str):
                if value:
                    found.append(((*path, key), value, source))
            elif source is not None and isinstance(value, list) and all(isinstance(v, str) for v in value):
                found.extend(((*path, key, index), item, source) for index, item in enumerate(value) if item)
            elif isinstance(value, _CONTAINERS):
                _collect_media(value, (*path, key), found)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if isinstance(item, _CONTAINERS):
                _collect_media(item, (*path, index), found)


def _has_base64_key(node: Any) -> bool:
    """Whether a dict anywhere in `node` has a key that names base64 media (any case)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if str(key)[-6:].lower() == BASE64_SUFFIX:
                return True
            if isinstance(value, _CONTAINERS) and _has_base64_key(value):
                return True
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, _CONTAINERS) and _has_base64_key(item):
                return True
    return False


_CONTAINERS = (dict, list)  # a tuple: isinstance is slower with `dict | list`


def _replace(node: Any, notes: dict[tuple[str | int, ...], str], path: tuple[str | int, ...] = ()) -> Any:
    if path in notes:
        return notes[path]
    if isinstance(node, dict):
        return {k: _replace(v, notes, (*path, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, notes, (*path, i)) for i, v in enumerate(node)]
    return node


def _without(node: Any, path: tuple[str, ...]) -> Any:
    """`node` without the field at `path`; a list on the way applies it to each item."""
    if isinstance(node, list):
        return [_without(item, path) for item in node]
    if not isinstance(node, dict) or path[0] not in node:
        return node
    if len(path) == 1:
        return {k: v for k, v in node.items() if k != path[0]}
    return {k: (_without(v, path[1:]) if k == path[0] else v) for k, v in node.items()}

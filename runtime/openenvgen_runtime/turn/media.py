"""Media in observations: which fields carry it (`media_source`, by name), an attachment
(`Media`), its type from the bytes' magic numbers (`media_type`), and the one error a
field meant as media can cause (`MediaError`).
`observations` finds such fields and turns them into the content parts the model reads."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
"""OpenAI's `input_audio` format name of each audio type."""
KNOWN_MEDIA = "png, jpeg, webp, gif, wav, mp3"
BASE64_SUFFIX = "base64"
ASSET_SUFFIX = "asset_path"


def media_source(key: str) -> str | None:
    """How a field of this name carries media: `BASE64_SUFFIX` (`...base64`), `ASSET_SUFFIX`
    (`...asset_path`), any case; None for any other name."""
    lowered = key.lower()
    if lowered.endswith(BASE64_SUFFIX):
        return BASE64_SUFFIX
    if lowered.endswith(ASSET_SUFFIX):
        return ASSET_SUFFIX
    return None


class MediaError(ValueError):
    """An observation field meant as media cannot be sent to the model."""


def media_type(data: bytes) -> str | None:
    """The MIME type of image or audio bytes from their magic numbers, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    # MP3: an ID3v2 tag, or an MPEG audio frame header (11 sync bits, layer III).
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE6 == 0xE2):
        return "audio/mpeg"
    return None


def size_text(n: int) -> str:
    """A byte count as people read it: `512 B`, `12.3 KiB`, `4.0 MiB`."""
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


@dataclass(frozen=True)
class Media:
    """One attachment: where it came from, its type and its bytes."""

    path: str
    """Dotted path of the observation field (`frames.1` for a list item)."""
    mime: str
    data: bytes

    @property
    def kind(self) -> str:
        return self.mime.split("/", 1)[0]

    @property
    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def note(self, number: int) -> str:
        return f"<{self.mime}, {size_text(len(self.data))}: attachment {number}>"

    def wire_part(self) -> dict[str, Any]:
        """The OpenAI chat content part for this attachment."""
        if self.kind == "audio":
            data = base64.b64encode(self.data).decode("ascii")
            return {"type": "input_audio", "input_audio": {"data": data, "format": AUDIO_FORMATS[self.mime]}}
        return {"type": "image_url", "image_url": {"url": self.data_url}}

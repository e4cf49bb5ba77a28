"""Real OpenEnv environments (``create_app``) for media observations and the Task API.

* Picture quiz (``make_picture_app``): each observation carries a PNG as a ``*_base64``
  field and as an env-served ``*_asset_path`` (``GET /assets/{name}``), an env
  ``system_prompt``, a numeric ``score`` and the answer in ``metadata``. Reset kwargs
  add more: ``audio=True`` a WAV ``audio_base64`` field, ``blob=True`` a ``*_base64``
  field that is no media, ``jpeg=True``/``gif=True``/``webp=True``/``mp3=True`` more
  images and audio in a ``frames_base64`` list, ``missing_asset=True`` an asset the
  server does not serve. The answer (``metadata.answer``) is the PNG's colour name.
* Counting tasks (``make_task_api_app``): an env that implements OpenEnv's Task API
  methods (``list_splits``, ``num_tasks``, ``get_task``), which ``create_app`` serves as
  ``GET /list_environments``, ``GET /{name}/splits``, ``POST /{name}/num_tasks`` etc.;
  ``reset(split=..., index=...)`` selects a task and echoes it, the seed included, so
  tests see exactly what each reset got.

Media bytes are made here (a real PNG via zlib, a real WAV via ``wave``), so nothing is
downloaded. Run one from the repo root, e.g.::

    python -m uvicorn --factory openenvgen_testsupport.media_envs:make_picture_app --port 8001
"""

from __future__ import annotations

import base64
import io
import struct
import uuid
import wave
import zlib
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

__all__ = [
    "COLOURS",
    "PICTURE_SYSTEM_PROMPT",
    "TASK_SPLITS",
    "GuessAction",
    "PictureEnvironment",
    "PictureObservation",
    "TaskEnvironment",
    "TaskObservation",
    "make_picture_app",
    "make_task_api_app",
    "png",
    "wav",
]

COLOURS = {"red": (255, 0, 0), "green": (0, 160, 0), "blue": (0, 0, 255)}
PICTURE_SYSTEM_PROMPT = "You are shown a picture filled with one colour. Name the colour."
# Tiny but real media of the other kinds: enough bytes for magic-number detection.
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
    b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
MP3 = b"\xff\xfb\x90\x64" + b"\x00" * 413  # one MPEG-1 layer III frame header, silence


def png(rgb: tuple[int, int, int], size: int = 4) -> bytes:
    """A real `size`×`size` PNG filled with one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def wav(frames: int = 800) -> bytes:
    """A real mono 8 kHz WAV of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * frames)
    return buffer.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------------------
# Picture quiz
# ---------------------------------------------------------------------------


class GuessAction(Action):
    answer: str = Field(..., description="The colour you see.")


class PictureObservation(Observation):
    prompt: str = ""
    system_prompt: str | None = None
    image_base64: str | None = None
    image_asset_path: str | None = None
    audio_base64: str | None = None
    blob_base64: str | None = None
    frames_base64: list[str] = Field(default_factory=list)
    score: float = 0.0
    attempts: int = 0
    won: bool = False


class PictureEnvironment(Environment[GuessAction, PictureObservation, State]):
    """Shows a one-colour PNG; the answer is its colour's name (also in `metadata`)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._colour = "red"
        self._options: dict[str, Any] = {}
        self._state = State(episode_id=str(uuid.uuid4()))

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, colour: str | None = None, **options: Any
    ) -> PictureObservation:
        names = sorted(COLOURS)
        self._colour = colour or names[(seed or 0) % len(names)]
        self._options = options
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return self._observation("What colour is the picture?", done=False, reward=0.0)

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> PictureObservation:
        self._state.step_count += 1
        won = action.answer.strip().lower() == self._colour
        prompt = "Correct." if won else "Wrong, look again."
        return self._observation(prompt, done=won or self._state.step_count >= 3, reward=1.0 if won else 0.0, won=won)

    def _observation(self, prompt: str, *, done: bool, reward: float, won: bool = False) -> PictureObservation:
        options = self._options
        frames = []
        for flag, data in (("jpeg", JPEG), ("gif", GIF), ("webp", WEBP), ("mp3", MP3)):
            if options.get(flag):
                frames.append(_b64(data))
        return PictureObservation(
            prompt=prompt,
            system_prompt=PICTURE_SYSTEM_PROMPT,
            image_base64=_b64(png(COLOURS[self._colour])),
            image_asset_path="/assets/missing.png" if options.get("missing_asset") else f"/assets/{self._colour}.png",
            audio_base64=_b64(wav()) if options.get("audio") else None,
            blob_base64=_b64(b"just some bytes, no picture") if options.get("blob") else None,
            frames_base64=frames,
            score=0.5 + self._state.step_count,
            attempts=self._state.step_count,
            won=won,
            done=done,
            reward=reward,
            metadata={"answer": self._colour, "difficulty": 2},
        )

    @property
    def state(self) -> State:
        return self._state


def make_picture_app(max_concurrent_envs: int = 4) -> FastAPI:
    app = create_app(
        PictureEnvironment,
        GuessAction,
        PictureObservation,
        env_name="picture_quiz",
        max_concurrent_envs=max_concurrent_envs,
    )

    @app.get("/assets/{name}")
    def asset(name: str) -> Response:
        colour = name.removesuffix(".png")
        if colour not in COLOURS:
            raise HTTPException(status_code=404, detail=f"no asset {name!r}")
        return Response(png(COLOURS[colour]), media_type="image/png")

    return app


# ---------------------------------------------------------------------------
# Task API
# ---------------------------------------------------------------------------

TASK_SPLITS = {"train": 12, "test": 5}
TASK_ENV_NAME = "counting_tasks"


class CountAction(Action):
    answer: int


class TaskObservation(Observation):
    question: str = ""
    split: str | None = None
    index: int | None = None
    seed: int | None = None


class TaskEnvironment(Environment[CountAction, TaskObservation, State]):
    """Task `index` of a split asks for `index + 1`; the reset echoes what it was given."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._target = 0
        self._state = State(episode_id=str(uuid.uuid4()))

    # The Task API (OpenEnv's TaskProvider protocol).
    def list_splits(self) -> list[str]:
        return list(TASK_SPLITS)

    def num_tasks(self, split: str) -> int:
        if split not in TASK_SPLITS:
            raise KeyError(split)
        return TASK_SPLITS[split]

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        if not 0 <= index < self.num_tasks(split):
            raise IndexError(index)
        return {"id": f"{split}-{index}", "index": index}

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        **_: Any,
    ) -> TaskObservation:
        self._target = (index or 0) + 1
        self._state = State(episode_id=episode_id or str(uuid.uuid4()))
        return TaskObservation(question=f"Say {self._target}.", split=split, index=index, seed=seed, reward=0.0)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> TaskObservation:
        won = action.answer == self._target
        return TaskObservation(question="Done.", done=True, reward=1.0 if won else 0.0)

    @property
    def state(self) -> State:
        return self._state


def make_task_api_app() -> FastAPI:
    """The counting env; `create_app` serves the Task API routes from its methods."""
    return create_app(TaskEnvironment, CountAction, TaskObservation, env_name=TASK_ENV_NAME, max_concurrent_envs=4)

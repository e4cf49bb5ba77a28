"""A scripted, OpenAI-compatible chat-completions server (no LLM).

Replies come from a script instead of a model, so rollouts through real
clients (the ``openai`` SDK, verifiers' harness) are deterministic:

* ``Script(["[slate]", "[crane]"])`` plays its replies in order *per
  conversation*. The position is derived from the request itself: the reply
  to a request whose ``messages`` already hold N assistant turns is
  ``replies[N]`` (the last reply repeats once the script runs out). Because
  the position is stateless, concurrent episodes never disturb each other.
* A conversation is identified by the text of its first user message
  (:func:`conversation_key`); ``by_conversation`` can give different
  conversations different scripts (matched by substring of that text).
* A plain callable ``reply_fn(messages) -> str`` can be used instead of a
  ``Script`` for dynamic behaviour.

Every request body is recorded for assertions. Serve it with
``openenvgen_testsupport.servers.serve_app(model)``; point clients at ``f"{url}/v1"``.
A reply is plain assistant text (``finish_reason="stop"``), or a
:class:`ToolCalls` — one or more function calls, streamed as tool-call deltas
the way OpenAI streams them (``finish_reason="tool_calls"``). ``tools`` in a
request are recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

__all__ = [
    "DEFAULT_MODEL_ID",
    "ReplyFn",
    "Script",
    "ScriptLike",
    "ScriptedChatModel",
    "ToolCalls",
    "conversation_key",
    "count_assistant_turns",
    "message_text",
]

DEFAULT_MODEL_ID = "scripted-model"

Message = Mapping[str, Any]


@dataclass(frozen=True)
class ToolCalls:
    """A reply made of function calls: ``(name, arguments_json_text)`` pairs."""

    calls: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        return json.dumps([{"name": n, "arguments": a} for n, a in self.calls])


Reply = str | ToolCalls
ReplyFn = Callable[[list[dict[str, Any]]], Reply]


def message_text(content: Any) -> str:
    """Text of a message ``content`` (a string or a list of content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def _messages_of(value: Any) -> list[Message]:
    # Tolerate malformed bodies: recorded requests are inspected even if rejected.
    if not isinstance(value, list):
        return []
    return [m for m in value if isinstance(m, Mapping)]


def conversation_key(messages: Sequence[Message]) -> str:
    """Identity of a conversation: the text of its first user message ("" if none)."""
    for message in _messages_of(list(messages)):
        if message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def count_assistant_turns(messages: Sequence[Message]) -> int:
    return sum(1 for m in _messages_of(list(messages)) if m.get("role") == "assistant")


@dataclass
class Script:
    """Replies played in order within each conversation."""

    replies: list[Reply]

    def __post_init__(self) -> None:
        if not self.replies:
            raise ValueError("a Script needs at least one reply")
        self.replies = [r if isinstance(r, ToolCalls) else str(r) for r in self.replies]

    def reply_for(self, messages: Sequence[Message]) -> Reply:
        turn = count_assistant_turns(messages)
        return self.replies[min(turn, len(self.replies) - 1)]


ScriptLike = Script | Sequence[str] | ReplyFn


def _as_reply_fn(script: ScriptLike) -> ReplyFn:
    if isinstance(script, Script):
        return script.reply_for
    if isinstance(script, str):
        # A bare string is almost certainly a mistake for [string]; be lenient.
        return Script([script]).reply_for
    if callable(script):
        return script
    return Script(list(script)).reply_for


def _approx_tokens(text: str) -> int:
    # ~4 characters per token: plausible numbers without a tokenizer.
    return max(1, (len(text) + 3) // 4)


@dataclass
class _Record:
    body: dict[str, Any]
    reply: Reply | None = None
    received_at: float = field(default_factory=time.time)


class ScriptedChatModel:
    """ASGI app serving ``POST /v1/chat/completions`` and ``GET /v1/models``.

    The instance is itself an ASGI application (``serve_app(model)`` works);
    ``.app`` is the underlying Starlette app.
    """

    def __init__(
        self,
        script: ScriptLike,
        *,
        by_conversation: Mapping[str, ScriptLike] | None = None,
        model_id: str = DEFAULT_MODEL_ID,
        stream_chunk_chars: int = 4,
    ) -> None:
        self._default = _as_reply_fn(script)
        # Insertion order decides which substring wins when several match.
        self._by_conversation: list[tuple[str, ReplyFn]] = [
            (needle, _as_reply_fn(s)) for needle, s in (by_conversation or {}).items()
        ]
        self.model_id = model_id
        self._chunk_chars = max(1, stream_chunk_chars)
        self._records: list[_Record] = []
        # Requests are recorded on the server's thread and read from the test's.
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    # -- assertions helpers -------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received, in arrival order."""
        with self._lock:
            return [record.body for record in self._records]

    @property
    def replies(self) -> list[Reply | None]:
        """The reply sent for each entry of :attr:`requests` (None if rejected)."""
        with self._lock:
            return [record.reply for record in self._records]

    def requests_for(self, needle: str) -> list[dict[str, Any]]:
        """Request bodies whose conversation key contains ``needle``."""
        return [body for body in self.requests if needle in conversation_key(_messages_of(body.get("messages")))]

    def conversations(self) -> dict[str, list[dict[str, Any]]]:
        """Request bodies grouped by conversation key."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for body in self.requests:
            key = conversation_key(_messages_of(body.get("messages")))
            grouped.setdefault(key, []).append(body)
        return grouped

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def choose_reply(self, messages: list[dict[str, Any]]) -> Reply:
        key = conversation_key(messages)
        for needle, reply_fn in self._by_conversation:
            if needle in key:
                return reply_fn(messages)
        return self._default(messages)

    # -- endpoints ------------------------------------------------------------

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.model_id,
                        "object": "model",
                        "created": 0,
                        "owned_by": "openenv-gen-tests",
                    }
                ],
            }
        )

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _chat_completions(self, request: Request) -> Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        record = _Record(body=body)
        with self._lock:
            self._records.append(record)

        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "'messages' must be a non-empty list")
        try:
            reply = self.choose_reply(messages)
        except Exception as exc:  # a broken reply_fn should surface as a 500, not hang
            return _error(500, f"script failed: {type(exc).__name__}: {exc}")
        record.reply = reply

        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        model = body.get("model") or self.model_id
        prompt_tokens = sum(
            4 + _approx_tokens(message_text(m.get("content"))) for m in messages if isinstance(m, Mapping)
        )
        completion_tokens = _approx_tokens(str(reply))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

        if not body.get("stream"):
            if isinstance(reply, ToolCalls):
                return _error(400, "tool-call replies are scripted for streaming requests only")
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply, "refusal": None},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                    "system_fingerprint": None,
                }
            )

        stream_options = body.get("stream_options") or {}
        include_usage = bool(stream_options.get("include_usage"))
        return StreamingResponse(
            self._sse_events(completion_id, created, model, reply, usage, include_usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    async def _sse_events(
        self,
        completion_id: str,
        created: int,
        model: str,
        reply: Reply,
        usage: dict[str, int],
        include_usage: bool,
    ) -> AsyncIterator[str]:
        def chunk(choices: list[dict[str, Any]], chunk_usage: dict[str, int] | None = None) -> str:
            payload: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": choices,
            }
            # Like OpenAI: with include_usage every chunk carries "usage" (null
            # until the final, choice-less usage chunk).
            if include_usage:
                payload["usage"] = chunk_usage
            return f"data: {json.dumps(payload)}\n\n"

        def delta(content: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"index": 0, "delta": content, "logprobs": None, "finish_reason": finish_reason}

        if isinstance(reply, ToolCalls):
            # OpenAI's shape: the first delta of each call names it, later ones append
            # to its arguments.
            yield chunk([delta({"role": "assistant", "content": None})])
            for index, (name, arguments) in enumerate(reply.calls):
                call_id = f"call_{uuid.uuid4().hex[:12]}"
                yield chunk(
                    [
                        delta(
                            {
                                "tool_calls": [
                                    {
                                        "index": index,
                                        "id": call_id,
                                        "type": "function",
                                        "function": {"name": name, "arguments": ""},
                                    }
                                ]
                            }
                        )
                    ]
                )
                for start in range(0, len(arguments), self._chunk_chars):
                    piece = arguments[start : start + self._chunk_chars]
                    yield chunk([delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})])
            yield chunk([delta({}, "tool_calls")])
        else:
            yield chunk([delta({"role": "assistant", "content": ""})])
            for start in range(0, len(reply), self._chunk_chars):
                yield chunk([delta({"content": reply[start : start + self._chunk_chars]})])
            yield chunk([delta({}, "stop")])
        if include_usage:
            yield chunk([], usage)
        yield "data: [DONE]\n\n"


def _error(status: int, message: str) -> JSONResponse:
    # OpenAI's error envelope, so SDK clients raise a readable APIStatusError.
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        status_code=status,
    )

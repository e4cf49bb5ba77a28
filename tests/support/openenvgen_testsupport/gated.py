"""A token-gated OpenEnv server, as a private Space or OpenEnv's openenvd draft gates one: the
wordle fixture env (`fixture_envs.make_wordle_app`) behind an ASGI check that admits only
requests and WebSocket handshakes carrying `Authorization: Bearer TOKEN`, `/health` apart.
Without it an HTTP request gets 401 and a WebSocket handshake is refused (403) before the
env sees anything."""

from __future__ import annotations

from typing import Any

from openenvgen_testsupport.fixture_envs import make_wordle_app

OPEN_PATHS = ("/health",)


def make_gated_app(token: str) -> Any:
    """The gated wordle app; `token` is the bearer token it admits."""
    app = make_wordle_app()
    expected = f"Bearer {token}".encode()

    async def gated(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"] not in OPEN_PATHS:
            if dict(scope["headers"]).get(b"authorization") != expected:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
                    return
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"detail": "Not authenticated"}'})
                return
        await app(scope, receive, send)

    return gated

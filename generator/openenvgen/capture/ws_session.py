"""One WebSocket session on an env server's `/ws`, as the capture speaks to it.

The recording of an episode, the seed sessions and the validation rulings over the
WebSocket all send openenv's messages (`reset`, `step`, `state`, `mcp`, `close`) one at a
time and wait for each reply; this is that exchange, in one place.
"""

from __future__ import annotations

import contextlib
import json
from types import TracebackType
from typing import Any

OPEN_TIMEOUT_S = 30.0


def ws_url(base_url: str) -> str:
    """The `/ws` URL of the server at `base_url` (http → ws, https → wss)."""
    return "ws" + base_url.removeprefix("http") + "/ws"


class WSSession:
    """One `/ws` session, opened on first use and again after it broke off (`close`)."""

    def __init__(self, base_url: str, *, timeout: float) -> None:
        self.url = ws_url(base_url)
        self.timeout = timeout
        """Seconds a reply may take."""
        self._ws: Any = None
        self._open = contextlib.ExitStack()
        """Closes the connection: websockets wants `connect()` used as a context manager."""

    def send(self, message: dict[str, Any]) -> Any:
        """Send one message and return the server's reply (raises when the session breaks off)."""
        from websockets.sync.client import connect  # only the capture speaks WebSocket

        if self._ws is None:
            self._ws = self._open.enter_context(connect(self.url, max_size=None, open_timeout=OPEN_TIMEOUT_S))
        self._ws.send(json.dumps(message))
        return json.loads(self._ws.recv(timeout=self.timeout))

    def close(self) -> None:
        """End the session (a `close` message lets the server free its env); never raises."""
        if self._ws is None:
            return
        with contextlib.suppress(Exception):  # a session that broke off cannot say goodbye
            self._ws.send(json.dumps({"type": "close"}))
        with contextlib.suppress(Exception):
            self._open.close()
        self._ws = None

    def __enter__(self) -> WSSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

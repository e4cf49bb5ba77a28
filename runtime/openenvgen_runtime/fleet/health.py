"""Telling a failed server from a failed episode.

A reset that fails because the server is unreachable (connection refused or reset, a
broken socket, a 5xx on the WebSocket handshake, no answer in time) means the server is
down, not that the episode is bad: the pool marks the server down and moves the episode.
Any other reset error (a bad reset argument, a 4xx) is the episode's own and is raised.
(Down servers are then probed back to health by `watch`, on `/health`.)
"""

from __future__ import annotations

import asyncio
import errno

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def server_failure(error: BaseException) -> str | None:
    """Why `error` (raised by a reset) shows the server itself failing, or None when it is
    the episode's own error."""
    chain = _chain(error)
    for link in chain:
        if isinstance(link, InvalidStatus):
            status = link.response.status_code
            return f"HTTP {status} on the WebSocket handshake" if status >= 500 else None
    if any(isinstance(link, OSError) and link.errno == errno.ECONNREFUSED for link in chain):
        return "connection refused"
    if any(isinstance(link, ConnectionClosed) for link in chain):
        return "connection closed"
    for link in chain:
        if isinstance(link, (ConnectionError, OSError, httpx.TransportError)):
            return f"{type(link).__name__}: {link}".rstrip(": ")
        if isinstance(link, (asyncio.TimeoutError, TimeoutError)):
            return "no answer in time"
    return None

"""Telling a failed server from a failed episode, and probing servers back to health.

A reset that fails because the server is unreachable (connection refused or reset, a
broken socket, a 5xx on the WebSocket handshake, no answer in time) means the server is
down, not that the episode is bad: the pool marks the server down and moves the episode.
Any other reset error (a bad reset argument, a 4xx) is the episode's own and is raised.
Down servers are probed on `/health` in the background until they answer 200 again.
"""

from __future__ import annotations

import asyncio
import errno

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus

PROBE_TIMEOUT = 5.0
"""Seconds a `/health` probe may take; a loaded server answers well within it."""


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


async def probe(http: httpx.AsyncClient, url: str) -> str | None:
    """None when `url` answers `/health` with 200; otherwise why not, in a few words."""
    try:
        response = await http.get(f"{url}/health", timeout=PROBE_TIMEOUT)
    except httpx.ConnectError:
        return "connection refused"
    except httpx.TimeoutException:
        return f"/health did not answer within {PROBE_TIMEOUT:g}s"
    except httpx.HTTPError as e:
        return f"{type(e).__name__}: {e}".rstrip(": ")
    if response.status_code != 200:
        return f"/health answered HTTP {response.status_code}"
    return None

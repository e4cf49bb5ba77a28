"""The host end of a launched server that has no port of its own: a loopback URL relayed to where it is reached.

OpenEnv's client takes a URL, and these servers have none the run could use as it is: a UV
server serves on a Unix socket in a private folder (`uv_provider`), a sandboxed container's
is reached through a Unix socket in a folder bind-mounted into it (see `isolated`), a Swarm
replica without network through its launch's router (`swarm_isolation`), with the launch's
secret added. `Relay` listens on 127.0.0.1 (a free port unless given) and serves each
connection with `access.relay.serve`: only requests whose path starts with the relay's
token (its `url` is `http://127.0.0.1:PORT/TOKEN`) reach a fresh upstream connection that
its opener makes; it runs on an event loop in a thread of its own (so the eval's loop
never carries the bytes and a blocking launch can start it); `close` stops it and its
connections, and joins the thread. An upstream that cannot be opened gets the client a
`502` (a health probe retries). A relay made for a run (`owner`, its owner label value)
that is still open when the run stops is closed by `close_owned`, as the reaper removes
the run's containers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from openenvgen_runtime.access.relay import Opener, Route, serve
from openenvgen_runtime.access.tokens import new_token

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 30.0
"""Seconds `close` waits for the relay's thread to end."""

TIMEOUT = 60.0
"""Seconds from a request's end to its response's end (a WebSocket session has no deadline)."""


_open: dict[str, set[Relay]] = {}
"""The open relays of each run, by owner."""
_open_lock = threading.Lock()


def close_owned(owner: str) -> list[str]:
    """Close the relays of the run `owner` still open; the names of those it closed."""
    with _open_lock:
        relays = _open.pop(owner, set())
    for relay in relays:
        relay.close()
    return sorted(relay.name for relay in relays)


class Relay:
    """127.0.0.1:`port`/TOKEN → a new connection from `opener` per connection, until `close`;
    `headers` (secret values) are added to every request."""

    def __init__(
        self,
        opener: Opener,
        name: str,
        owner: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        added = dict(headers or {})
        self.route = Route(open=opener, name=name, headers=lambda: added)
        self.name = f"loopback-relay {name}"
        self.owner = owner
        self.token = new_token()
        self._bind = (host, port)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._server is None:
            raise OSError(f"the relay could not listen on {host}:{port}")
        self.port: int = self._server.sockets[0].getsockname()[1]
        if owner is not None:
            with _open_lock:
                _open.setdefault(owner, set()).add(self)

    @classmethod
    def to_socket(cls, path: str, owner: str | None = None, **options: Any) -> Relay:
        """A relay to the Unix socket at `path`."""
        return cls(lambda: asyncio.open_unix_connection(path), path, owner, **options)

    @property
    def running(self) -> bool:
        """Whether its thread still runs (until `close` ends it)."""
        return self._thread.is_alive()

    @property
    def url(self) -> str:
        """The run's URL of the server: the relay's port and token."""
        host = "127.0.0.1" if self._bind[0] in {"0.0.0.0", "::"} else self._bind[0]
        return f"http://{host}:{self.port}/{self.token}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()

        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            # Cancelled by `close`: the connection's end, not an error (asyncio's stream
            # callback would print a traceback for a cancelled handler).
            with contextlib.suppress(asyncio.CancelledError):
                await serve(reader, writer, self.route, self.token, TIMEOUT)

        try:
            self._server = await asyncio.start_server(accepted, *self._bind)
        finally:
            self._ready.set()
        await self._stopped.wait()
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        """Stop listening, drop every relayed connection, and end the thread."""
        if self.owner is not None:
            with _open_lock:
                _open.get(self.owner, set()).discard(self)
        if self._thread.is_alive() and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout=CLOSE_TIMEOUT)
        if self.running:
            logger.warning("%s did not end within %gs of close", self.name, CLOSE_TIMEOUT)

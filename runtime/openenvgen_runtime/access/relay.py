"""The loopback relays a run's clients reach its servers through, each admitting only that run.

OpenEnv's `EnvClient` takes a base URL and nothing else: no request headers, no TLS
context, no Unix socket. So wherever a server cannot be reached plainly (a UV server or a
sandboxed container serving on a Unix socket, a Swarm replica behind its gate, or behind
its launch's router, a `base_url` fleet behind an authenticating ingress or a private CA)
the run's clients get the URL of a relay on 127.0.0.1 instead, and the relay reaches the
server (a `Route`: how to open a connection to it, the headers to add, its `Host` and path
prefix).

Any local user can connect to a loopback port, so each relay makes a credential of its own
(`tokens.new_token`, 192 random bits) and its URL is `http://127.0.0.1:PORT/TOKEN`: OpenEnv's
clients, the runtime's HTTP requests and verifiers' workers keep a base URL's path, so
they send it on every request unchanged. `serve` reads each request's head with h11 (within
`HEAD_TIMEOUT`) and refuses (`403`, then closes) one whose path does not start with the
token, or whose rest has a `.` or `..` segment (raw or percent-encoded) or a backslash,
before it opens anything upstream: no reset, no step, and no header of the run is ever
added to it. An admitted request goes on with the token off its path (under the route's
prefix), the route's headers replacing any of the client's of the same names, and
`Host` set. The response comes back as it is, within the relay's `timeout` from the
request's end to the response's end; keep-alive requests are relayed one after another,
each checked; a WebSocket upgrade answered `101` turns both connections into a byte splice
for the rest of the session. A server that cannot be reached gets the client a `502`
(its reason in the body, never a header).

`SessionRelay` serves on the pool's event loop, to a server over TCP or TLS (verified with
the pool's `ssl_context`); `SessionRelays` makes one per server that needs one, on first
use, and closes them with the pool. The launch modes' own relays (`launching.sandbox.relay`)
serve on a thread of their own, to a Unix socket or through a router, with `serve` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes, urlsplit

import h11

from openenvgen_runtime.access.origins import ServerAccess, origin
from openenvgen_runtime.access.tokens import new_token

logger = logging.getLogger(__name__)

CHUNK = 65536
HEAD_TIMEOUT = 10.0
"""Seconds a client has to send a whole request head (the first, or the next on a kept-alive connection)."""
IDLE_TIMEOUT = 60.0
"""Seconds a kept-alive connection may wait for its next request."""

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Opener = Callable[[], Awaitable[Streams]]
"""Opens one connection to the server (ConnectionError/OSError/TimeoutError when it cannot)."""

_FIRST_SEGMENT = re.compile(rb"/([^/?#]*)(.*)", re.DOTALL)


def admitted_target(target: bytes, token: str) -> bytes | None:
    """The target to ask the server for, once `token` is off the front of a request's
    `target`; None for a target without the token, or whose path leaves the root."""
    found = _FIRST_SEGMENT.fullmatch(target)
    if found is None or not hmac.compare_digest(found[1], token.encode()):
        return None
    rest = found[2]
    if not rest.startswith(b"/"):
        rest = b"/" + rest
    path = unquote_to_bytes(rest.split(b"?", 1)[0])
    if b"\\" in path or any(segment in (b".", b"..") for segment in path.split(b"/")):
        return None
    return rest


@dataclass
class Route:
    """How a relay reaches its server."""

    open: Opener
    name: str
    """The server's URL or socket, for messages."""
    headers: Callable[[], Mapping[str, str]] = dict
    """Added to every request (secret values), replacing the client's of the same names."""
    host: bytes | None = None
    """The `Host` header sent; None keeps the client's."""
    prefix: bytes = b""
    """The server's path prefix, put before every path."""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    """The connections being relayed (cancelled by a close)."""


async def serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: Route, token: str, timeout: float
) -> None:
    """Relay one accepted connection to `route`'s server (see the module's docstring)."""
    task = asyncio.current_task()
    assert task is not None
    route.tasks.add(task)
    try:
        await _relay(reader, writer, route, token, timeout)
    except (TimeoutError, OSError, h11.ProtocolError) as e:
        # Never the message of a protocol error: it may quote a header.
        logger.debug("relay to %s ended: %s", route.name, type(e).__name__)
    finally:
        writer.close()
        route.tasks.discard(task)


async def _next_event(connection: h11.Connection, reader: asyncio.StreamReader) -> object:
    """The connection's next h11 event, reading from `reader` as it needs more."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await reader.read(CHUNK))


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def _request_head(client: h11.Connection, reader: asyncio.StreamReader, token: str, idle: float) -> object:
    """The next request's head (`idle` seconds for its first byte, `HEAD_TIMEOUT` for the
    rest); None when the client closed, `False` when it was refused for its target."""
    async with asyncio.timeout(idle):
        while client.their_state is h11.IDLE and not client.trailing_data[0]:
            data = await reader.read(CHUNK)
            if not data:
                return None
            client.receive_data(data)
    async with asyncio.timeout(HEAD_TIMEOUT):
        request = await _next_event(client, reader)
    if not isinstance(request, h11.Request):
        return None
    target = admitted_target(request.target, token)
    if target is None:
        return False
    return h11.Request(method=request.method, target=target, headers=request.headers)


async def _relay(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: Route, token: str, timeout: float
) -> None:
    client = h11.Connection(h11.SERVER)
    request = await _request_head(client, reader, token, HEAD_TIMEOUT)
    if request is False:
        await _answer(client, writer, 403, "this URL admits only the run that made it")
        return
    if not isinstance(request, h11.Request):
        return
    try:
        up_reader, up_writer = await asyncio.wait_for(route.open(), timeout)
    except (TimeoutError, OSError) as e:
        reason = "no answer in time" if isinstance(e, TimeoutError) else str(e) or type(e).__name__
        await _answer(client, writer, 502, f"cannot reach {route.name}: {reason}")
        return
    upstream = h11.Connection(h11.CLIENT)
    try:
        while True:
            async with asyncio.timeout(timeout):
                await _send_request(route, request, client, reader, upstream, up_writer)
                upgraded = await _send_response(upstream, up_reader, client, writer)
            if upgraded:
                # A WebSocket session from here on: bytes both ways, as they come.
                writer.write(upstream.trailing_data[0])
                up_writer.write(client.trailing_data[0])
                await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
                return
            if client.our_state is not h11.DONE or upstream.our_state is not h11.DONE:
                return
            client.start_next_cycle()
            upstream.start_next_cycle()
            request = await _request_head(client, reader, token, IDLE_TIMEOUT)
            if request is False:
                await _answer(client, writer, 403, "this URL admits only the run that made it")
            if not isinstance(request, h11.Request):
                return
    finally:
        up_writer.close()


async def _send_request(
    route: Route,
    request: h11.Request,
    client: h11.Connection,
    reader: asyncio.StreamReader,
    upstream: h11.Connection,
    up_writer: asyncio.StreamWriter,
) -> None:
    ours = [(name.encode(), value.encode()) for name, value in route.headers().items()]
    replaced = {name.lower() for name, _ in ours}
    headers = []
    if route.host is not None:
        replaced.add(b"host")
        headers.append((b"host", route.host))
    headers += [(name, value) for name, value in request.headers if name.lower() not in replaced]
    sent = h11.Request(method=request.method, target=route.prefix + request.target, headers=headers + ours)
    up_writer.write(upstream.send(sent) or b"")
    while True:
        event = await _next_event(client, reader)
        if isinstance(event, h11.Data):
            up_writer.write(upstream.send(h11.Data(data=event.data)) or b"")
        elif isinstance(event, h11.EndOfMessage):
            up_writer.write(upstream.send(h11.EndOfMessage()) or b"")
            break
        else:
            raise h11.RemoteProtocolError("the request ended early")
    await up_writer.drain()


async def _send_response(
    upstream: h11.Connection, up_reader: asyncio.StreamReader, client: h11.Connection, writer: asyncio.StreamWriter
) -> bool:
    """Relay one response; True when it switched the connection to a WebSocket."""
    while True:
        event = await _next_event(upstream, up_reader)
        if isinstance(event, h11.InformationalResponse):
            writer.write(client.send(event) or b"")
            if event.status_code == 101:
                await writer.drain()
                return True
        elif isinstance(event, h11.Response):
            writer.write(client.send(event) or b"")
            break
        else:
            raise h11.RemoteProtocolError("the server closed before answering")
    while True:
        event = await _next_event(upstream, up_reader)
        if isinstance(event, h11.Data):
            writer.write(client.send(event) or b"")
            await writer.drain()
        elif isinstance(event, h11.EndOfMessage):
            writer.write(client.send(event) or b"")
            await writer.drain()
            return False
        else:
            raise h11.RemoteProtocolError("the server closed mid-response")


async def _answer(client: h11.Connection, writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """The relay's own reply (refused, or no server), then the connection's end."""
    body = reason.encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    headers.append((b"connection", b"close"))
    writer.write(client.send(h11.Response(status_code=status, headers=headers)) or b"")
    writer.write(client.send(h11.Data(data=body)) or b"")
    writer.write(client.send(h11.EndOfMessage()) or b"")
    with contextlib.suppress(OSError):
        await writer.drain()


def url_route(upstream: str, access: ServerAccess) -> Route:
    """The route to the server at `upstream` (its base URL) over TCP, or TLS verified with
    `access.ssl_context`, carrying `access`'s headers for it."""
    scheme, host, port = origin(upstream)
    tls = access.ssl_context if scheme == "https" else None

    def connect() -> Awaitable[Streams]:
        return asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None)

    default = 443 if tls else 80
    return Route(
        open=connect,
        name=upstream,
        headers=lambda: access.headers_for(upstream),
        host=(host if port == default else f"{host}:{port}").encode(),
        prefix=urlsplit(upstream).path.rstrip("/").encode(),
    )


class SessionRelay:
    """A loopback listener, on the running event loop, relaying to one server (`upstream`, its base URL)."""

    def __init__(self, upstream: str, access: ServerAccess, *, timeout: float) -> None:
        self.upstream = upstream
        self.route = url_route(upstream, access)
        self.timeout = timeout
        self.token = new_token()
        self._server: asyncio.Server | None = None
        self.url = ""
        """`http://127.0.0.1:PORT/TOKEN`, once started."""

    async def start(self) -> str:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
            return serve(reader, writer, self.route, self.token, self.timeout)

        self._server = await asyncio.start_server(accepted, host="127.0.0.1", port=0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/{self.token}"
        return self.url

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self.route.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class SessionRelays:
    """A pool's relays, one per server that needs one, made on first use."""

    def __init__(self, access: ServerAccess, *, timeout: float) -> None:
        self.access = access
        self.timeout = timeout
        self._relays: dict[str, SessionRelay] = {}
        self._lock = asyncio.Lock()

    async def session_url(self, url: str) -> str:
        """The base URL OpenEnv's client should open a session on to reach `url`."""
        if not self.access.needs_relay(url):
            return url
        async with self._lock:
            relay = self._relays.get(url)
            if relay is None:
                relay = SessionRelay(url, self.access, timeout=self.timeout)
                await relay.start()
                self._relays[url] = relay
        return relay.url

    async def close(self) -> None:
        relays, self._relays = list(self._relays.values()), {}
        await asyncio.gather(*(relay.close() for relay in relays))

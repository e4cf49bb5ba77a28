"""The loopback relay OpenEnv's WebSocket sessions take to a server that needs headers or TLS.

OpenEnv's `EnvClient` takes a base URL and nothing else: no request headers, no TLS
context. For a server that needs either (a Swarm replica behind its access gate, a
`base_url` fleet behind an authenticating ingress, an `https://` server with a private CA)
the pool hands the client a `http://127.0.0.1:PORT` URL of a relay instead. The relay,
bound to loopback only, reads each request with h11, adds the server's headers (from
`ServerAccess`; a same-named header of the client's is replaced), sets `Host` (and the
path prefix of the server's URL), and sends it on over TCP, or TLS verified with the pool's
`ssl_context` (SNI and the certificate's name are the server's host). Responses come back
as they are. Keep-alive requests are relayed one after another on the same connections;
a WebSocket upgrade answered `101` turns both connections into a byte splice for the
rest of the session. A server that cannot be reached (refused, TLS not verified, no
answer in time) gets the client a `502` (its reason in the body, the headers never).

One relay per server that needs one (`SessionRelays`), started on first use and closed
with the pool; servers that need neither headers nor TLS are reached directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

import h11

from openenvgen_runtime.access.origins import ServerAccess, origin

logger = logging.getLogger(__name__)

CHUNK = 65536


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


class SessionRelay:
    """A loopback listener relaying to one server (`upstream`, its base URL)."""

    def __init__(self, upstream: str, access: ServerAccess, *, timeout: float) -> None:
        self.upstream = upstream
        self.access = access
        self.timeout = timeout
        scheme, self.host, self.port = origin(upstream)
        self.tls = access.ssl_context if scheme == "https" else None
        default = 443 if self.tls else 80
        self.host_header = (self.host if self.port == default else f"{self.host}:{self.port}").encode()
        self.prefix = urlsplit(upstream).path.rstrip("/").encode()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.url = ""
        """`http://127.0.0.1:PORT`, once started."""

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, host="127.0.0.1", port=0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self.url

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._relay(reader, writer)
        except (TimeoutError, OSError, h11.ProtocolError) as e:
            # Never the message of a protocol error: it may quote a header.
            logger.debug("session relay to %s ended: %s", self.upstream, type(e).__name__)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = h11.Connection(h11.SERVER)
        request = await _next_event(client, reader)
        if not isinstance(request, h11.Request):
            return
        try:
            name = self.host if self.tls else None
            connecting = asyncio.open_connection(self.host, self.port, ssl=self.tls, server_hostname=name)
            up_reader, up_writer = await asyncio.wait_for(connecting, self.timeout)
        except (TimeoutError, OSError) as e:
            reason = "no answer in time" if isinstance(e, TimeoutError) else str(e) or type(e).__name__
            await self._refuse(client, writer, f"cannot reach {self.upstream}: {reason}")
            return
        upstream = h11.Connection(h11.CLIENT)
        try:
            while True:
                await self._send_request(request, client, reader, upstream, up_writer)
                if await self._send_response(upstream, up_reader, client, writer):
                    # A WebSocket session from here on: bytes both ways, as they come.
                    writer.write(upstream.trailing_data[0])
                    up_writer.write(client.trailing_data[0])
                    await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
                    return
                if client.our_state is not h11.DONE or upstream.our_state is not h11.DONE:
                    return
                client.start_next_cycle()
                upstream.start_next_cycle()
                request = await _next_event(client, reader)
                if not isinstance(request, h11.Request):
                    return
        finally:
            up_writer.close()

    async def _send_request(
        self,
        request: h11.Request,
        client: h11.Connection,
        reader: asyncio.StreamReader,
        upstream: h11.Connection,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        ours = [(name.encode(), value.encode()) for name, value in self.access.headers_for(self.upstream).items()]
        replaced = {b"host", *(name.lower() for name, _ in ours)}
        headers = [(b"host", self.host_header)]
        headers += [(name, value) for name, value in request.headers if name.lower() not in replaced]
        sent = h11.Request(method=request.method, target=self.prefix + request.target, headers=headers + ours)
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
        self,
        upstream: h11.Connection,
        up_reader: asyncio.StreamReader,
        client: h11.Connection,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Relay one response; True when it switched the connection to a WebSocket."""
        while True:
            event = await asyncio.wait_for(_next_event(upstream, up_reader), self.timeout)
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

    async def _refuse(self, client: h11.Connection, writer: asyncio.StreamWriter, reason: str) -> None:
        body = reason.encode()
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        writer.write(client.send(h11.Response(status_code=502, headers=headers)) or b"")
        writer.write(client.send(h11.Data(data=body)) or b"")
        writer.write(client.send(h11.EndOfMessage()) or b"")
        with contextlib.suppress(OSError):
            await writer.drain()


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

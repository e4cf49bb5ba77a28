"""The router: the one way into Swarm replicas that have no network beyond their own.

A sandboxed Swarm launch without network puts its replicas on an internal overlay network
of their own (no route off it: no node address, no Docker bridge, no outside address, no
name outside it resolves) and publishes no port of theirs. This program, run by a service
of the launch on that network and on one other network that publishes its port, is how the
run reaches them: an HTTP `CONNECT` proxy that opens tunnels to the replicas' gates and to
nothing else.

For each connection it reads one request head: `CONNECT ADDRESS:PORT`, where PORT is the
gates' port and ADDRESS is one of the addresses the replicas' name (`tasks.SERVICE`, from
Swarm's DNS, looked up again for each tunnel, so a replaced replica is found and a dropped
one is not) resolves to now. Then `200 Connection established` and a byte splice both ways
until either side ends; the gate behind it still requires the launch's secret, so the
router holds none. Any other method gets `405`, any other address or port `403`, a gate
that does not answer `502`, and a malformed or oversized head `400`; each is closed.

Like the gate, it is shipped as a Swarm config and run by the image's own `python3`
(3.8 or later, standard library only); it imports nothing of the runtime and logs nothing
about requests.

    python3 -I router.py --replicas tasks.SERVICE --port GATE_PORT --listen PORT
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import signal
import socket
import sys

HEAD_LIMIT = 8 * 1024
"""Largest `CONNECT` head read (bytes); a larger one is refused."""
HEAD_TIMEOUT = 30.0
"""Seconds a client may take to send its head."""
CONNECT_TIMEOUT = 10.0
"""Seconds a gate may take to accept a tunnel."""
CHUNK = 65536


def _reply(status: str, reason: str = "") -> bytes:
    body = b'{"detail":"' + reason.encode("ascii") + b'"}' if reason else b""
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode("ascii") + body


def target(head: bytes) -> tuple[str, int] | str:
    """(address, port) of a `CONNECT ADDRESS:PORT HTTP/1.x` head, or the status refusing it."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return "400 Bad Request"
    method, authority, _ = parts
    if method != "CONNECT":
        return "405 Method Not Allowed"
    host, sep, port = authority.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return str(ipaddress.ip_address(host)), int(port)
    except ValueError:
        return "400 Bad Request" if not sep or not port.isdigit() else "403 Forbidden"


class Router:
    def __init__(self, replicas: str, port: int) -> None:
        self.replicas = replicas
        self.port = port

    async def addresses(self) -> set[str]:
        """The replicas' addresses now (none while the name does not resolve)."""
        loop = asyncio.get_running_loop()
        try:
            found = await loop.getaddrinfo(self.replicas, self.port, type=socket.SOCK_STREAM)
        except OSError:
            return set()
        return {str(ipaddress.ip_address(info[4][0])) for info in found}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            except (asyncio.LimitOverrunError, ValueError):
                writer.write(_reply("400 Bad Request", "request head too large"))
                await writer.drain()
                return
            except (asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):  # noqa: UP041
                return
            found = target(head)
            if isinstance(found, str):
                writer.write(_reply(found))
            elif found[1] != self.port or found[0] not in await self.addresses():
                writer.write(_reply("403 Forbidden", "not a replica of this launch"))
            else:
                await self._tunnel(found, reader, writer)
                return
            await writer.drain()
        except (OSError, asyncio.TimeoutError):  # noqa: UP041 - before 3.11 not the builtin
            pass
        finally:
            writer.close()

    async def _tunnel(
        self, address: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*address), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError):  # noqa: UP041
            writer.write(_reply("502 Bad Gateway", "the replica does not answer"))
            await writer.drain()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            up_writer.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (or close, where it cannot be)."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        else:
            writer.close()
    except OSError:
        writer.close()


async def serve(router: Router, listen: int, host: str = "0.0.0.0") -> None:
    server = await asyncio.start_server(router.handle, host=host, port=listen, limit=HEAD_LIMIT)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="router")
    parser.add_argument("--replicas", required=True, help="the name the replicas' addresses resolve from")
    parser.add_argument("--port", type=int, required=True, help="the replicas' gate port")
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--host", default="0.0.0.0")
    args = parser.parse_args(argv)
    asyncio.run(serve(Router(args.replicas, args.port), args.listen, args.host))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

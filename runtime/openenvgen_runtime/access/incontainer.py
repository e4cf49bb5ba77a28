"""The program a run's Swarm containers start first: the access gate and the router.

Shipped into containers (a Swarm config; beside `socket_shim`, a read-only bind mount) and
run by the image's own `python3` (3.8 or later, 64-bit Linux): standard library only. It logs nothing about requests.
`gate` stands in front of a Swarm replica's server (the image's command, which it starts):
only a connection whose first request carries the launch's secret reaches the server, and
`--wall` leaves the container no way to another replica; `router` tunnels `CONNECT`s to the
replicas' gates and nowhere else; `socket_shim` (every `docker run` container's) uses its
relaying and its server's start. The gate runs the server as `--user` (with `no_new_privs`;
a server left as root loses CAP_NET_ADMIN), passes SIGTERM and SIGINT on, reaps orphans and
exits with its code. Docs: Security.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hmac
import ipaddress
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

CHUNK = 256 * 1024
HEAD_LIMIT, HEAD_TIMEOUT = 16 * 1024, 10.0
"""Bytes and seconds a request head may take (and seconds an upstream may take to accept)."""
CONNECTIONS, PENDING, PEER_PENDING = 512, 256, 64
"""Connections open at once; pending ones (over twice what asyncio accepts at a time: none
is dropped before a head sent at once is read); one peer address's pending ones."""
WALL_EVERY = 1.0  # seconds between two looks at the routers' addresses (`Wall`)

if TYPE_CHECKING:  # spelt for the checker only: images may run a Python older than tuple[...]
    Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
    Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Refused(Exception):
    """Answer the connection with `status` (`detail` its JSON body, `extra` more header lines) and close it."""

    def __init__(self, status: str, detail: str = "", extra: str = "") -> None:
        super().__init__(status)
        body = b'{"detail":"' + detail.encode("ascii") + b'"}' if detail else b""
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.reply = (head + f"{extra}Connection: close\r\n\r\n").encode("ascii") + body


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy `reader` into `writer` until it ends, then pass the end on (or close, where it cannot be)."""
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
    except (ConnectionError, OSError):
        writer.close()


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Awaitable[Streams]) -> None:
    """Relay a connection to `upstream` (one being opened) both ways until both ends are done;
    when it cannot be opened the connection is closed (the caller's health probe retries)."""
    try:
        up_reader, up_writer = await upstream
    except (ConnectionError, OSError, asyncio.TimeoutError):  # noqa: UP041 - before 3.11 not the builtin
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    finally:
        up_writer.close()
        writer.close()


async def read_head(reader: asyncio.StreamReader) -> bytes:
    """A request head within HEAD_TIMEOUT and HEAD_LIMIT: Refused when too large,
    ConnectionError when the peer ends or is too slow (nothing to answer then)."""
    try:
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
    except (asyncio.LimitOverrunError, ValueError):
        raise Refused("400 Bad Request", "request head too large") from None
    except (asyncio.IncompleteReadError, asyncio.TimeoutError) as e:  # noqa: UP041
        raise ConnectionError(type(e).__name__) from None


async def forward(upstream: tuple[str, int], head: bytes, refusal: Refused) -> Streams:
    """A connection to `upstream` with `head` sent on it; `refusal` when it does not answer."""
    try:
        up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*upstream), HEAD_TIMEOUT)
    except (OSError, asyncio.TimeoutError):  # noqa: UP041
        raise refusal from None
    up_writer.write(head)
    return up_reader, up_writer


class Bounds:
    """A listener's connections: at most CONNECTIONS open, of which PENDING (PEER_PENDING of one
    peer) not `settle`d yet; the oldest pending one is dropped for a new one."""

    def __init__(self) -> None:
        self.open = 0
        self.pending: dict[asyncio.StreamWriter, str] = {}
        """Pending connections, oldest first, and each one's peer address."""

    def serving(self, handle: Handler) -> Handler:
        """`handle` for each connection admitted, a Refused answered, the connection closed at the end."""

        async def bounded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer = str((writer.get_extra_info("peername") or ("",))[0])
            mine = [w for w, p in self.pending.items() if p == peer]
            full = len(self.pending) >= PENDING or self.open >= CONNECTIONS
            if len(mine) >= PEER_PENDING or (self.pending and full):
                oldest = mine[0] if len(mine) >= PEER_PENDING else next(iter(self.pending))
                del self.pending[oldest]
                oldest.transport.abort()  # its read fails, and its handler counts it out
            elif full:
                writer.transport.abort()
                return
            self.open += 1
            self.pending[writer] = peer
            try:
                await handle(reader, writer)
            except Refused as e:
                with contextlib.suppress(ConnectionError, OSError):
                    writer.write(e.reply)
                    await writer.drain()
            except (ConnectionError, OSError, asyncio.TimeoutError):  # noqa: UP041
                pass
            finally:
                self.open -= 1
                self.pending.pop(writer, None)
                writer.close()

        return bounded


class Gate:
    def __init__(self, secret: bytes, upstream: int) -> None:
        self._expected = b"Bearer " + secret
        self.upstream = ("127.0.0.1", upstream)
        self.bounds = Bounds()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_head(reader)
        lines = head.split(b"\r\n")
        authorizations = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if sep and name.strip().lower() == b"authorization":
                authorizations.append(value.strip())
        if len(authorizations) == 1 and hmac.compare_digest(authorizations[0], self._expected):
            self.bounds.pending.pop(writer, None)
            refusal = Refused("502 Bad Gateway", "the env server does not answer")
            await splice(reader, writer, forward(self.upstream, head, refusal))
            return
        method, _, target = lines[0].decode("latin-1").partition(" ")
        if method != "GET" or target.split(" ", 1)[0].split("?", 1)[0] != "/health":
            detail = "this env server admits only the run that launched it"
            raise Refused("401 Unauthorized", detail, 'WWW-Authenticate: Bearer realm="openenv"\r\n')
        request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        up_reader, up_writer = await forward(self.upstream, request, Refused("503 Service Unavailable", "not up yet"))
        try:  # the server's own answer, streamed within the time a head may take
            await asyncio.wait_for(pipe(up_reader, writer), HEAD_TIMEOUT)
        finally:
            up_writer.close()


class Router:
    def __init__(self, replicas: str, port: int) -> None:
        self.replicas = replicas
        self.port = port
        self.bounds = Bounds()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parts = (await read_head(reader)).split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise Refused("400 Bad Request")
        if parts[0] != "CONNECT":
            raise Refused("405 Method Not Allowed")
        host, _, port = parts[1].rpartition(":")
        try:
            address = (str(ipaddress.ip_address(host.strip("[]"))), int(port))
        except ValueError:
            raise Refused("403 Forbidden" if host and port.isdigit() else "400 Bad Request") from None
        if address[1] != self.port or address[0] not in await resolve(self.replicas):
            raise Refused("403 Forbidden", "not a replica of this launch")
        up_reader, up_writer = await forward(address, b"", Refused("502 Bad Gateway", "the replica does not answer"))
        try:  # the tunnel's first request is pending until its head is whole
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            up_writer.write(await read_head(reader))
        except BaseException:
            up_writer.close()
            raise
        self.bounds.pending.pop(writer, None)
        await splice(reader, writer, asyncio.sleep(0, (up_reader, up_writer)))


def addresses(name: str, family: int = 0) -> set[str]:
    """The addresses `name` resolves to now (none while it does not)."""
    try:
        return {str(ipaddress.ip_address(i[4][0])) for i in socket.getaddrinfo(name, 0, family, socket.SOCK_STREAM)}
    except OSError:
        return set()


async def resolve(name: str, family: int = 0) -> set[str]:
    return await asyncio.get_running_loop().run_in_executor(None, addresses, name, family)


class Wall:
    """On each of the container's IPv4 networks, `unreachable` routes for all but the routers'
    addresses (more specific than the network's own route, so they win): no way to another
    replica, nor back from one. CAP_NET_ADMIN: the gate's alone; the server cannot undo them."""

    def __init__(self, routers: str) -> None:
        self.routers = routers
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.networks: list[ipaddress.IPv4Network] = []
        for _, name in socket.if_nameindex():
            request = struct.pack("16s16x", name.encode())
            with contextlib.suppress(OSError):  # no IPv4 address: nothing to wall
                address = fcntl.ioctl(self.socket, 0x8915, request)[20:24]  # SIOCGIFADDR
                mask = fcntl.ioctl(self.socket, 0x891B, request)[20:24]  # SIOCGIFNETMASK
                network = ipaddress.IPv4Network(f"{socket.inet_ntoa(address)}/{socket.inet_ntoa(mask)}", strict=False)
                if not network.is_loopback and network.prefixlen < 32:
                    self.networks.append(network)
        self.routes: set[ipaddress.IPv4Network] = set()

    def build(self, routers: set[str]) -> None:
        """Route all but `routers` nowhere: new routes first, then the ones no longer wanted."""
        wanted: set[ipaddress.IPv4Network] = set()
        for network in self.networks:
            parts = list(network.subnets(1))  # never the network itself: its own route has that
            for router in [r for r in map(ipaddress.IPv4Network, routers) if r.subnet_of(network)]:
                part = next(p for p in parts if router.subnet_of(p))
                parts.remove(part)
                parts += part.address_exclude(router)
            wanted.update(parts)
        for network in sorted(wanted - self.routes):
            self._route(0x890B, network)  # SIOCADDRT
        for network in sorted(self.routes - wanted):
            self._route(0x890C, network)  # SIOCDELRT
        self.routes = wanted

    def _route(self, request: int, network: ipaddress.IPv4Network) -> None:
        entry = bytearray(120)  # struct rtentry (LP64): rt_dst at 8, rt_genmask at 40, rt_flags at 56
        for offset, address in ((8, network.network_address), (40, network.netmask)):
            entry[offset : offset + 8] = struct.pack("=H2x4s", socket.AF_INET, address.packed)
        struct.pack_into("=H", entry, 56, 0x0001 | 0x0200)  # RTF_UP | RTF_REJECT
        fcntl.ioctl(self.socket, request, bytes(entry))

    async def follow(self) -> None:
        """Keep the routes to the routers' addresses as they change (a replaced router's new one)."""
        while True:
            await asyncio.sleep(WALL_EVERY)
            with contextlib.suppress(OSError):
                self.build(await resolve(self.routers, socket.AF_INET))


def start_server(
    command: list[str], environment: dict[str, str] | None, ids: tuple[int, int, list[int]] | None
) -> subprocess.Popen[bytes]:
    """The image's command, as the uid, gid and groups `ids` (with `no_new_privs`) when given;
    before any thread of ours exists. A server that stays root loses CAP_NET_ADMIN for good
    (its bounding set), so that it cannot undo a `Wall` or the socket shim's routing rule."""

    def become() -> None:  # in the child, before the image's command runs
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        if ids is not None:
            os.setgroups(ids[2])
            os.setgid(ids[1])
            os.setuid(ids[0])
            if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        # PR_CAPBSET_READ, then PR_CAPBSET_DROP of CAP_NET_ADMIN (12): a root server keeps it otherwise.
        if os.getuid() == 0 and prctl(23, 12, 0, 0, 0) == 1 and prctl(24, 12, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_NET_ADMIN)")

    try:
        return subprocess.Popen(command, env=environment, preexec_fn=become)  # noqa: PLW1509
    except (OSError, subprocess.SubprocessError) as e:
        raise SystemExit(fail(f"cannot start the image's command {command}: {e}", 127)) from None


def wait_for(child: subprocess.Popen[bytes], on_exit: Callable[[int], object]) -> None:
    """Wait for the server (as process 1, reaping every orphan too) and report its exit code."""
    while True:
        try:
            pid, status = os.waitpid(-1 if os.getpid() == 1 else child.pid, 0)
        except ChildProcessError:
            on_exit(1)
            return
        if pid == child.pid:
            on_exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
            return


async def serve(server: asyncio.AbstractServer, child: subprocess.Popen[bytes] | None, *also: Awaitable[None]) -> int:
    """Serve (and run `also`) until SIGTERM or SIGINT; with a `child`, pass those on to it until it exits: its code."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int] = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if child is None:
            loop.add_signal_handler(sig, done.cancel)
        else:
            loop.add_signal_handler(sig, child.send_signal, sig)
    if child is not None:
        report = lambda code: loop.call_soon_threadsafe(done.set_result, code)  # noqa: E731
        threading.Thread(target=wait_for, args=(child, report), daemon=True).start()
    _tasks = [asyncio.ensure_future(a) for a in also]  # held here: the loop holds tasks weakly
    async with server:
        with contextlib.suppress(asyncio.CancelledError):  # a signal, without a child
            return await done
    return 0


async def run(args: argparse.Namespace, environment: dict[str, str] | None = None, secret: bytes = b"") -> int:
    if args.role == "router":
        router = Router(args.replicas, args.port)
        handle = router.bounds.serving(router.handle)
        return await serve(await asyncio.start_server(handle, args.host, args.listen, limit=HEAD_LIMIT), None)
    also = []
    if args.wall:
        try:
            wall = Wall(args.wall)
            wall.build(addresses(args.wall, socket.AF_INET))  # in this thread: no other before the server starts
        except OSError as e:
            return fail(f"access gate: cannot wall the replica off (it needs CAP_NET_ADMIN): {e.strerror}")
        also.append(wall.follow())
    gate = Gate(secret, args.upstream)
    server = await asyncio.start_server(gate.bounds.serving(gate.handle), "0.0.0.0", args.listen, limit=HEAD_LIMIT)
    uid, gid = (int(part) for part in (args.user or "-1:-1").split(":"))
    ids: tuple[int, int, list[int]] | None = None if args.user is None else (uid, gid, [])
    return await serve(server, start_server(args.command, environment, ids), *also)


def fail(message: str, code: int = 2) -> int:
    print(message, file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="incontainer")
    roles = parser.add_subparsers(dest="role", required=True)
    gate = roles.add_parser("gate")
    gate.add_argument("--secret-file", required=True)
    gate.add_argument("--env-file", action="append", default=[], metavar="NAME=FILE")
    gate.add_argument("--user", metavar="UID:GID", help="the server's user")
    gate.add_argument("--wall", metavar="ROUTERS", help="the name the routers' addresses resolve from")
    gate.add_argument("--listen", type=int, required=True)
    gate.add_argument("--upstream", type=int, required=True)
    router = roles.add_parser("router")
    router.add_argument("--replicas", required=True, help="the name the replicas' addresses resolve from")
    router.add_argument("--port", type=int, required=True, help="the replicas' gate port")
    router.add_argument("--listen", type=int, required=True)
    router.add_argument("--host", default="0.0.0.0")
    gate.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.role != "gate":
        return asyncio.run(run(args))
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:  # the runtime could not read the image's command (its manager had no copy)
        return fail("access gate: no server command given (set provider_kwargs.command)")
    try:
        secret = Path(args.secret_file).read_bytes().strip()
    except OSError as e:
        return fail(f"access gate: cannot read the secret file {args.secret_file}: {e.strerror}")
    if not secret:
        return fail(f"access gate: the secret file {args.secret_file} is empty")
    environment = dict(os.environ)
    for item in args.env_file:
        name, sep, path = item.partition("=")
        if not name or not sep:
            return fail(f"access gate: --env-file takes NAME=FILE, not {item}")
        try:  # the value's bytes as they are (not UTF-8, perhaps); the message names the file alone
            environment[name] = os.fsdecode(Path(path).read_bytes())
        except OSError as e:
            return fail(f"access gate: cannot read the variable file {path}: {e.strerror}")
    return asyncio.run(run(args, environment, secret))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The program every `docker run` container of a run starts first: the socket shim.

Shipped beside `incontainer` (whose relaying and server start it uses) in a read-only bind
mount, and run by the image's own `python3` (3.8 or later, 64-bit Linux): standard library
only. It creates the Unix socket in the bind-mounted folder, relays each connection to the
server's port 8000 on loopback, and runs the image's command as `--user` (the sandbox's, or
the image's own as Docker reads it: `identity`). With `--wall` (a container with a network)
it first adds a routing rule (`only_loopback_answers`, CAP_NET_ADMIN, which the server does
not keep) so that the server's port answers nobody on that network. Docs: Security.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import socket
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openenvgen_runtime.access import incontainer
else:
    try:  # in a container: the program beside this one
        import incontainer
    except ImportError:
        from openenvgen_runtime.access import incontainer

SERVER_PORT = 8000
"""Where an OpenEnv image's server listens."""


def identity(user: str) -> tuple[int, int, list[int]]:
    """A `docker run --user` value (NAME or UID, optionally :GROUP or :GID) as the uid, gid and
    supplementary groups the image's own /etc/passwd and /etc/group give it, as Docker reads them."""
    import grp
    import pwd

    name, _, group = user.partition(":")
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except KeyError:
        if not name.isdigit():
            raise SystemExit(incontainer.fail(f"no user {name} in the image's /etc/passwd", 127)) from None
        entry = None
    try:
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid if group else entry.pw_gid if entry else 0
    except KeyError:
        raise SystemExit(incontainer.fail(f"no group {group} in the image's /etc/group", 127)) from None
    uid = entry.pw_uid if entry else int(name)
    return uid, gid, os.getgrouplist(entry.pw_name, gid) if entry and not group else []


def only_loopback_answers(port: int) -> None:
    """A routing rule per address family (`ip rule add sport PORT prohibit`, by netlink): no packet from
    `port` leaves for any address but the container's own (the `local` table, looked up first), so the
    server answers the shim on loopback and nobody on the container's networks, whatever source address
    a peer takes; every other connection, its egress included, is routed as before. CAP_NET_ADMIN."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as link:
        for family in (socket.AF_INET, socket.AF_INET6):
            attributes = struct.pack("=HHI", 8, 6, 1)  # FRA_PRIORITY 1
            attributes += struct.pack("=HHHH", 8, 23, port, port)  # FRA_SPORT_RANGE
            rule = struct.pack("=8BI", family, 0, 0, 0, 0, 0, 0, 8, 0)  # fib_rule_hdr: FR_ACT_PROHIBIT
            body = rule + attributes
            # RTM_NEWRULE (32), NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
            link.send(struct.pack("=IHHII", 16 + len(body), 32, 0x1 | 0x4 | 0x200 | 0x400, 1, 0) + body)
            error = -struct.unpack_from("=i", link.recv(65536), 16)[0]
            if error and not (family == socket.AF_INET6 and error == errno.EAFNOSUPPORT):  # no IPv6: nothing to keep
                raise OSError(error, os.strerror(error))


async def run(args: argparse.Namespace) -> int:
    if args.wall:  # before the server starts
        try:
            only_loopback_answers(SERVER_PORT)
        except OSError as e:
            return incontainer.fail(f"socket shim: cannot keep the server's port off the network: {e.strerror}")
    child = incontainer.start_server(args.command, None, identity(args.user) if args.user else None)
    server = await asyncio.start_unix_server(
        lambda r, w: incontainer.splice(r, w, asyncio.open_connection("127.0.0.1", SERVER_PORT)), args.socket
    )
    os.chmod(args.socket, 0o777)  # the host side connects as whichever user runs the eval
    return await incontainer.serve(server, child)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="socket_shim")
    parser.add_argument("--user", metavar="USER[:GROUP]", help="the server's user (default: the shim's)")
    parser.add_argument("--wall", action="store_true", help="the server's port answers loopback alone")
    parser.add_argument("socket")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

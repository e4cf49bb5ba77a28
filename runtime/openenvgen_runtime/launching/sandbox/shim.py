"""The sandboxed container's first process: runs the image's own command and relays a Unix socket to it.

A sandboxed container has no network (`docker run --network none`): nothing outside reaches
its port 8000. The runtime bind-mounts a folder of its own into the container and starts this
file with the image's python (standard library only, any Python 3.8+): it starts the image's
command unchanged (so the server listens on the container's loopback :8000, as it always
does) as `USER` (uid:gid, the sandbox's non-root user), relays each connection made to
`SOCKET` (in that folder) to it, and, as the container's process 1, reaps orphaned processes
(model code that forks) and exits with the server's exit code. On the host, `relay.Relay`
turns the socket back into a loopback port.

The shim alone starts as the container's root, holding only the capabilities to create the
socket in the host's private folder (which the server's user cannot enter, so model code can
neither write there nor replace the socket) and to become `USER`; the server and everything
it runs get no capability at all, and `no-new-privileges` keeps it so.

    python3 shim.py SOCKET USER COMMAND...

The host side imports `pipe` from here: one relay loop for both ends.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable
from typing import TYPE_CHECKING

UPSTREAM = ("127.0.0.1", 8000)
CHUNK = 256 * 1024


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy `reader` into `writer` until it ends, then close `writer`."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


if TYPE_CHECKING:  # spelt for the checker only: images may run a Python older than tuple[...]
    Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Awaitable[Streams]) -> None:
    """Relay one accepted connection to `upstream` (an opened connection), both ways; when
    the upstream cannot be opened the connection is closed (the caller's health probe retries)."""
    try:
        up_reader, up_writer = await upstream
    except (ConnectionError, OSError):
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def _serve(path: str) -> None:
    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await splice(reader, writer, asyncio.ensure_future(asyncio.open_connection(*UPSTREAM)))

    server = await asyncio.start_unix_server(accepted, path=path)
    os.chmod(path, 0o777)  # the host side connects as whichever user runs the eval
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print("usage: shim.py SOCKET UID:GID COMMAND...", file=sys.stderr)
        return 2
    path, user, command = argv[1], argv[2], argv[3:]
    uid, gid = (int(part) for part in user.split(":"))

    def become_user() -> None:  # in the child, before the image's command runs
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    if os.path.exists(path):
        os.unlink(path)
    try:
        # Before any thread of ours exists: `preexec_fn` is safe only then.
        server = subprocess.Popen(command, preexec_fn=become_user)  # noqa: PLW1509
    except OSError as e:
        print(f"cannot start the image's command {command}: {e}", file=sys.stderr)
        return 127
    threading.Thread(target=asyncio.run, args=(_serve(path),), daemon=True).start()
    # Process 1 of the container: every orphan is ours to reap; the server's exit is ours.
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == server.pid:
            return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The sandboxed container's first process: runs the image's own command and relays a Unix socket to it.

A sandboxed container has no network (`docker run --network none`): nothing outside reaches
its port 8000. The runtime bind-mounts a folder of its own into the container and starts this
file with the image's python (standard library only, any Python 3.8+): it starts the image's
command unchanged (so the server listens on the container's loopback :8000, as it always
does), relays each connection made to `SOCKET` (in that folder) to it, and, as the
container's process 1, reaps orphaned processes (model code that forks) and exits with the
server's exit code. On the host, `relay.Relay` turns the socket back into a loopback port.

    python3 shim.py SOCKET COMMAND...

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
    if len(argv) < 3:
        print("usage: shim.py SOCKET COMMAND...", file=sys.stderr)
        return 2
    path, command = argv[1], argv[2:]
    if os.path.exists(path):
        os.unlink(path)
    try:
        server = subprocess.Popen(command)
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

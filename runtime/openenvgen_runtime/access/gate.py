"""The access gate: the program a Swarm replica runs in front of its env server.

Shipped to every replica as a Swarm config and run by the image's own `python3`; standard
library only, and it imports nothing of the runtime (the image has none). It starts the
image's own command (the env server, on the container's port 8000), listens on the port the
replica publishes, and for each connection reads the first request's head:

- with `Authorization: Bearer SECRET` (the launch's secret, read from the Swarm secret
  file named on its command line, never the secret itself), the connection is spliced
  through to the server as it is, that request and every later one on it;
- without it, `GET /health` is answered from the server's own `/health`, then closed;
- anything else gets `401` and is closed: `/ws`, `/reset`, `/step`, `/state`, `/mcp` and
  the rest need the secret.

Each `--env-file NAME=FILE` (a `pass_env` variable, which Swarm delivers as a secret
file) becomes the variable NAME of the server's environment, its value the file's content
as it is: the value is on no command line and in no service spec, and the gate's own
environment never holds it.

It runs on whatever Python 3 the image has (3.8 or later), so it keeps to what those have.
It logs nothing about requests, and exits with the server's exit code when the server
exits (Swarm then replaces the replica); SIGTERM and SIGINT go on to the server.

    python3 -I gate.py --secret-file FILE [--env-file NAME=FILE]... --listen PORT --upstream PORT -- COMMAND...
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

HEAD_LIMIT = 64 * 1024
"""Largest request head read before deciding (bytes); a larger one is refused."""
HEAD_TIMEOUT = 30.0
"""Seconds a client may take to send its first request's head."""
HEALTH_LIMIT = 64 * 1024
"""Largest `/health` reply passed on to an unauthenticated probe (bytes)."""
UNAUTHORIZED = b'{"detail":"this env server admits only the run that launched it"}'


def _reply(status: str, body: bytes, extra: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{extra}Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def _request_head(head: bytes) -> tuple[str, str, list[bytes]]:
    """(method, path without the query, values of every Authorization header)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    method = parts[0].decode("latin-1") if parts else ""
    target = parts[1].decode("latin-1") if len(parts) > 1 else ""
    authorizations = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"authorization":
            authorizations.append(value.strip())
    return method, target.split("?", 1)[0], authorizations


class Gate:
    def __init__(self, secret: bytes, upstream: int) -> None:
        self._expected = b"Bearer " + secret
        self.upstream = upstream

    def admits(self, authorizations: list[bytes]) -> bool:
        return len(authorizations) == 1 and hmac.compare_digest(authorizations[0], self._expected)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError):  # noqa: UP041
                return
            method, path, authorizations = _request_head(head)
            if self.admits(authorizations):
                await self._splice(head, reader, writer)
            elif method == "GET" and path == "/health":
                await self._health(writer)
            else:
                writer.write(_reply("401 Unauthorized", UNAUTHORIZED, 'WWW-Authenticate: Bearer realm="openenv"\r\n'))
                await writer.drain()
        except (OSError, asyncio.TimeoutError):  # noqa: UP041 - before 3.11 not the builtin
            pass
        finally:
            writer.close()

    async def _health(self, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.write(_reply("503 Service Unavailable", b'{"detail":"the env server is not up yet"}'))
            await writer.drain()
            return
        try:
            up_writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            await up_writer.drain()
            reply = await asyncio.wait_for(up_reader.read(HEALTH_LIMIT), HEAD_TIMEOUT)
            while reply and len(reply) < HEALTH_LIMIT:
                more = await asyncio.wait_for(up_reader.read(HEALTH_LIMIT - len(reply)), HEAD_TIMEOUT)
                if not more:
                    break
                reply += more
            writer.write(reply)
            await writer.drain()
        finally:
            up_writer.close()

    async def _splice(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.write(_reply("502 Bad Gateway", b'{"detail":"the env server does not answer"}'))
            await writer.drain()
            return
        up_writer.write(head)
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            up_writer.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (or close, where it cannot be)."""
    try:
        while True:
            data = await reader.read(65536)
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


def _exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _wait_for(child: subprocess.Popen[bytes], on_exit: Callable[[int], None]) -> None:
    """Wait for the server (as PID 1, reaping every orphan too) and report its exit code."""
    while True:
        try:
            pid, status = os.waitpid(-1 if os.getpid() == 1 else child.pid, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == child.pid:
            on_exit(_exit_code(status))
            return


def server_environment(env_files: list[str]) -> dict[str, str]:
    """The gate's environment with each `NAME=FILE`'s variable set to FILE's content
    (bytes as they are: a value need not be UTF-8). OSError when a file cannot be read."""
    environment = dict(os.environ)
    for item in env_files:
        name, _, path = item.partition("=")
        with open(path, "rb") as f:
            environment[name] = os.fsdecode(f.read())
    return environment


async def serve(gate: Gate, port: int, command: list[str], environment: dict[str, str]) -> int:
    server = await asyncio.start_server(gate.handle, host="0.0.0.0", port=port, limit=HEAD_LIMIT)
    child = subprocess.Popen(command, env=environment)
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[int] = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, child.send_signal, sig)
    threading.Thread(
        target=_wait_for, args=(child, lambda code: loop.call_soon_threadsafe(exited.set_result, code)), daemon=True
    ).start()
    code = await exited
    server.close()
    return code


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gate")
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--env-file", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        # The runtime could not read the image's command (its manager had no copy of the image).
        print("access gate: no server command given (set provider_kwargs.command)", file=sys.stderr)
        return 2
    try:
        with open(args.secret_file, "rb") as f:
            secret = f.read().strip()
    except OSError as e:
        print(f"access gate: cannot read the secret file {args.secret_file}: {e.strerror}", file=sys.stderr)
        return 2
    if not secret:
        print(f"access gate: the secret file {args.secret_file} is empty", file=sys.stderr)
        return 2
    malformed = [item for item in args.env_file if not item.partition("=")[0] or "=" not in item]
    if malformed:
        print(f"access gate: --env-file takes NAME=FILE, not {malformed[0]}", file=sys.stderr)
        return 2
    try:
        environment = server_environment(args.env_file)
    except OSError as e:  # names the file, never its content
        print(f"access gate: cannot read the variable file {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return asyncio.run(serve(Gate(secret, args.upstream), args.listen, command, environment))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Serve a shipped recording on loopback until interrupted (`openenv-gen replay NAME` runs it).

`python -m openenvgen_runtime.replay ENV_FOLDER [--port PORT]` serves the recording in
ENV_FOLDER (the catalog name's folder).

The first line on stdout is the server's URL, once it is listening; `--port 0` takes a free port.
A recording that is not shipped, or a port already in use, is one line on stderr and exit 64 or
69 (the runtime's exit codes).
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys

from openenvgen_runtime.launching.errors import UNAVAILABLE_EXIT, USAGE_EXIT
from openenvgen_runtime.replay.recording import recorded_envs

HOST = "127.0.0.1"
DEFAULT_PORT = 8001


def _fail(message: str, code: int) -> None:
    print(f"replay: {message}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m openenvgen_runtime.replay")
    parser.add_argument("env_folder", metavar="ENV_FOLDER", help="A recorded upstream env folder (textarena_env).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Port on {HOST} (0: a free one).")
    args = parser.parse_args(argv)
    if args.env_folder not in recorded_envs():
        _fail(f"no recorded session of {args.env_folder!r}; recorded: {', '.join(recorded_envs())}", USAGE_EXIT)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((HOST, args.port))
    except OSError as e:
        listener.close()
        if e.errno == errno.EADDRINUSE:
            _fail(f"port {args.port} on {HOST} is in use; pick another: --port PORT (0: a free one)", UNAVAILABLE_EXIT)
        _fail(f"cannot listen on {HOST}:{args.port}: {e.strerror}", UNAVAILABLE_EXIT)
    listener.listen(128)

    import uvicorn  # after the argument checks: OpenEnv's app takes a while to import

    from openenvgen_runtime.replay.server import make_replay_app

    app = make_replay_app(args.env_folder).app
    print(f"http://{HOST}:{listener.getsockname()[1]}", flush=True)
    # Ctrl-C ends it within seconds even with sessions still open (a client that never closed).
    config = uvicorn.Config(app, log_level="warning", ws_ping_interval=None, timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:  # pragma: no cover - uvicorn handles SIGINT itself
        pass


if __name__ == "__main__":
    main()

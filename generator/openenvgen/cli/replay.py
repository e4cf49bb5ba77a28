"""`replay`: serve a catalog env's recorded session on loopback, so everything runs offline.

The generator never imports the runtime (OpenEnv is the runtime's), so `replay` resolves the
catalog name, then runs the runtime's replay server (`python -m openenvgen_runtime.replay`) in this
interpreter; that process owns the port until Ctrl-C, and its exit code is `replay`'s.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from typing import Annotated

import typer

from openenvgen.cli.play import wait_for
from openenvgen.errors import UsageError

RUNTIME_REPLAY = "openenvgen_runtime.replay"


def replay(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A catalog name (`openenv-gen list`: episode replay).")],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port on 127.0.0.1 (0: a free one).")
    ] = 8001,
) -> None:
    """Serve a catalog env's recorded schema, metadata and episode on 127.0.0.1, until Ctrl-C.

    The server is a real OpenEnv server replaying the session recorded from the upstream env:
    `play`, `doctor`, a package's `connect()`, `vf-eval` and your own tests run against its URL
    (the first line printed) with no network. Each session replays the recorded episode: its
    reset, then the recorded reply to each recorded action (another action is refused), the last
    one ending the episode. `openenv-gen list` shows which envs have one (episode `replay`).
    """
    from openenvgen import catalog

    replayable = sorted(known for known, recorded in catalog.entries().items() if not recorded.no_episode)
    entry = catalog.lookup(name, choices=f"replayable: {', '.join(replayable)}")
    if entry.no_episode:
        raise UsageError(f"{entry.name} has no recorded episode to replay; it needs its server: {entry.no_episode}")
    if importlib.util.find_spec("openenvgen_runtime") is None:
        raise UsageError("replay needs the runtime in this environment: pip install openenvgen-runtime")
    command = [sys.executable, "-m", RUNTIME_REPLAY, entry.env_folder, "--port", str(port)]
    code = wait_for(subprocess.Popen(command))
    raise typer.Exit(code if code >= 0 else 128 - code)

"""`play`: drive a package's env from the terminal, seeing exactly what the model reads.

The generator never imports the runtime (it ships without verifiers and OpenEnv), so `play`
finds the package, then runs the runtime's player (`python -m openenvgen_runtime.client.play`) in
this interpreter, where the package and the runtime are installed; that process owns the
terminal, the episode and any server it launches, and its exit code is `play`'s.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import IO, Annotated

import typer

from openenvgen.cli.base import CaBundle, HeaderOptions, credential_settings, credentials
from openenvgen.cli.packages import located
from openenvgen.errors import UsageError

RUNTIME_PLAYER = "openenvgen_runtime.client.play"


def play(
    package: Annotated[
        str, typer.Argument(metavar="PACKAGE", help="Package directory, installed package, or catalog name.")
    ],
    base_url: Annotated[
        str | None, typer.Option("--base-url", metavar="URL", help="Play on this running server (default: launch one).")
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option("--script", metavar="FILE", help="Read the replies from FILE, one per line (or pipe them in)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per turn: role, text, observation, reward, done.")
    ] = False,
    task: Annotated[int, typer.Option("--task", min=0, metavar="N", help="Which task (reset) to play.")] = 0,
    headers: HeaderOptions = None,
    ca_bundle: CaBundle = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=JSON",
            help="A taskset config key, e.g. --set 'resets=[{\"seed\": 3}]' (repeatable).",
        ),
    ] = None,
) -> None:
    """Play a package's env as the model would: each turn is printed exactly as the model reads it
    (the package's prompt and renderer, hidden fields out, media as placeholders, the action schema),
    and each line you type is the model's reply.

    PACKAGE is a package directory, an installed package (`wordle-openenv`), or a catalog name
    (`wordle`: generated into a temporary directory first).

    A reply is what the model would write: a JSON object, or a bare value for a one-field action
    (`[crane]` for Wordle). `NAME {"arg": 1}` calls tool NAME: a native tool call with
    `--set action_format=tools` (`act` for a typed action, a union member's name, or an MCP
    tool's), and for MCP envs in text format the JSON the model writes for a call. Blank lines are
    skipped. It ends at done (exit 0), at the end of input, or on Ctrl-C; the session and any
    server it launched are always closed.
    """
    access = credentials(headers, ca_bundle, base_url=base_url)
    if importlib.util.find_spec("openenvgen_runtime") is None:
        raise UsageError("play needs the runtime in this environment: pip install openenvgen-runtime")
    with replies_from(script) as replies, located(package) as (package_id, folder):
        command = [sys.executable, "-m", RUNTIME_PLAYER, package_id, "--task", str(task)]
        command += ["--path", str(folder)] if folder is not None else []
        command += ["--base-url", base_url] if base_url else []
        command += ["--json"] if as_json else []
        command += credential_settings(access)
        for setting in settings or []:
            command += ["--set", setting]
        code = wait_for(subprocess.Popen(command, stdin=replies))
    raise typer.Exit(code if code >= 0 else 128 - code)


def replies_from(script: Path | None) -> contextlib.AbstractContextManager[IO[bytes] | None]:
    """`--script`'s file opened here, for the player to read as its standard input: any file
    this process can read, a pipe too (`--script <(make-replies)`, which the player could not
    open); None (the player reads this standard input) without one."""
    if script is None:
        return contextlib.nullcontext()
    try:
        return script.open("rb")
    except OSError as e:
        raise UsageError(f"--script {script}: {(e.strerror or type(e).__name__).lower()}") from None


def wait_for(player: subprocess.Popen[bytes]) -> int:
    """The player's exit code. A Ctrl-C in the terminal reaches the player too (one process
    group): it closes the session and any server it launched, then exits 130; this process
    keeps waiting for that rather than leaving it behind. (Ignoring SIGINT here instead
    would have the player inherit the ignoring, and Ctrl-C would do nothing.)"""
    while True:
        try:
            return player.wait()
        except KeyboardInterrupt:
            continue

"""The `openenv-gen` entry point: run the command tree and turn its outcome into an exit code.

Errors print one line to stderr and exit with the code their class documents (see
errors.py and the exit-codes reference in docs/). Bare `openenv-gen` prints the help and
exits 0, as `--help` does: nothing failed, the user asked what the tool does.
"""

from __future__ import annotations

import atexit
import gc
import sys

from openenvgen.cli.commands import generates
from openenvgen.generation import codegen_worker


def main() -> None:
    args = sys.argv[1:]
    if generates(args):
        _without_cycle_collection()
        # Before the command tree's imports: the model generator imports meanwhile (codegen_worker).
        codegen_worker.start()
    try:
        _run(args)
    finally:
        codegen_worker.stop()  # one no generation took


def _run(args: list[str]) -> None:
    import typer

    from openenvgen.cli.base import TyperClickException
    from openenvgen.cli.tree import app
    from openenvgen.errors import GenError, UsageError

    try:
        # Without standalone mode click *returns* a typer.Exit's code instead of exiting.
        code = app(args=args or ["--help"], standalone_mode=False)
    except GenError as e:
        typer.echo(f"openenv-gen: error: {e}", err=True)
        sys.exit(e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("openenv-gen: aborted", err=True)
        sys.exit(130)
    except TyperClickException as e:
        typer.echo(f"openenv-gen: error: {e.format_message()}", err=True)
        sys.exit(UsageError.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _without_cycle_collection() -> None:
    """A generation makes its objects once and keeps nearly all of them to its end (modules,
    classes, the spec, the package's text), so Python's cycle collector, which scans them
    again and again as they are made and once more as the interpreter exits, frees almost
    nothing for a sixth of a cold generation's CPU time. It is off for the one generation
    (and its forked worker: measured, the peak memory of a 600 kB schema's generation is
    the same), and what is left is frozen at exit, so that the last scan skips it: the
    process ends and the system takes its memory back whole."""
    gc.disable()
    atexit.register(gc.freeze)  # registered first: runs after every other exit handler

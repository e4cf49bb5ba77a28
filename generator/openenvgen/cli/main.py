"""The `openenv-gen` entry point: run the command tree and turn its outcome into an exit code.

Errors print one line to stderr and exit with the code their class documents (see
errors.py and the exit-codes reference in docs/). Bare `openenv-gen` prints the help and
exits 0, as `--help` does: nothing failed, the user asked what the tool does.
"""

from __future__ import annotations

import sys

import typer

from openenvgen.cli.app import app
from openenvgen.cli.base import TyperClickException
from openenvgen.errors import GenError, UsageError


def main() -> None:
    try:
        # Without standalone mode click *returns* a typer.Exit's code instead of exiting.
        code = app(args=sys.argv[1:] or ["--help"], standalone_mode=False)
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

"""The `openenv-gen` typer app, and its entry point: run the app and turn its outcome into an
exit code.

Errors print one line to stderr and exit with the code their class documents (see
errors.py and the exit-codes reference in docs/). Bare `openenv-gen` prints the help and
exits 0, as `--help` does: nothing failed, the user asked what the tool does.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from openenvgen import __version__
from openenvgen.cli.base import Command, GenerateByDefault, TyperClickException
from openenvgen.cli.capture import capture
from openenvgen.cli.check import check
from openenvgen.cli.doctor import doctor
from openenvgen.cli.generate import generate
from openenvgen.cli.listing import list_envs
from openenvgen.cli.play import play
from openenvgen.cli.publish import publish
from openenvgen.cli.regen import regen
from openenvgen.cli.replay import replay
from openenvgen.errors import GenError, UsageError

app = typer.Typer(
    cls=GenerateByDefault,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Markdown: a docstring's paragraphs are reflowed to the terminal's width (single line
    # breaks join), so source line breaks never show up as ragged help text.
    rich_markup_mode="markdown",
    help="Generate typed verifiers (V1) and TRL adapter packages from OpenEnv environments.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openenv-gen {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = None,
) -> None:
    pass


# Every subcommand, in the order help lists them. These names are never env names:
# `openenv-gen NAME` is `generate NAME` for any other first word (`GenerateByDefault`).
app.command("generate", cls=Command)(generate)
app.command("list", cls=Command)(list_envs)
app.command("check", cls=Command)(check)
app.command("regen", cls=Command)(regen)
app.command("publish", cls=Command)(publish)
app.command("capture", cls=Command)(capture)
app.command("play", cls=Command)(play)
app.command("doctor", cls=Command)(doctor)
app.command("replay", cls=Command)(replay)


def main() -> None:
    """`openenv-gen`."""
    args = sys.argv[1:]
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

"""The command tree: the typer app, built from the command modules, each subcommand named
once, here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from openenvgen import __version__
from openenvgen.cli.base import Command, GenerateByDefault
from openenvgen.cli.capture import capture
from openenvgen.cli.check import check
from openenvgen.cli.doctor import doctor
from openenvgen.cli.generate import generate
from openenvgen.cli.listing import list_envs
from openenvgen.cli.play import play
from openenvgen.cli.publish import publish
from openenvgen.cli.regen import regen

COMMANDS: dict[str, Callable[..., Any]] = {
    "generate": generate,
    "list": list_envs,
    "check": check,
    "regen": regen,
    "publish": publish,
    "capture": capture,
    "play": play,
    "doctor": doctor,
}
"""Every subcommand, by the name it is typed as, in the order help lists them. These names are
never env names: `openenv-gen NAME` is `generate NAME` for any other first word, and
`generate` refuses them (it reads them from this tree)."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openenv-gen {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = None,
) -> None:
    pass


def build_app() -> typer.Typer:
    """The `openenv-gen` typer app."""
    app = typer.Typer(
        cls=GenerateByDefault,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        # Markdown: a docstring's paragraphs are reflowed to the terminal's width (single line
        # breaks join), so source line breaks never show up as ragged help text.
        rich_markup_mode="markdown",
        help="Generate typed verifiers (V1) adapter packages from OpenEnv environments.",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, function in COMMANDS.items():
        app.command(name, cls=Command)(function)
    return app


app = build_app()

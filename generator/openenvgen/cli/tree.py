"""The command tree: the typer app, built from the command modules that `commands.COMMANDS`
names, each subcommand named once, there."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer

from openenvgen import __version__
from openenvgen.cli import commands
from openenvgen.cli.base import Command, GenerateByDefault


def _function(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(f"openenvgen.cli.{module}"), name)
    return function


COMMANDS: dict[str, Callable[..., Any]] = {name: _function(target) for name, target in commands.COMMANDS.items()}
"""Every subcommand's function, by the name it is typed as (`commands.COMMANDS`, imported)."""


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

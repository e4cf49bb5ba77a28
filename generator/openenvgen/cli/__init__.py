"""The `openenv-gen` command line: one typer app over the generator's layers.

Each subcommand is one module holding one plain function (its options as typer annotations);
`main` registers each on the typer app and runs it, turning errors into one line and an exit
code (`openenv-gen` is `main`).

Layers: base, packages < generate, listing, check, regen, publish, capture, play, doctor < replay < main < __main__
"""

from openenvgen.cli.main import app, main

__all__ = ["app", "main"]

"""The `openenv-gen` command line: one typer command tree over the generator's layers.

Layer 7 of the generator (the top): may import every other layer; nothing imports it.

Each subcommand is one module holding one plain function (its options as typer annotations);
`app` builds the typer app from them, naming each subcommand once (`app.COMMANDS`); `main`
runs it and turns errors into one line and an exit code (`openenv-gen` is `main`).

Layers: base, packages < generate, listing, check, regen, publish, capture, play, doctor < app < main < __main__
"""

from openenvgen.cli.app import app as app
from openenvgen.cli.main import main as main

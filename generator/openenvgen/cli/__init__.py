"""The `openenv-gen` command line: one typer command tree over the generator's layers.

Layer 7 of the generator (the top): may import every other layer; nothing imports it.

Each subcommand is one module holding one plain function (its options as typer annotations);
`commands` names each subcommand once; `tree` builds the typer app from them; `main` runs it
and turns errors into one line and an exit code (`openenv-gen` is `main`). Importing this
package imports none of them: `main` decides what to start before typer is imported.

Layers: commands, base, packages < generate, listing, check, regen, publish, capture, play, doctor <
    tree < main < __main__
"""

from typing import Any


def main() -> None:
    """`openenv-gen`: see `openenvgen.cli.main`."""
    from openenvgen.cli.main import main as run

    run()


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, built on first use
        from openenvgen.cli.tree import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

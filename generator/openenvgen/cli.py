"""The `openenv-gen` command's entry point: `--version` at once, everything else through the
typer app of `commands.py`, `maintainer_commands.py` and `play_command.py`, imported only then (typer and click
take longer to import than the interpreter takes to start).

Errors print one line to stderr and exit with the code their class documents (see
errors.py and the exit-codes reference in docs/).
"""

from __future__ import annotations

import sys

from openenvgen import __version__
from openenvgen.errors import GenError, UsageError


def __getattr__(name: str) -> object:  # no `typing` import: it alone costs ~10 ms
    """`openenvgen.cli.app`, the typer app (docs/reference.py reads its command tree), on first use."""
    if name == "app":
        import openenvgen.maintainer_commands  # noqa: F401  (registers publish and capture)
        import openenvgen.play_command  # noqa: F401  (registers play)
        from openenvgen.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"openenv-gen {__version__}")
        sys.exit(0)
    import click
    import typer

    import openenvgen.maintainer_commands  # noqa: F401  (registers publish and capture)
    import openenvgen.play_command  # noqa: F401  (registers play)
    from openenvgen.commands import TyperClickException, app

    try:
        # Without standalone mode click *returns* a typer.Exit's code instead of exiting.
        code = app(standalone_mode=False)
    except GenError as e:
        typer.echo(f"openenv-gen: error: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        typer.echo("openenv-gen: aborted", err=True)
        sys.exit(130)
    except (click.ClickException, TyperClickException) as e:
        typer.echo(f"openenv-gen: error: {e.format_message()}", err=True)
        sys.exit(UsageError.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()

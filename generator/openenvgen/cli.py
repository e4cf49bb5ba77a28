"""The `openenv-gen` command: a thin typer layer over sources → spec → render → write.

`openenv-gen NAME` generates; `check`, `list`, `regen` and `publish` are subcommands, so
they can never be env names. Errors print one line to stderr and exit with the code
their class documents (see errors.py and the README).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from typer.core import TyperGroup

from openenvgen import __version__
from openenvgen.errors import GenError, UsageError

SUBCOMMANDS = ("generate", "check", "list", "regen", "publish")


class _GenerateByDefault(TyperGroup):
    """`openenv-gen wordle` means `openenv-gen generate wordle`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["generate", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_GenerateByDefault,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Generate typed verifiers (V1) adapter packages from OpenEnv environments.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openenv-gen {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = None,
) -> None:
    pass


@app.command()
def generate(
    name: Annotated[str, typer.Argument(help="Env short name: a catalog entry (see `list`), or any name with --base-url/--schema-file.")],
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="Read the schema from this live OpenEnv server.")] = None,
    schema_file: Annotated[Optional[Path], typer.Option("--schema-file", help="Read the schema from a saved /schema reply or capture.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Package directory (default: ./<package>).")] = None,
    env_id: Annotated[Optional[str], typer.Option("--env-id", help="OpenEnv env id the package launches (default: the catalog's, else openenv/<name>).")] = None,
    package: Annotated[Optional[str], typer.Option("--package", help="Distribution name (default: <name>-openenv).")] = None,
    app_path: Annotated[Optional[str], typer.Option("--app", help="ASGI app the UV provider serves, e.g. my_env.server.app:app.")] = None,
) -> None:
    """Generate a package from the catalog, a live server or a schema file."""
    from openenvgen.pipeline import generate_package

    written = generate_package(
        name, base_url=base_url, schema_file=schema_file, out=out, env_id=env_id, package=package, app=app_path
    )
    typer.echo(f"wrote {written}")


@app.command("list")
def list_envs() -> None:
    """Show the embedded catalog: name, env id, action kind, fields or tools."""
    from rich.console import Console
    from rich.table import Table

    from openenvgen.pipeline import catalog_rows

    table = Table("name", "env id", "action", "fields / tools", box=None, pad_edge=False)
    for row in catalog_rows():
        table.add_row(*row)
    Console(width=160).print(table)


@app.command()
def check(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Generated package directories (default: generated/*).")] = None,
) -> None:
    """Re-render packages from their snapshots, in memory; exit 1 with diffs if any is stale."""
    from openenvgen.pipeline import check_packages

    stale = check_packages(paths or sorted(p for p in Path("generated").glob("*") if p.is_dir()))
    raise typer.Exit(1 if stale else 0)


def main() -> None:
    try:
        app(standalone_mode=False)
    except GenError as e:
        typer.echo(f"openenv-gen: error: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        typer.echo("openenv-gen: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        typer.echo(f"openenv-gen: error: {e.format_message()}", err=True)
        sys.exit(UsageError.exit_code)


if __name__ == "__main__":
    main()

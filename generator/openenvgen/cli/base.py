"""What every command module shares: typer's command and group classes as the CLI shows
them, the options several commands take, and JSON output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from typer import _click as typer_click
from typer.core import TyperCommand, TyperGroup

from openenvgen.errors import UsageError
from openenvgen_servers.access import AccessError, Credentials

if TYPE_CHECKING:
    from rich.console import Console

# typer 0.29 runs on its vendored click (commands take its Context), and raises its exceptions
# (missing argument, bad value), which are not `click.ClickException`s: `main` catches these.
TyperClickException = typer_click.ClickException


def _without_type_labels(params: list[typer_click.Parameter]) -> list[typer_click.Parameter]:
    """Flags take no value, so help shows no `<bool>` beside them (typer labels every option
    with its Python type unless it has a metavar; valued options get a real one, e.g. URL)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif param.param_type_name == "argument" and param.metavar is not None:
            # An argument's metavar names it already; no `<str>`/`<list[Path]>` beside it.
            param.display_type_rich = lambda ctx: None  # type: ignore[attr-defined]  # typer's params have it
    return params


class Command(TyperCommand):
    """Every subcommand's class: its help shows no type labels."""

    def get_params(self, ctx: typer_click.Context) -> list[typer_click.Parameter]:
        return _without_type_labels(super().get_params(ctx))


class GenerateByDefault(TyperGroup):
    """The root: `openenv-gen wordle` means `openenv-gen generate wordle`."""

    def get_params(self, ctx: typer_click.Context) -> list[typer_click.Parameter]:
        return _without_type_labels(super().get_params(ctx))

    def parse_args(self, ctx: typer_click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["generate", *args]
        return super().parse_args(ctx, args)


_UPSTREAM_URL_HELP = (
    "The env's live server, for one package; NAME=URL for each of several "
    "(NAME: env, package or directory name). Repeatable."
)
_UPSTREAM_FILE_HELP = (
    "A saved capture or /schema reply standing in for the live server (same NAME=FILE form). Repeatable."
)

# Options that several commands take, declared once.
UpstreamUrls = Annotated[list[str] | None, typer.Option("--base-url", metavar="[NAME=]URL", help=_UPSTREAM_URL_HELP)]
UpstreamFiles = Annotated[
    list[str] | None, typer.Option("--schema-file", metavar="[NAME=]FILE", help=_UPSTREAM_FILE_HELP)
]
RequestTimeout = Annotated[
    float,
    typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds each request to --base-url may take."),
]


HeaderOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        metavar="NAME=VARIABLE",
        help="A header every request to --base-url sends, its value read from the environment variable "
        "VARIABLE (never given on the command line), e.g. --header Authorization=HF_AUTH with "
        "HF_AUTH='Bearer hf_...' for a private Space. Repeatable.",
    ),
]
CaBundle = Annotated[
    Path | None,
    typer.Option(
        "--ca-bundle",
        metavar="FILE",
        help="A PEM file of the CA certificates an https:// --base-url is verified against (instead of the system's).",
    ),
]


def credentials(headers: list[str] | None, ca_bundle: Path | None, *, base_url: object) -> Credentials:
    """`--header` and `--ca-bundle` checked (names only: a value is read when a request is
    made); a UsageError for a bad one, or for either without `--base-url`."""
    if (headers or ca_bundle) and not base_url:
        raise UsageError("--header and --ca-bundle are for a server: pass --base-url too")
    try:
        return Credentials.from_options(headers or [], str(ca_bundle) if ca_bundle is not None else None)
    except AccessError as e:
        raise UsageError(str(e)) from None


def credential_settings(access: Credentials) -> list[str]:
    """The runtime's `--set` arguments for `play` and `doctor`: the same headers (by variable
    name: the runtime reads the values, as `base_url_headers`) and CA bundle."""
    args = []
    if access.headers:
        args += ["--set", f"base_url_headers={json.dumps(dict(access.headers))}"]
    if access.ca_bundle is not None:
        args += ["--set", f"ca_bundle={json.dumps(access.ca_bundle)}"]
    return args


def json_text(document: object) -> str:
    """A `--json` document as printed: indented, non-ASCII kept."""
    return json.dumps(document, indent=2, ensure_ascii=False)


FULL_LINES = 1 << 20
"""The width of what the CLI prints when not on a terminal: no line is ever cut."""


def console(file: IO[str] | None = None) -> Console:
    """rich's console for what a command prints (stdout, or `file`): a terminal's own width,
    and full lines when piped or redirected, where rich would cut each at 80 columns and a CI
    log would lose the numbers."""
    from rich.console import Console

    out = Console(highlight=False, file=file)
    return out if out.is_terminal else Console(highlight=False, file=file, width=FULL_LINES)

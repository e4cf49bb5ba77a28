"""`publish` and `capture`: the commands that release packages and record the catalog.

They join the typer app of `commands.py` when this module is imported (`cli` does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from openenvgen.commands import _Command, app


@app.command(cls=_Command)
def publish(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATH", help="Generated package directories and/or `runtime/`.")
    ],
    repository_url: Annotated[
        str | None,
        typer.Option(
            "--repository-url", metavar="URL", help="Upload endpoint (default: $TWINE_REPOSITORY_URL, else PyPI)."
        ),
    ] = None,
    repository: Annotated[
        str | None,
        typer.Option(
            "--repository", "-r", metavar="NAME", help="A ~/.pypirc section to upload to, with its credentials."
        ),
    ] = None,
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            metavar="URL",
            help="Simple API listing what is already published (default: derived from the upload URL).",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check, build and list; upload nothing.")] = False,
    dist_dir: Annotated[
        Path | None, typer.Option("--dist-dir", metavar="DIR", help="Also keep the built sdists and wheels here.")
    ] = None,
    no_build_isolation: Annotated[
        bool, typer.Option("--no-build-isolation", help="Build with this environment's hatchling (offline).")
    ] = False,
) -> None:
    """Check, build (sdist + wheel), `twine check` and upload packages; files already on the index are skipped."""
    from openenvgen.lifecycle.publish import publish_packages

    publish_packages(
        paths,
        repository_url=repository_url,
        repository=repository,
        index_url=index_url,
        dry_run=dry_run,
        dist_dir=dist_dir,
        build_isolation=not no_build_isolation,
        echo=typer.echo,
    )


@app.command(cls=_Command)
def capture(
    checkout: Annotated[Path, typer.Argument(metavar="CHECKOUT", help="A local checkout of huggingface/OpenEnv.")],
    only: Annotated[
        list[str] | None,
        typer.Option("--only", metavar="ENV_DIR", help="Capture only this env folder (e.g. echo_env). Repeatable."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="DIR", help="Where the recordings go, one folder per env.")
    ] = Path("openenv-captures"),
    commit: Annotated[
        str | None,
        typer.Option("--commit", metavar="SHA", help="The checkout's commit, when it is not a git checkout."),
    ] = None,
    catalog_dir: Annotated[
        Path | None,
        typer.Option(
            "--catalog",
            metavar="DIR",
            help="Also rewrite this catalog's snapshots, seed verdicts (seeding.json) and source commit "
            "(a data/ folder with catalog.toml).",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=1.0,
            metavar="SECONDS",
            help="Seconds each env may take to start (its first start installs its dependencies).",
        ),
    ] = 900.0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, metavar="N", help="Envs captured at once.")] = 1,
    python: Annotated[
        list[str] | None,
        typer.Option(
            "--python",
            metavar="VERSION=PATH",
            help="The interpreter for envs whose catalog entry asks for Python VERSION "
            '(`capture = { python = "3.12" }`), e.g. 3.12=/usr/bin/python3.12. '
            "Repeatable; without it uv searches for VERSION itself.",
        ),
    ] = None,
) -> None:
    """Start each env of an OpenEnv checkout as the UV provider does (its own uv.lock) and
    record /health, /metadata, /schema, its MCP tools, a reset and the catalog's episode;
    then whether it honours `seed` (two resets with one seed, one with another) and what
    its server does with actions sampled from its schema (validation rulings). An env's
    catalog entry may say how uv must run it here (`capture = { python, with, overrides }`,
    see catalog.toml). Envs that fail are listed with their reason in capture.json; exit 1
    if one named with --only failed, or if none could be captured."""
    from openenvgen.capture.checkout import check_captured, parse_interpreters, run_capture

    interpreters = parse_interpreters(python or [])
    index = run_capture(
        checkout,
        out=out,
        only=only,
        commit=commit,
        timeout=timeout,
        catalog_dir=catalog_dir,
        jobs=jobs,
        interpreters=interpreters,
        echo=typer.echo,
    )
    typer.echo(
        f"captured {len(index['captured'])}, failed {len(index['failed'])} (commit {index['commit'][:12]}): "
        f"see {out / 'capture.json'}"
    )
    if any(name in index["failed"] for name in only or ()):
        raise typer.Exit(1)
    check_captured(index)

"""`capture`: record the catalog's envs from a checkout of OpenEnv."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


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

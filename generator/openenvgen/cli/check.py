"""`check`: re-render packages in memory and compare them with the disk (and, with
`--upstream`, their snapshots with the live schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from openenvgen.cli.base import (
    CaBundle,
    HeaderOptions,
    RequestTimeout,
    UpstreamFiles,
    UpstreamUrls,
    credentials,
    json_text,
)
from openenvgen.errors import UsageError


def check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH", help="Packages, or files/directories inside them (default: every package under .)."
        ),
    ] = None,
    upstream: Annotated[
        bool,
        typer.Option(
            "--upstream", help="Also compare each package with its environment's live schema; exit 2 on drift."
        ),
    ] = False,
    base_url: UpstreamUrls = None,
    schema_file: UpstreamFiles = None,
    timeout: RequestTimeout = 10.0,
    headers: HeaderOptions = None,
    ca_bundle: CaBundle = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document (keys: see the docs' Machine-readable output page) instead of text; "
            "same exit codes.",
        ),
    ] = False,
    skip_outside: Annotated[
        bool,
        typer.Option(
            "--skip-outside",
            help="Skip each file PATH outside every package instead of failing "
            "(for hooks that pass every changed file, as the pre-commit hook does).",
        ),
    ] = False,
) -> None:
    """Re-render packages from their snapshots, in memory (no network, no writes): exit 1
    with diffs if a generated file is stale, missing, extra or edited by hand, or if the
    hooks in custom.py do not type-check against the models (mypy, the `typecheck` extra).
    With --upstream, exit 2 if the environment's schema has drifted from the lock."""
    from openenvgen.generation.on_disk import package_of, resolve_targets
    from openenvgen.generation.render import LOCK_FILE
    from openenvgen.lifecycle.check import check_packages
    from openenvgen.lifecycle.hook_types import check_hooks, unchecked_line

    if not skip_outside:
        for path in paths or ():
            if path.is_file() and package_of(path.resolve()) is None:
                raise UsageError(f"{path}: not in a generated package (no {LOCK_FILE} beside it or above it)")
    roots = resolve_targets(paths)
    if not roots and not paths:
        raise UsageError("no generated packages (directories with openenv-gen.lock) under the current directory")
    access = credentials(headers, ca_bundle, base_url=base_url)
    upstreams = None
    if upstream or base_url or schema_file:
        from openenvgen.lifecycle.upstream import upstream_sources

        upstreams = upstream_sources(
            roots,
            base_url or [],
            schema_file or [],
            option="check --upstream",
            timeout=timeout,
            credentials=access,
        )
    hooks = check_hooks(roots)
    if json_output:
        from openenvgen.lifecycle.check import check_json
        from openenvgen.lifecycle.upstream import compare_upstream

        report = check_json(roots, compare_upstream(roots, upstreams) if upstreams is not None else None, hooks)
        typer.echo(json_text(report))
        code = report["exit_code"]
    else:
        stale = check_packages(roots, echo=typer.echo, hooks=hooks)
        drift = False
        if upstreams is not None:
            from openenvgen.lifecycle.upstream import check_upstream

            drift = check_upstream(roots, upstreams, echo=typer.echo)
        code = 2 if drift else 1 if stale else 0
    if unchecked := unchecked_line(hooks):  # never a silent pass
        typer.echo(f"openenv-gen: warning: {unchecked}", err=True)
    raise typer.Exit(code)

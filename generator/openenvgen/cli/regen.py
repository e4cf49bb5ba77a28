"""`regen`: regenerate packages in place, bumping each version by its model changes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from openenvgen.cli.base import CaBundle, HeaderOptions, RequestTimeout, UpstreamFiles, UpstreamUrls, credentials
from openenvgen.errors import UsageError


def regen(
    paths: Annotated[list[Path] | None, typer.Argument(metavar="PATH", help="Generated package directories.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every package under the current directory.")] = False,
    from_upstream: Annotated[
        bool,
        typer.Option(
            "--from-upstream",
            help="Take the schema from the environment (--base-url or --schema-file), not the snapshot.",
        ),
    ] = False,
    base_url: UpstreamUrls = None,
    schema_file: UpstreamFiles = None,
    timeout: RequestTimeout = 10.0,
    headers: HeaderOptions = None,
    ca_bundle: CaBundle = None,
    scaffold: Annotated[
        bool,
        typer.Option(
            "--scaffold",
            help="First update the scaffolded files (custom.py, tests/, CHANGELOG.md) to this release's template "
            "with `copier update`, keeping your edits; the package must be committed in git.",
        ),
    ] = False,
    scaffold_ref: Annotated[
        str | None,
        typer.Option(
            "--scaffold-ref",
            metavar="TAG",
            help="With --scaffold: the template's tag to update to (default: this release's, `v<version>`).",
        ),
    ] = None,
) -> None:
    """Regenerate packages; bump each version by the impact of its model changes
    (major/minor/patch) and add a CHANGELOG.md entry. User-owned files are kept;
    with --scaffold, the scaffolded ones first take this release's template changes."""
    from openenvgen.generation.on_disk import find_packages, resolve_targets
    from openenvgen.lifecycle.hook_types import HookTypes, unchecked_line
    from openenvgen.lifecycle.regen import regen_package
    from openenvgen.lifecycle.upstream import upstream_sources

    if all_ == bool(paths):
        raise UsageError("pass package paths or --all (not both)")
    if scaffold_ref and not scaffold:
        raise UsageError("--scaffold-ref needs --scaffold")
    roots = find_packages(Path(".")) if all_ else resolve_targets(paths)
    if not roots:
        raise UsageError("no generated packages to regenerate")
    access = credentials(headers, ca_bundle, base_url=base_url)
    upstreams = {}
    if from_upstream or base_url or schema_file:
        upstreams = upstream_sources(
            roots,
            base_url or [],
            schema_file or [],
            option="regen --from-upstream",
            timeout=timeout,
            credentials=access,
        )
    conflicted = set()
    if scaffold:
        from openenvgen.generation.scaffold import release_tag
        from openenvgen.lifecycle.scaffold_update import plan_scaffold_update, update_scaffold

        # Every check first: a package that cannot be updated stops the run before anything is written.
        plans = {root: plan_scaffold_update(root, scaffold_ref or release_tag()) for root in roots}
        for root, plan in plans.items():
            if plan is None:
                typer.echo(f"{root}: no scaffold to update (generated with --no-scaffold)")
                continue
            update = update_scaffold(plan)
            typer.echo(update.summary())
            if update.conflicts:
                conflicted.add(plan.root)
    hooks: dict[Path, HookTypes] = {}
    for root in roots:
        if root in conflicted:
            continue  # regenerated once its conflicts are resolved
        outcome = regen_package(root, upstreams.get(root))
        typer.echo(outcome.summary())
        for line in outcome.diff.lines():
            typer.echo(f"  {line}")
        if outcome.hook_types is not None:
            hooks[root] = outcome.hook_types
    if unchecked := unchecked_line(hooks):  # never a silent pass
        typer.echo(f"openenv-gen: warning: {unchecked}", err=True)
    if conflicted:
        raise typer.Exit(1)

"""`list`: the embedded catalog, as aligned columns or one JSON document."""

from __future__ import annotations

from typing import Annotated

import typer

from openenvgen.cli.base import json_text


def list_envs(
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document (keys: see the docs' Machine-readable output page) instead of columns.",
        ),
    ] = False,
) -> None:
    """Show the embedded catalog: name, env id, action kind (typed, MCP or union), whether
    the env honours `seed` (as its capture measured it), whether it plays an offline episode
    here, fields or tools; then the upstream envs that cannot run here."""
    from openenvgen.catalog.listing import catalog_json, catalog_rows
    from openenvgen.catalog.reader import entries, seeding, unavailable

    seeds = seeding()
    known = entries()
    if json_output:
        document = catalog_json()
        for env in document["envs"]:
            seed = seeds.get(env["name"], {})
            env["seed"] = {"verdict": seed.get("verdict"), "summary": seed.get("summary", "")} if seed else None
            env["no_episode"] = known[env["name"]].no_episode
        document["unavailable"] = unavailable()
        typer.echo(json_text(document))
        return

    # Plain aligned columns: never wrapped or truncated, no trailing blanks, greppable; the
    # one trailing comment line names what is not in the catalog.
    rows = [("name", "env id", "action", "seed", "episode", "fields / tools")]
    rows += [
        (
            name,
            env_id,
            kind,
            seeds.get(name, {}).get("verdict", "-"),
            "none" if known[name].no_episode else "offline",
            detail,
        )
        for name, env_id, kind, detail in catalog_rows()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        # The last column is not padded: widths covers the first five.
        typer.echo("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[5]]))
    if unavailable():
        typer.echo(f"# cannot run here, not in the catalog: {', '.join(unavailable())} (reasons: --json)")

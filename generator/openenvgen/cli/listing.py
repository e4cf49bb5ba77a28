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
    the env honours `seed` (as its capture measured it), whether it plays offline (`replay`:
    `openenv-gen replay NAME` serves its recorded episode) or needs its server (`server`: the
    reason is `no_episode` in `--json`), whether it runs model-written code (`runs`), the
    variables its server needs from your environment, fields or tools; then the upstream envs
    that cannot run here."""
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
            env["replay"] = known[env["name"]].no_episode is None
            env["executes_code"] = known[env["name"]].defaults.executes_code
            env["server_env"] = list(known[env["name"]].defaults.server_env)
        document["unavailable"] = unavailable()
        typer.echo(json_text(document))
        return

    # Plain aligned columns: never wrapped or truncated, no trailing blanks, greppable; the
    # one trailing comment line names what is not in the catalog.
    rows = [("name", "env id", "action", "seed", "episode", "code", "needs", "fields / tools")]
    rows += [
        (
            name,
            env_id,
            kind,
            seeds.get(name, {}).get("verdict", "-"),
            "server" if known[name].no_episode else "replay",
            "runs" if known[name].defaults.executes_code else "-",
            ",".join(known[name].defaults.server_env) or "-",
            detail,
        )
        for name, env_id, kind, detail in catalog_rows()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        # The last column is not padded: widths covers the others.
        typer.echo("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]))
    if unavailable():
        typer.echo(f"# cannot run here, not in the catalog: {', '.join(unavailable())} (reasons: --json)")

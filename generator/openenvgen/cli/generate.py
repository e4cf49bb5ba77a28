"""`generate` (and `openenv-gen NAME`, its short form): make a package from the catalog, a
live server, a schema file or an env project."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from openenvgen.cli.base import CaBundle, HeaderOptions, RequestTimeout, credentials
from openenvgen.errors import UsageError


def generate(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Env short name: a catalog entry (see `list`), or any name with --base-url/--schema-file.",
        ),
    ],
    base_url: Annotated[
        str | None, typer.Option("--base-url", metavar="URL", help="Read the schema from this live OpenEnv server.")
    ] = None,
    timeout: RequestTimeout = 10.0,
    headers: HeaderOptions = None,
    ca_bundle: CaBundle = None,
    schema_file: Annotated[
        Path | None,
        typer.Option("--schema-file", metavar="FILE", help="Read the schema from a saved /schema reply or capture."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", metavar="DIR", help="Package directory (default: `./<package>`).")
    ] = None,
    env_id: Annotated[
        str | None,
        typer.Option(
            "--env-id",
            metavar="ENV_ID",
            help="OpenEnv env id the package launches (default: the catalog's, else `openenv/<name>`).",
        ),
    ] = None,
    package: Annotated[
        str | None, typer.Option("--package", metavar="DIST", help="Distribution name (default: `<name>-openenv`).")
    ] = None,
    app_path: Annotated[
        str | None,
        typer.Option(
            "--app", metavar="MODULE:ATTR", help="ASGI app the UV provider serves, e.g. my_env.server.app:app."
        ),
    ] = None,
    no_scaffold: Annotated[
        bool,
        typer.Option(
            "--no-scaffold", help="Do not scaffold the user-owned files (CHANGELOG.md, tests/) of a new package."
        ),
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="If --out holds another package, move that folder aside whole (to `DIR.<its package>.old`, "
            "your files in it) and write this package there new; without it, that is refused.",
        ),
    ] = False,
    executes_code: Annotated[
        bool,
        typer.Option(
            "--executes-code",
            help="Mark the env as one that runs model-written code: its package refuses the UV (host) launch "
            "unless the run sets allow_host_execution = true.",
        ),
    ] = False,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            metavar="DIR",
            help="An OpenEnv env project (its pyproject.toml and openenv.yaml): start it with the UV provider, "
            "serving the manifest's app, generate from it, stop it.",
        ),
    ] = None,
) -> None:
    """Generate a package from the catalog, a live server, a schema file or an env project."""
    root = ctx.find_root().command
    if isinstance(root, TyperGroup) and name in root.commands:
        raise UsageError(f"{name!r} is a subcommand, not an env name")
    from openenvgen.generation.package import generate_package

    access = credentials(headers, ca_bundle, base_url=base_url)
    if project is not None:
        if base_url or schema_file:
            raise UsageError("pass one of --project, --base-url, --schema-file")
        from openenvgen.sources.project import project_env, project_name, serving_project

        env = project_env(project)
        typer.echo(f"starting {env.path} (uv run --project {env.path} -- uvicorn {env.app}) ...")
        with serving_project(env) as url:
            written = generate_package(
                name,
                base_url=url,
                timeout=timeout,
                out=out,
                env_id=env_id or project_name(env.path),
                package=package,
                app=app_path or env.app,
                executes_code=executes_code,
                scaffold=not no_scaffold,
                replace=replace,
                echo=typer.echo,
            )
        typer.echo(f"stopped {env.path}")
    else:
        written = generate_package(
            name,
            base_url=base_url,
            timeout=timeout,
            schema_file=schema_file,
            out=out,
            env_id=env_id,
            package=package,
            app=app_path,
            executes_code=executes_code,
            credentials=access,
            scaffold=not no_scaffold,
            replace=replace,
            echo=typer.echo,
        )
    from openenvgen.generation.report import next_steps

    typer.echo(f"wrote {written}")
    typer.echo(next_steps(written))

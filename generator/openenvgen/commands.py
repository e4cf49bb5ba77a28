"""The `openenv-gen` commands: a thin typer layer over sources → spec → render → write.

`cli.main` runs this app (importing it only when a command needs it: `--version` does not).
`openenv-gen NAME` generates; `check`, `list`, `regen` and `publish` are subcommands, so
they can never be env names. Errors print one line to stderr and exit with the code
their class documents (see errors.py and the exit-codes reference in docs/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer import _click as typer_click
from typer.core import TyperCommand, TyperGroup

from openenvgen import __version__
from openenvgen.errors import UsageError

# typer 0.29 runs on its vendored click (commands take its Context), and raises its exceptions
# (missing argument, bad value), which are not `click.ClickException`s: `cli.main` catches these.
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


class _Command(TyperCommand):
    def get_params(self, ctx: typer_click.Context) -> list[typer_click.Parameter]:
        return _without_type_labels(super().get_params(ctx))


class _GenerateByDefault(TyperGroup):
    """`openenv-gen wordle` means `openenv-gen generate wordle`."""

    def get_params(self, ctx: typer_click.Context) -> list[typer_click.Parameter]:
        return _without_type_labels(super().get_params(ctx))

    def parse_args(self, ctx: typer_click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["generate", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_GenerateByDefault,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Markdown: a docstring's paragraphs are reflowed to the terminal's width (single line
    # breaks join), so source line breaks never show up as ragged help text.
    rich_markup_mode="markdown",
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
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = None,
) -> None:
    pass


_UPSTREAM_URL_HELP = (
    "The env's live server, for one package; NAME=URL for each of several "
    "(NAME: env, package or directory name). Repeatable."
)
_UPSTREAM_FILE_HELP = (
    "A saved capture or /schema reply standing in for the live server (same NAME=FILE form). Repeatable."
)

# Options that several commands take, declared once.
_UpstreamUrls = Annotated[list[str] | None, typer.Option("--base-url", metavar="[NAME=]URL", help=_UPSTREAM_URL_HELP)]
_UpstreamFiles = Annotated[
    list[str] | None, typer.Option("--schema-file", metavar="[NAME=]FILE", help=_UPSTREAM_FILE_HELP)
]
_RequestTimeout = Annotated[
    float,
    typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds each request to --base-url may take."),
]


@app.command(cls=_Command)
def generate(
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
    timeout: _RequestTimeout = 10.0,
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
    from openenvgen.generation.package import generate_package

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
                scaffold=not no_scaffold,
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
            scaffold=not no_scaffold,
        )
    from openenvgen.generation.report import next_steps

    typer.echo(f"wrote {written}")
    typer.echo(next_steps(written))


@app.command("list", cls=_Command)
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
        typer.echo(_json(document))
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


@app.command(cls=_Command)
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
    base_url: _UpstreamUrls = None,
    schema_file: _UpstreamFiles = None,
    timeout: _RequestTimeout = 10.0,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document (keys: see the docs' Machine-readable output page) instead of text; "
            "same exit codes.",
        ),
    ] = False,
) -> None:
    """Re-render packages from their snapshots, in memory (no network, no writes): exit 1
    with diffs if a generated file is stale, missing, extra or edited by hand, or if the
    hooks in custom.py do not type-check against the models (mypy, the `typecheck` extra).
    With --upstream, exit 2 if the environment's schema has drifted from the lock."""
    from openenvgen.generation.on_disk import resolve_targets
    from openenvgen.lifecycle.check import check_packages
    from openenvgen.lifecycle.hook_types import check_hooks, unchecked_line

    roots = resolve_targets(paths)
    if not roots and not paths:
        raise UsageError("no generated packages (directories with openenv-gen.lock) under the current directory")
    upstreams = None
    if upstream or base_url or schema_file:
        from openenvgen.lifecycle.upstream import upstream_sources

        upstreams = upstream_sources(
            roots, base_url or [], schema_file or [], option="check --upstream", timeout=timeout
        )
    hooks = check_hooks(roots)
    if json_output:
        from openenvgen.lifecycle.check import check_json
        from openenvgen.lifecycle.upstream import compare_upstream

        report = check_json(roots, compare_upstream(roots, upstreams) if upstreams is not None else None, hooks)
        typer.echo(_json(report))
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


@app.command(cls=_Command)
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
    base_url: _UpstreamUrls = None,
    schema_file: _UpstreamFiles = None,
    timeout: _RequestTimeout = 10.0,
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
    upstreams = {}
    if from_upstream or base_url or schema_file:
        upstreams = upstream_sources(
            roots, base_url or [], schema_file or [], option="regen --from-upstream", timeout=timeout
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


def _json(document: object) -> str:
    import json

    return json.dumps(document, indent=2, ensure_ascii=False)

"""`publish`: check, build and upload packages (and the runtime)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


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

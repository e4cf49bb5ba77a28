"""An env author's OpenEnv project as a schema source: `openenv-gen NAME --project DIR`.

DIR has the env's `pyproject.toml` and its `openenv.yaml` manifest. Its server is started
as the UV provider starts it (`sources.uv_server`, serving the manifest's app), read as
a live server (`sources.server.from_server`, by the caller, with the URL this yields) and
stopped again.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openenvgen.errors import SourceError, UsageError
from openenvgen.sources.uv_server import START_TIMEOUT_S, EnvFolder, ServerFailed, mapped_package, running

MANIFEST = "openenv.yaml"


def project_env(path: Path) -> EnvFolder:
    """An env author's OpenEnv project (a folder with its `pyproject.toml` and `openenv.yaml`)
    as the UV provider runs it: `uv run --project PATH -- uvicorn APP`, APP the manifest's
    `app` as an installed module. uvicorn is not started inside the folder, so an app named
    relative to it (`server.app:app`) is named through the package the pyproject maps the
    folder to (`my_env.server.app:app`), as for upstream's envs."""
    path = path.resolve()
    for required in ("pyproject.toml", MANIFEST):
        if not (path / required).is_file():
            what = f"an OpenEnv env project has a pyproject.toml and an {MANIFEST}"
            raise UsageError(f"--project {path}: no {required} ({what})")
    manifest = _manifest(path)
    app = manifest.get("app") if isinstance(manifest, dict) else None
    if not isinstance(app, str) or ":" not in app:
        raise UsageError(f"--project {path}: {MANIFEST} names no app as MODULE:ATTR (e.g. `app: server.app:app`)")
    mapped = mapped_package(path)
    if mapped is not None:
        module = app.split(":", 1)[0]
        if f".{mapped}." in f".{module}":  # a repository-relative path: envs.my_env.server.app
            app = app[f".{app}".index(f".{mapped}.") :]
        elif not module.startswith(f"{mapped}."):
            app = f"{mapped}.{app}"
    return EnvFolder(path, mapped or path.name, app_path=app)


def _manifest(path: Path) -> Any:
    import yaml  # only a project needs it

    try:
        return yaml.safe_load((path / MANIFEST).read_text("utf-8"))
    except yaml.YAMLError as e:
        raise UsageError(f"--project {path}: {MANIFEST} is not YAML ({' '.join(str(e).split())[:160]})") from None


def project_name(path: Path) -> str | None:
    """The manifest's `name` (an env id for the package), if it has one."""
    manifest = _manifest(path)
    name = manifest.get("name") if isinstance(manifest, dict) else None
    return name if isinstance(name, str) and name else None


@contextlib.contextmanager
def serving_project(env: EnvFolder, *, timeout: float = START_TIMEOUT_S) -> Iterator[str]:
    """The project's server, started as the capture starts upstream envs (from a scratch
    working directory, its log in a scratch file); yields its URL, stops it on exit."""
    scratch = Path(tempfile.mkdtemp(prefix=f"openenv-gen-project-{env.name}-"))
    try:
        try:
            with running(env, {}, scratch / "server.log", timeout, cwd=scratch) as url:
                yield url
        except ServerFailed as e:
            raise SourceError(f"--project {env.path}: {' '.join(str(e).split())[:600]}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

"""Run one env folder's server as OpenEnv's UV provider runs it, and stop it again.

`uv run --isolated --project ENV_DIR -- uvicorn APP --host 127.0.0.1 --port P`: the env's
own pyproject and `uv.lock` decide what runs (uv re-resolves a lock that no longer matches
its pyproject), exactly what users of the UV provider get. `RunSettings` are what an env
needs beyond that to start here (an interpreter, an extra or overriding requirement).
Used by the `--project` schema source (an author's env) and by the catalog's capture
(upstream's envs); the command is built, run and awaited by `openenvgen_servers.uv`, as the
runtime's UV launch runs its own, with the same minimal environment (what uv needs, plus the
run's `env_vars`; never this process's whole one).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import tomllib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenvgen.errors import UsageError
from openenvgen_servers import uv
from openenvgen_servers.environment import server_environment
from openenvgen_servers.ports import free_port
from openenvgen_servers.processes import find_uv
from openenvgen_servers.uv import UVServerProcess
from openenvgen_servers.wire import NotHealthy

START_TIMEOUT_S = 900.0
"""The first start of an env runs its `uv sync`, which downloads its dependencies."""
HOST = "127.0.0.1"


class ServerFailed(Exception):
    """The env's server could not be run, or did not start; the message says why (one line
    plus the last lines of its log)."""


@dataclass(frozen=True)
class EnvFolder:
    """An env's folder (its `pyproject.toml`) and the ASGI app uvicorn serves from it."""

    path: Path
    package: str
    """The import package the env's pyproject maps its folder to (its `<pkg>.server.app`)."""
    app_path: str | None = None
    """The ASGI app, when not `<package>.server.app:app` (an author's project: its manifest's)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def app(self) -> str:
        # `uv run --project` does not cd into the env: its own `server.app:app` would not
        # import, the installed package's module does.
        return self.app_path or f"{self.package}.server.app:app"


def mapped_package(env_dir: Path) -> str | None:
    """The package setuptools' `package-dir` maps the env folder itself to, if any."""
    try:
        pyproject = tomllib.loads((env_dir / "pyproject.toml").read_text("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{env_dir}/pyproject.toml is not TOML ({e})") from None
    package_dir: dict[str, str] = pyproject.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, folder in package_dir.items():
        if folder in (".", "") and package:
            return package
    return None


@dataclass(frozen=True)
class RunSettings:
    """How uv runs one env, beyond its own pyproject: a catalog entry's `capture` table.

    Each is what a user of the UV provider would have to do for the env to start here;
    the capture's `source.json` records them with the command.
    """

    python: str | None = None
    """The interpreter uv runs the env with (`uv run --python`): a version such as "3.12",
    found through `--python VERSION=PATH` (else uv's own search), or a path."""
    with_: tuple[str, ...] = ()
    """Extra requirements (`uv run --with`), e.g. a dependency the env's pyproject lacks."""
    overrides: tuple[str, ...] = ()
    """Requirements that replace the env's own (uv's `override-dependencies`), e.g. openenv
    from the index where the env's pyproject takes it from a git URL: the env is then run
    through a one-dependency wrapper project that applies them."""

    @classmethod
    def from_entry(cls, entry: dict[str, Any] | None) -> RunSettings:
        """The settings of a catalog entry (its `capture` table; none without one)."""
        table = (entry or {}).get("capture") or {}
        unknown = set(table) - {"python", "with", "overrides"}
        if unknown:
            keys = ", ".join(sorted(unknown))
            raise UsageError(f"catalog capture table: unknown key(s) {keys} (python, with, overrides)")
        return cls(
            python=table.get("python"), with_=tuple(table.get("with", ())), overrides=tuple(table.get("overrides", ()))
        )

    def options(self) -> dict[str, Any]:
        """The settings given, as `source.json` shows them."""
        shown: dict[str, Any] = {"python": self.python, "with": list(self.with_), "overrides": list(self.overrides)}
        return {k: v for k, v in shown.items() if v}


def require_uv() -> str:
    """The `uv` that runs env servers; a UsageError when there is none."""
    uv = find_uv()
    if uv is None:
        raise UsageError("starting an env with uv needs `uv` (pip install uv)")
    return uv


def uv_run_prefix(
    env: EnvFolder, settings: RunSettings = RunSettings(), *, python: str | None = None, project: Path | None = None
) -> list[str]:
    """`uv run ... --`: OpenEnv's UVProvider's `uv run --isolated --project ENV`, with the
    env's run settings (`python` is the resolved `--python`; `project` the wrapper project
    that applies overrides)."""
    return uv.uv_run(require_uv(), project or env.path, python=python, with_=settings.with_)


def uv_command(env: EnvFolder, port: int, uv_run: list[str] | None = None) -> list[str]:
    """The command OpenEnv's UVProvider runs (openenv.core.containers.runtime.uv_provider)."""
    return [*(uv_run or uv_run_prefix(env)), *uv.uvicorn(env.app, host=HOST, port=port)]


def override_project(env: EnvFolder, overrides: tuple[str, ...], folder: Path) -> Path:
    """A wrapper project in `folder` whose one dependency is the env (from its folder) and
    whose uv `override-dependencies` are `overrides`: uv applies overrides of the project
    it runs, and the env's own pyproject stays as upstream wrote it. The env's `uv.lock`
    still decides the rest: its pinned versions become the wrapper's constraints (a fresh
    resolution can pair versions the lock never did, e.g. dm_control with a newer MuJoCo)."""
    pyproject = tomllib.loads((env.path / "pyproject.toml").read_text("utf-8"))
    project = pyproject.get("project", {})
    dist = project.get("name")
    if not dist:
        raise ServerFailed(f"{env.path}/pyproject.toml names no [project] name to depend on")
    requires = project.get("requires-python")
    constraints = _locked_versions(env.path, skip={_requirement_name(o) for o in overrides} | {_requirement_name(dist)})
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Runs the env with overridden requirements (openenv-gen capture).",
        "[project]",
        'name = "capture-wrapper"',
        'version = "0"',
        *([f"requires-python = {json.dumps(requires)}"] if requires else []),
        f"dependencies = [{json.dumps(dist)}]",
        "",
        "[tool.uv]",
        "package = false",
        f"override-dependencies = [{', '.join(json.dumps(o) for o in overrides)}]",
        f"constraint-dependencies = [{', '.join(json.dumps(c) for c in constraints)}]",
        "",
        "[tool.uv.sources]",
        f"{json.dumps(dist)} = {{ path = {json.dumps(str(env.path))} }}",
        "",
    ]
    (folder / "pyproject.toml").write_text("\n".join(lines), "utf-8")
    return folder


def _requirement_name(requirement: str) -> str:
    """A PEP 508 requirement's distribution name, normalised (`openenv[core]>=1` → openenv)."""
    name = re.split(r"[\s\[<>=!~;@(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked_versions(env_dir: Path, *, skip: set[str]) -> list[str]:
    """`name==version` for each index package the env's uv.lock pins to one version."""
    lock = env_dir / "uv.lock"
    if not lock.is_file():
        return []
    versions: dict[str, set[str]] = {}
    for package in tomllib.loads(lock.read_text("utf-8")).get("package", []):
        if "registry" in (package.get("source") or {}) and package.get("version"):
            versions.setdefault(_requirement_name(package["name"]), set()).add(package["version"])
    pinned = {name: found.pop() for name, found in versions.items() if len(found) == 1 and name not in skip}
    return [f"{name}=={version}" for name, version in sorted(pinned.items())]


_VERSIONS_SCRIPT = """
import importlib.metadata as m, json, platform
names = ("openenv", "openenv-core", "fastmcp", "pydantic")
found = {}
for name in names:
    try:
        found[name] = m.version(name)
    except m.PackageNotFoundError:
        pass
print(json.dumps({"python": platform.python_version(), **found}))
"""


def installed_versions(env: EnvFolder, uv_run: list[str] | None = None, *, cwd: Path | None = None) -> dict[str, str]:
    """What the env's UV environment really holds (uv re-resolves a stale uv.lock in
    memory, so the lock alone can name an older openenv than the one that runs)."""
    command = [*(uv_run or uv_run_prefix(env)), "python", "-c", _VERSIONS_SCRIPT]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=server_environment(),  # the env's own interpreter: no more of ours than its server gets
    )
    if done.returncode != 0:
        return {}
    versions: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])  # the script's one JSON line
    return versions


def _tail(log: Path, lines: int = 12) -> str:
    """The log's last lines, on one line: where a server that failed says why."""
    with contextlib.suppress(OSError), open(log, errors="replace") as fh:
        return " | ".join(line.rstrip() for line in deque(fh, maxlen=lines) if line.strip())
    return ""


@contextlib.contextmanager
def running(
    env: EnvFolder,
    env_vars: dict[str, str],
    log: Path,
    timeout: float,
    *,
    cwd: Path | None = None,
    uv_run: list[str] | None = None,
) -> Iterator[str]:
    """The env's server, started as the UV provider starts it (its output into `log`);
    yields its base URL once `/health` answers, stops its process group on exit."""
    port = free_port(HOST)
    server = UVServerProcess.start(
        uv_command(env, port, uv_run), f"http://{HOST}:{port}", env_vars=env_vars, cwd=cwd, log=log
    )
    try:
        try:
            server.wait_ready(timeout)
        except NotHealthy as e:
            if e.exit_code is not None:
                raise ServerFailed(f"server exited with {e.exit_code} while starting: {_tail(log)}") from None
            raise ServerFailed(f"no healthy /health within {timeout:.0f}s: {_tail(log)}") from None
        yield server.url
    finally:
        server.stop()

"""`openenv-gen capture CHECKOUT`: capture every env of a huggingface/OpenEnv checkout.

Each env folder (`envs/NAME` with a `pyproject.toml`) is started the way OpenEnv's UV
provider starts it (`sources.uv_server`, with the run settings of its catalog entry and
the stand-ins it needs here, `stand_ins`), recorded into its capture, `OUT/NAME`
(`recording`), and stopped. A few envs are captured at once: each mostly waits, on uv
installing its environment or on its server starting. `capture.json` in OUT indexes the
run: the source commit, what was captured, and each failure with its reason (the
server's last log lines). With `--catalog DIR` the catalog's snapshots, seed verdicts and
source commit are rewritten from the captures too (`snapshots`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from openenvgen.capture.recording import INDEX_FILE, SOURCE_FILE, plan_for, record, write_json
from openenvgen.capture.snapshots import write_catalog
from openenvgen.capture.stand_ins import setup_for
from openenvgen.catalog.reader import CATALOG_TOML, entry_captured_from
from openenvgen.errors import SourceError, UsageError
from openenvgen.sources.uv_server import (
    START_TIMEOUT_S,
    EnvFolder,
    RunSettings,
    installed_versions,
    mapped_package,
    override_project,
    require_uv,
    running,
    uv_run_prefix,
)

UPSTREAM_REPO = "huggingface/OpenEnv"


def env_folders(checkout: Path, only: list[str] | None = None) -> list[EnvFolder]:
    """The checkout's env folders (`envs/NAME` with a pyproject), or those named in `only`."""
    envs = checkout / "envs"
    if not envs.is_dir():
        raise UsageError(f"{checkout}: not an OpenEnv checkout (no envs/ folder)")
    folders = [p for p in sorted(envs.iterdir()) if (p / "pyproject.toml").is_file()]
    found = {p.name: EnvFolder(p, mapped_package(p) or p.name) for p in folders}
    if not only:
        return list(found.values())
    unknown = [name for name in only if name not in found]
    if unknown:
        raise UsageError(f"no env folder {', '.join(unknown)} under {envs}")
    return [found[name] for name in only]


def parse_interpreters(values: list[str]) -> dict[str, str]:
    """`--python VERSION=PATH` options as {version: path}."""
    found = {}
    for value in values:
        version, sep, path = value.partition("=")
        if not sep or not version or not path:
            raise UsageError(f"--python {value!r}: expected VERSION=PATH, e.g. 3.12=/usr/bin/python3.12")
        if not Path(path).is_file():
            raise UsageError(f"--python {value!r}: no interpreter at {path}")
        found[version] = path
    return found


def resolve_python(requested: str | None, interpreters: dict[str, str]) -> str | None:
    """`requested` ("3.12", or a path) as uv's `--python` value: the interpreter given for
    that version with `--python VERSION=PATH`, else the request itself (uv searches PATH)."""
    if requested is None:
        return None
    return interpreters.get(requested, requested)


def source_commit(checkout: Path, given: str | None) -> str:
    """The commit the checkout is at: `given`, else git's HEAD."""
    if given:
        return given
    try:
        command = ["git", "-C", str(checkout), "rev-parse", "HEAD"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        raise UsageError(f"{checkout} is not a git checkout: pass the commit it was exported from with --commit")
    return done.stdout.strip()


def capture_env(
    env: EnvFolder,
    out: Path,
    *,
    commit: str,
    timeout: float,
    logs: Path,
    catalog_toml: Path = CATALOG_TOML,
    interpreters: dict[str, str] | None = None,
) -> list[str]:
    """Start, record and stop one env into `out/<env folder>`; raises on failure (and
    leaves no partial capture)."""
    folder = out / env.name
    scratch = Path(tempfile.mkdtemp(prefix=f"capture-{env.name}-"))
    try:
        settings = RunSettings.from_entry(entry_captured_from(env.name, catalog_toml))
        python = resolve_python(settings.python, interpreters or {})
        project = override_project(env, settings.overrides, scratch / "wrapper") if settings.overrides else None
        uv_run = uv_run_prefix(env, settings, python=python, project=project)
        setup = setup_for(env.name)
        env_vars = dict(setup.env_vars)
        if setup.prepare is not None:
            env_vars.update(setup.prepare(scratch / "data"))
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        # Some envs write files into their working directory (calendar_env's databases):
        # a scratch one keeps them out of wherever the capture was started.
        cwd = env.path if setup.run_in_env_dir else scratch
        log = logs / f"{env.name}.log"
        with running(env, env_vars, log, timeout, cwd=cwd, uv_run=uv_run) as url:
            notes = record(url, folder, lambda mcp: plan_for(env.name, mcp=mcp, catalog_toml=catalog_toml), log=log)
        shown_vars = {k: ("<stand-in data>" if v.startswith(str(scratch)) else v) for k, v in env_vars.items()}
        shown_project = (
            f"envs/{env.name}"
            if project is None
            else f"<a wrapper project: envs/{env.name} with override-dependencies {list(settings.overrides)}>"
        )
        shown_run = [
            "uv", "run", "--isolated", *(["--python", settings.python] if settings.python else []),
            *(arg for r in settings.with_ for arg in ("--with", r)), "--project", shown_project, "--",
        ]  # fmt: skip
        write_json(
            folder,
            SOURCE_FILE,
            {
                "repo": UPSTREAM_REPO,
                "commit": commit,
                "env_dir": f"envs/{env.name}",
                "command": [*shown_run, "uvicorn", env.app, "--host", "127.0.0.1", "--port", "PORT", "--workers", "1"],
                "app": env.app,
                "run_settings": settings.options(),
                "versions": installed_versions(env, uv_run, cwd=scratch),
                "env_vars": shown_vars,
                "cwd": f"envs/{env.name}" if setup.run_in_env_dir else None,
                "notes": [n for n in (setup.note, *notes) if n],
            },
        )
        return notes
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _short(reason: str, width: int = 300) -> str:
    """What went wrong, then the end of the log (where the error is), within `width`."""
    if len(reason) <= width:
        return reason
    what = reason.split(": ", 1)[0][:80]
    return f"{what}: ... {reason[-(width - len(what) - 6) :]}"


def load_index(out: Path) -> dict[str, Any]:
    """The index of the captures in `out` (an empty one when there is none yet)."""
    path = out / INDEX_FILE
    if path.is_file():
        index: dict[str, Any] = json.loads(path.read_text("utf-8"))  # written by this module: an object
        return index
    return {"repo": UPSTREAM_REPO, "commit": None, "captured": [], "failed": {}}


def run_capture(
    checkout: Path,
    *,
    out: Path,
    only: list[str] | None = None,
    commit: str | None = None,
    timeout: float = START_TIMEOUT_S,
    catalog_dir: Path | None = None,
    jobs: int = 1,
    interpreters: dict[str, str] | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Capture the checkout's envs into `out`; returns the updated index. The reset and
    episode of each env come from `catalog_dir`'s catalog.toml (default: the embedded
    catalog's); with `catalog_dir`, its snapshots and source commit are rewritten too."""
    catalog_toml = (catalog_dir / "catalog.toml") if catalog_dir is not None else CATALOG_TOML
    checkout = checkout.resolve()
    if not checkout.is_dir():
        raise UsageError(f"{checkout}: no such directory")
    envs = env_folders(checkout, only)
    require_uv()
    sha = source_commit(checkout, commit)
    out.mkdir(parents=True, exist_ok=True)
    # Server logs stay out of the captures: failures carry their last lines anyway.
    logs = Path(tempfile.mkdtemp(prefix="openenv-capture-logs-"))
    echo(f"server logs: {logs}")
    index = load_index(out)
    if index.get("commit") not in (None, sha):
        if only:
            held = f"{out} holds captures of {index['commit']}"
            raise UsageError(f"{held}; capture every env of {sha} (no --only) or use another --out")
        index = {"repo": UPSTREAM_REPO, "commit": sha, "captured": [], "failed": {}}
    index["commit"] = sha
    captured = set(index.get("captured", []))
    failed = dict(index.get("failed", {}))
    lock = threading.Lock()

    def one(env: EnvFolder) -> None:
        started = time.monotonic()
        try:
            capture_env(
                env, out, commit=sha, timeout=timeout, logs=logs, catalog_toml=catalog_toml, interpreters=interpreters
            )
        except Exception as exc:  # any failure is this env's, recorded with its reason
            reason = " ".join(str(exc).split()) or type(exc).__name__
            with lock:
                failed[env.name] = reason
                captured.discard(env.name)
            echo(f"{env.name}: FAILED ({time.monotonic() - started:.0f}s): {_short(reason)}")
        else:
            with lock:
                captured.add(env.name)
                failed.pop(env.name, None)
            echo(f"{env.name}: captured ({time.monotonic() - started:.0f}s)")
        with lock:
            index.update(captured=sorted(captured), failed=dict(sorted(failed.items())))
            write_json(out, INDEX_FILE, index)

    # Each env mostly waits (on uv installing its environment, on its server starting):
    # a few at a time use the machine better than one.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, envs))
    if catalog_dir is not None:
        write_catalog(out, catalog_dir, echo=echo)
    return index


def check_captured(index: dict[str, Any]) -> None:
    """A SourceError when the run captured no env at all."""
    if not index.get("captured"):
        raise SourceError("no env could be captured (capture.json lists each with its reason)")

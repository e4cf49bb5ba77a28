"""The embedded catalog: known envs, their defaults and their schema snapshots.

Per-env knowledge lives in `data/catalog.toml` (readable, reviewable); this module is the
one reader of it (and of `data/seeding.json`), for the generator and the capture alike.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from openenvgen.errors import UsageError
from openenvgen.spec import EnvDefaults, ServerInterface, ToolSpec

DATA = Path(__file__).parent / "data"
"""The embedded catalog: catalog.toml, seeding.json and snapshots/<name>.json."""
CATALOG_TOML = DATA / "catalog.toml"
SEEDING_FILE = "seeding.json"
"""Per catalog entry: whether its env honours `seed` (verdict, summary, evidence)."""


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    env_id: str
    env_folder: str
    """The upstream env folder (`envs/<env_folder>`) the entry is captured from; its
    capture is the folder of that name."""
    defaults: EnvDefaults
    no_episode: str | None = None
    """Why the env cannot play an episode where it is captured (it needs an outside
    service, or its step is broken upstream); None when its capture has one."""

    def interface(self) -> ServerInterface:
        """The entry's snapshot: what its server said when it was captured."""
        data = json.loads((DATA / "snapshots" / f"{self.name}.json").read_text("utf-8"))
        return ServerInterface.model_validate(data)


def read_catalog(path: Path = CATALOG_TOML) -> dict[str, Any]:
    """A catalog.toml as parsed (`[source]`, `[envs.NAME]`, `[unavailable]`): the embedded
    one by default. Parsed once per version of the file; do not change what it returns."""
    stat = path.stat()
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@cache
def _parse(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    return tomllib.loads(path.read_text("utf-8"))


def entry_captured_from(env_folder: str, path: Path = CATALOG_TOML) -> dict[str, Any] | None:
    """The raw catalog entry captured from the upstream env folder `env_folder`, if any."""
    return next((e for e in read_catalog(path)["envs"].values() if e.get("env_folder") == env_folder), None)


@cache
def entries() -> dict[str, CatalogEntry]:
    """The embedded catalog's entries by name, in catalog order."""
    out: dict[str, CatalogEntry] = {}
    for name, entry in read_catalog()["envs"].items():
        out[name] = CatalogEntry(
            name=name,
            env_id=entry["env_id"],
            env_folder=entry["env_folder"],
            defaults=_defaults(entry, seeding().get(name, {})),
            no_episode=entry.get("no_episode"),
        )
    return out


@cache
def unavailable() -> dict[str, str]:
    """Upstream env folders that cannot run here, each with the reason and the command tried
    (they have no entry and no package)."""
    return dict(read_catalog().get("unavailable", {}))


@cache
def seeding() -> dict[str, dict[str, Any]]:
    """Per entry, whether its env honours `seed`, as the capture measured it
    (`data/seeding.json`: verdict, summary, evidence; see capture/seed_check.py)."""
    found = DATA / SEEDING_FILE
    return json.loads(found.read_text("utf-8")) if found.is_file() else {}


def _defaults(entry: dict[str, Any], seed: dict[str, Any]) -> EnvDefaults:
    return EnvDefaults(
        app=entry.get("app"),
        resets=tuple(entry.get("resets", [{}])),
        action_hint=entry.get("action_hint", ""),
        example_action=entry.get("example_action"),
        shown_metadata=tuple(entry.get("shown_metadata", ())),
        seed_verdict=seed.get("verdict"),
        seed_evidence=seed.get("summary", ""),
        unlisted_tools=tuple(ToolSpec.model_validate(t) for t in entry.get("unlisted_tools", ())),
        executes_code=entry.get("executes_code", False),
        server_env=tuple(entry.get("server_env", ())),
    )


def find(name: str) -> CatalogEntry | None:
    """The embedded entry `name`, its case aside (`Wordle` is `wordle`); None when there is none."""
    known = entries()
    if name in known:
        return known[name]
    folded = {k.lower(): entry for k, entry in known.items()}
    return folded.get(name.lower())


def lookup(name: str, *, choices: str = "") -> CatalogEntry:
    """The embedded entry `name` (`find`); a UsageError saying why there is none: the reason
    an upstream env cannot run here, or the names `name` may mean and then `choices`, what
    the command takes instead (default: the known names and generation's own options)."""
    entry = find(name)
    if entry is None:
        refused = not_runnable(name)
        offered = choices or f"known: {', '.join(sorted(entries()))} (or pass --base-url/--schema-file)"
        raise UsageError(refused or f"unknown env {name!r};{did_you_mean(name)} {offered}")
    return entry


def not_runnable(name: str) -> str | None:
    """For an upstream env the catalog lists as unable to run here (`calendar_env`, or
    `calendar`): one line with its reason; None for any other name."""
    folded = name.lower()
    for folder, reason in unavailable().items():
        if folded in (folder, folder.removesuffix("_env")):
            return f"{name}: upstream's {folder} cannot run here, so the catalog has no package for it: {reason}"
    return None


def did_you_mean(name: str) -> str:
    """` did you mean wordle?` for a name close to catalog entries (a typo, `wordel`); else ""."""
    close = difflib.get_close_matches(name.lower(), sorted(entries()), n=3, cutoff=0.7)
    return f" did you mean {' or '.join(close)}?" if close else ""

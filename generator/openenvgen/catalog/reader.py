"""The embedded catalog: known envs, their defaults and their schema snapshots.

Per-env knowledge lives in `data/catalog.toml` (readable, reviewable); the code
here only reads it.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from openenvgen.errors import UsageError
from openenvgen.spec import Capture, EnvDefaults

_CATALOG = resources.files("openenvgen") / "data"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    env_id: str
    corpus: str
    defaults: EnvDefaults
    no_episode: str | None = None
    """Why the env cannot play an episode where it is captured (it needs an outside
    service, or its step is broken upstream); None when its recording has one."""

    def capture(self) -> Capture:
        data = json.loads((_CATALOG / "snapshots" / f"{self.name}.json").read_text("utf-8"))
        return Capture.model_validate(data)


@cache
def entries() -> dict[str, CatalogEntry]:
    raw = tomllib.loads((_CATALOG / "catalog.toml").read_text("utf-8"))
    out: dict[str, CatalogEntry] = {}
    for name, entry in raw["envs"].items():
        out[name] = CatalogEntry(
            name=name,
            env_id=entry["env_id"],
            corpus=entry["corpus"],
            defaults=_defaults(entry, seeding().get(name, {})),
            no_episode=entry.get("no_episode"),
        )
    return out


@cache
def unavailable() -> dict[str, str]:
    """Upstream env folders that cannot run here, each with the reason and the command tried
    (they have no entry and no package)."""
    raw = tomllib.loads((_CATALOG / "catalog.toml").read_text("utf-8"))
    return dict(raw.get("unavailable", {}))


@cache
def seeding() -> dict[str, dict[str, Any]]:
    """Per entry, whether its env honours `seed`, as the capture measured it
    (`data/seeding.json`: verdict, summary, evidence; see openenvgen/seeding.py)."""
    found = _CATALOG / "seeding.json"
    return json.loads(found.read_text("utf-8")) if found.is_file() else {}


def _defaults(entry: dict[str, Any], seed: dict[str, Any]) -> EnvDefaults:
    return EnvDefaults(
        app=entry.get("app"),
        resets=tuple(entry.get("resets", [{}])),
        action_hint=entry.get("action_hint", ""),
        example_action=entry.get("example_action"),
        seed_verdict=seed.get("verdict"),
        seed_evidence=seed.get("summary", ""),
    )


def lookup(name: str) -> CatalogEntry:
    known = entries()
    if name in known:
        return known[name]
    raise UsageError(f"unknown env {name!r}; known: {', '.join(sorted(known))} (or pass --base-url/--schema-file)")

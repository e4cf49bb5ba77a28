"""What a diff finds: each `Change` with its path, text and semver impact, and the bump they imply.

Both diffs build their results from these: `compatibility` (two JSON schemas) and
`modeldiff` (two specs or two live interfaces). A value change's text shows old → new,
shortened around the first difference when long, so the change stays visible.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from openenvgen_schemas.normalise import collapse_whitespace

Impact = Literal["patch", "minor", "major"]
RANK: dict[str, int] = {"patch": 0, "minor": 1, "major": 2}

# Paths whose change means the package may now point at another environment.
IDENTITY_PATHS = ("name", "package", "env_id", "metadata.name")
DIFFERENT_ENV = "a different environment?"


@dataclass(frozen=True)
class Change:
    """One difference, with where it is, what happened and its semver impact."""

    impact: Impact
    path: str
    """Where: `action.message`, `tools.add.a`, `observation.board[]`, `metadata.description`."""
    what: str
    """What happened, e.g. `required field added (integer)`, `type narrowed: string | null → string`,
    `description changed: "Echo it." → "Echo it back."`."""
    old: Any = None
    """For a value change (description, default, enum values, metadata, identity): the full old value."""
    new: Any = None
    """... and the full new value. None for a side where the keyword is absent, and on both
    sides for a structural change (field added, type narrowed, ...)."""

    @property
    def warning(self) -> bool:
        """An identity change: the package may be checked against a different environment."""
        return self.path in IDENTITY_PATHS

    def line(self) -> str:
        """`impact  path: what`, the impact padded so lines align."""
        return f"{self.impact:<5}  {self.path}: {self.what}"

    def as_json(self) -> dict[str, Any]:
        """Stable keys: impact, path, what, old, new, warning."""
        return {
            "impact": self.impact,
            "path": self.path,
            "what": self.what,
            "old": self.old,
            "new": self.new,
            "warning": self.warning,
        }


@dataclass(frozen=True)
class ModelDiff:
    """Every change between two versions; false when there is none."""

    changes: tuple[Change, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)

    @property
    def impact(self) -> Impact | None:
        """The largest impact of any change; None when nothing changed."""
        if not self.changes:
            return None
        return max((c.impact for c in self.changes), key=RANK.__getitem__)

    @property
    def warnings(self) -> list[str]:
        """One line per identity change, e.g. `metadata.name: changed: "A" → "B" (a different environment?)`."""
        return [f"{c.path}: {c.what}" for c in self.changes if c.warning]

    def lines(self) -> list[str]:
        """One `Change.line` per change."""
        return [c.line() for c in self.changes]

    def markdown(self) -> str:
        """One Markdown list item per change (for a CHANGELOG or a pull request)."""
        return "\n".join(f"- **{c.impact}** `{c.path}`: {c.what}" for c in self.changes)


def bump(version: str, impact: Impact | None) -> str:
    """Semver bump by impact (plain MAJOR.MINOR.PATCH; 0.x is bumped like any version)."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"package version {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(g) for g in match.groups())
    if impact is None:
        return version
    if impact == "major":
        return f"{major + 1}.0.0"
    if impact == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


# --- paths -----------------------------------------------------------------------------------

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def field_path(path: str, name: str) -> str:
    """`path.name`, or `path["name"]` for a name that is not identifier-like."""
    return f"{path}.{name}" if _PLAIN_NAME.fullmatch(name) else f"{path}[{json.dumps(name)}]"


def member_path(path: str, key: str) -> str:
    """`path[key]` for a union member, the key quoted when it is not identifier-like."""
    return f"{path}[{key}]" if _PLAIN_NAME.fullmatch(key) else f"{path}[{json.dumps(key)}]"


# --- value changes and their text --------------------------------------------------------------


class _Absent:
    """The type of `ABSENT`."""

    def __repr__(self) -> str:
        return "absent"


ABSENT: Any = _Absent()
"""A keyword or value missing on one side of a change (shown as `absent`)."""


def value_change(impact: Impact, path: str, label: str, before: Any, after: Any, *, note: str = "") -> Change:
    """A change of one value, its text showing old → new (shortened when long)."""
    shown_before, shown_after = show_pair(before, after)
    what = f"{label}: {shown_before} → {shown_after}" + (f" {note}" if note else "")
    return Change(impact, path, what, None if before is ABSENT else before, None if after is ABSENT else after)


def identity_change(path: str, before: str, after: str) -> Change:
    """A change of the env's identity: major, and flagged as a warning."""
    return value_change("major", path, "changed", before, after, note=f"({DIFFERENT_ENV})")


def short(value: Any, limit: int = 60) -> str:
    """`value` as one line of JSON text, cut to `limit` characters."""
    text = repr(value) if value is ABSENT else json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = collapse_whitespace(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_pair(before: Any, after: Any, limit: int = 72) -> tuple[str, str]:
    """Old and new value as JSON text, each about `limit` characters at most."""
    # Two long strings are cut to a window around where they first differ, so the change
    # stays visible: `"…the provided message."` → `"…the given message."`.
    if not (isinstance(before, str) and isinstance(after, str)):
        return short(before, limit), short(after, limit)
    a, b = collapse_whitespace(before), collapse_whitespace(after)
    if a == b:  # only whitespace differs: show it
        a, b = json.dumps(before, ensure_ascii=False)[1:-1], json.dumps(after, ensure_ascii=False)[1:-1]
    if len(a) <= limit and len(b) <= limit:
        return json.dumps(a, ensure_ascii=False), json.dumps(b, ensure_ascii=False)
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    start = max(0, prefix - 20)
    return _window(a, start, limit), _window(b, start, limit)


def _window(text: str, start: int, limit: int) -> str:
    """`limit` characters of `text` from `start` as JSON text, `…` where cut."""
    body = text[start : start + limit]
    head = "…" if start > 0 else ""
    tail = "…" if start + limit < len(text) else ""
    return json.dumps(head + body + tail, ensure_ascii=False)

"""`split_range` text ("START:STOP", Python slice bounds), parsed without any I/O.

Its own module so the config can check a range at validation time without importing the
task planner (which imports the server pool, which imports the config)."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^\s*(-?\d+)?\s*:\s*(-?\d+)?\s*$")


def parse_range(text: str | None) -> tuple[int | None, int | None]:
    """`"START:STOP"` (Python slice bounds, either side optional) as (start, stop)."""
    if text is None:
        return None, None
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"split_range must be START:STOP (e.g. 0:100, :50, 10:), not {text!r}")
    start, stop = (int(g) if g is not None else None for g in match.groups())
    return start, stop

"""The private folders of network-less sandboxed containers, named by the run that made them.

A folder is `openenvgen-sandbox-OWNER-RANDOM` in the temporary directory, OWNER being the
run's owner label value (what its containers carry), so a run's reaper removes exactly its
own run's folders when the run ends without closing them (SIGKILL, SIGTERM), never those of
another run that is still going. Standard library only: the reaper imports it.
"""

from __future__ import annotations

import glob
import shutil
import tempfile
from pathlib import Path

PREFIX = "openenvgen-sandbox-"


def make(owner: str | None) -> Path:
    """A new private (0700) folder, marked with `owner` (None: a folder no reaper claims)."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner}-" if owner else PREFIX))


def owned(owner: str) -> list[Path]:
    """The folders marked with `owner` that exist now."""
    return sorted(Path(tempfile.gettempdir()).glob(f"{PREFIX}{glob.escape(owner)}-*"))


def remove_owned(owner: str) -> None:
    """Remove every folder marked with `owner` (with any socket left in it)."""
    for folder in owned(owner):
        shutil.rmtree(folder, ignore_errors=True)

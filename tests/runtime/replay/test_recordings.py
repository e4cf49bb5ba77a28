"""The recordings the runtime ships are the project's captures, never a copy of their own: the
files a replay reads of every capture with a recorded step, byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

from openenvgen_runtime.replay.recording import RECORDINGS, recorded_envs, write_recordings
from openenvgen_testsupport.replay_env import CAPTURES


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def test_the_shipped_recordings_are_the_captures_a_replay_reads(tmp_path: Path) -> None:
    written = write_recordings(CAPTURES, tmp_path / "recordings")
    assert written == recorded_envs()
    shipped, captured = _digests(RECORDINGS), _digests(tmp_path / "recordings")
    differing = sorted(name for name in shipped.keys() | captured.keys() if shipped.get(name) != captured.get(name))
    assert not differing, f"{differing}: the runtime's recordings are not the captures' (`make catalog` writes both)"

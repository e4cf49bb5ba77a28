"""The caches stay bounded: each folder keeps its most recently used files (a hit counts as
a use), and a generation that writes one more removes the least recently used."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from openenvgen.generation import layout
from openenvgen.generation.codegen import generate_models
from openenvgen.generation.package import resolve_spec


def _files(folder: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(suffix))


def test_trim_keeps_the_most_recently_used_and_nothing_else_is_touched(tmp_path: Path) -> None:
    for age, name in enumerate(["e", "d", "c", "b", "a"]):  # "a" is the oldest
        path = tmp_path / f"{name}.py"
        path.write_text(name)
        os.utime(path, ns=(1_000_000_000 * (10 - age),) * 2)
    (tmp_path / "other.json").write_text("{}")
    (tmp_path / "sub.py").mkdir()  # a folder, even one named like an entry, is not an entry
    layout.touch(tmp_path / "a.py")  # used just now: the newest
    layout.trim_cache(tmp_path, ".py", keep=3)
    assert _files(tmp_path, ".py") == ["a.py", "d.py", "e.py", "sub.py"]
    assert (tmp_path / "other.json").is_file()
    layout.trim_cache(tmp_path / "missing", ".py", keep=1)  # no folder: nothing to do


def test_generating_models_trims_the_model_cache_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENENV_GEN_CACHE", str(tmp_path))
    monkeypatch.setattr(layout, "CACHE_ENTRIES", 2)
    cached: dict[str, str] = {}
    for age, name in enumerate(("echo", "maze")):
        before = set(_files(tmp_path, ".py"))
        generate_models(resolve_spec(name))
        (cached[name],) = set(_files(tmp_path, ".py")) - before
        # Written an hour ago, echo's first: the order never rests on the clock's resolution
        # (three writes can fall within one tick of the file system's timestamps).
        os.utime(tmp_path / cached[name], ns=(time.time_ns() - 3_600_000_000_000 + age,) * 2)
    generate_models(resolve_spec("echo"))  # a hit: echo's models are now the most recently used
    generate_models(resolve_spec("snake"))  # one past the limit: maze's, the least recently used, go
    assert cached["maze"] not in _files(tmp_path, ".py")
    assert cached["echo"] in _files(tmp_path, ".py") and len(_files(tmp_path, ".py")) == 2

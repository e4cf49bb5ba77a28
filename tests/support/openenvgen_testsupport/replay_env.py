"""Replay servers over the project's captures: the runtime's replay (`openenvgen_runtime.replay`,
what `openenv-gen replay NAME` serves) reading `tests/fixtures/captures`, which holds every
env `openenv-gen capture` recorded (see that folder's README), not only the sessions the runtime
ships.

Serve one with :func:`openenvgen_testsupport.servers.serve_app`::

    replay = make_replay_app("textarena_env")
    with serve_app(replay.app, ready_path="/health") as url:
        ...
"""

from __future__ import annotations

from pathlib import Path

from openenvgen_runtime.replay.recording import Recording, ReplayError, ReplayLog, wire_action
from openenvgen_runtime.replay.recording import load_recording as _load_recording
from openenvgen_runtime.replay.server import Replay, catalog_action, server_action_class
from openenvgen_runtime.replay.server import make_replay_app as _make_replay_app
from openenvgen_testsupport.paths import FIXTURES

__all__ = [
    "CAPTURES",
    "Recording",
    "Replay",
    "ReplayError",
    "ReplayLog",
    "catalog_action",
    "load_recording",
    "make_replay_app",
    "server_action_class",
    "wire_action",
]

CAPTURES = FIXTURES / "captures"
"""The captures kept in the project, one folder per upstream env (see its README)."""


def load_recording(env_folder: str, *, episode: str = "", root: Path = CAPTURES) -> Recording:
    """The session recorded in ``root/env_folder`` (the runtime's `load_recording`)."""
    return _load_recording(env_folder, episode=episode, root=root)


def make_replay_app(
    env_folder: str, *, episode: str = "", root: Path = CAPTURES, max_concurrent_envs: int = 8
) -> Replay:
    """An openenv app replaying the session recorded in ``root/env_folder`` (the runtime's)."""
    return _make_replay_app(env_folder, episode=episode, root=root, max_concurrent_envs=max_concurrent_envs)

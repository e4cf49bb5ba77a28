"""What the runtime changes process-wide, installed once where verifiers hands it the process.

verifiers builds the env (`load_environment`, for `vf-eval`, every env-server worker and
`vf-gepa` alike) after it has set up its own logging and before anything is launched: the
runtime's `AdapterEnv` installs these hooks there (`install`), never a pool or a launch.

- The runtime's log records go where verifiers sends its own: `vf-eval` routes only the
  `verifiers.v1` logger to its console and log file, so without this, launch progress and
  fleet warnings would never reach the user.
- An uncaught `LaunchError` prints as `error: MESSAGE` instead of a traceback: a launch
  failure is the user's to fix (a wrong image, path or env), and its message (with the
  server's log tail) says all there is. Other exceptions keep Python's hook.
- The soft open-file limit is raised to the hard one (`open_files.raise_soft_limit`): every
  episode in flight holds a session and a model connection, and the soft limit most Linux
  installs give a user (1,024) is far below what a trainer's batch needs.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType

from openenvgen_runtime.launching import open_files
from openenvgen_runtime.launching.errors import LaunchError

RUNTIME_LOGGER = "openenvgen_runtime"
VERIFIERS_LOGGER = "verifiers.v1"


def install() -> None:
    """Route the runtime's logs like verifiers', print launch failures as one line and raise
    the soft open-file limit; calling it again changes nothing."""
    _route_logs_like_verifiers()
    _install_error_hook()
    open_files.raise_soft_limit()


def _route_logs_like_verifiers() -> None:
    ours = logging.getLogger(RUNTIME_LOGGER)
    library = logging.getLogger(VERIFIERS_LOGGER)
    handlers = [h for h in library.handlers if not isinstance(h, logging.NullHandler)]
    if not handlers or ours.handlers:
        return
    for handler in handlers:
        ours.addHandler(handler)
    ours.setLevel(library.level)
    ours.propagate = False


def _install_error_hook() -> None:
    previous = sys.excepthook
    if getattr(previous, "openenvgen", False):
        return

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, LaunchError):
            print(f"error: {error}", file=sys.stderr)
        else:
            previous(kind, error, tb)

    hook.openenvgen = True  # type: ignore[attr-defined]  # our mark on the function, checked above
    sys.excepthook = hook

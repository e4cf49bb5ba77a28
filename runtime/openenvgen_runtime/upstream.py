"""OpenEnv's own client and providers, imported without its server's web UI.

Any `openenv.core` import runs the whole server package, Gradio web interface included:
about a third of an eval process's start-up on these machines, for a UI that only a
server mounts. OpenEnv already treats that module as optional (`env_server` catches its
ModuleNotFoundError), so the first import here is made with it marked missing. The mark
is removed straight after, so a server created later in the same process still imports
its web interface when it wants one.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

WEB_UI_MODULE = "openenv.core.env_server.web_interface"
_lock = threading.Lock()


def openenv_module(name: str) -> ModuleType:
    """`importlib.import_module(name)` for an `openenv.*` module, skipping the web UI if
    `openenv.core` is not imported yet."""
    if "openenv.core" in sys.modules:
        return importlib.import_module(name)
    with _lock:  # launches import from executor threads
        marked = WEB_UI_MODULE not in sys.modules
        if marked:
            sys.modules[WEB_UI_MODULE] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError
        try:
            return importlib.import_module(name)
        finally:
            if marked and sys.modules.get(WEB_UI_MODULE, ...) is None:
                del sys.modules[WEB_UI_MODULE]

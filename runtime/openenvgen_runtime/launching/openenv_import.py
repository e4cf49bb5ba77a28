"""Importing OpenEnv's public modules without its server's Gradio web UI.

Any `openenv.core` import runs the whole server package, Gradio web interface included:
measured on the development machines, `import openenv.core` takes 4.0-6.0 s with the UI and
1.3-1.5 s without it, at the start of every eval process, for a UI only a server mounts.
OpenEnv treats that module as optional (`env_server` catches its ModuleNotFoundError), so
the first import made here marks it missing. The mark is removed straight after, so a server
created later in the same process still imports its web interface when it wants one.
`tests/runtime/launching/test_openenv_import.py` fails if an OpenEnv upgrade moves the
module or stops treating it as optional.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

WEB_UI_MODULE = "openenv.core.env_server.web_interface"
"""OpenEnv's Gradio web UI, which `openenv.core.env_server` imports only if it can."""
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

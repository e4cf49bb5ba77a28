"""Everything of OpenEnv's that the runtime uses and OpenEnv does not make public, in one place.

OpenEnv's public API (`openenv.core`'s `GenericEnvClient`, the providers of
`openenv.core.containers.runtime`) is imported through `openenv_module`; what is left here
has no public way and may change in any OpenEnv release (`step` is the client's own step,
minus the task it starts for every reply). Each name says why the runtime needs it, and
`tests/runtime/test_openenv_private.py` fails, naming it and the installed OpenEnv
version, when an upgrade changes it.

Importing: any `openenv.core` import runs the whole server package, Gradio web interface
included: about a third of an eval process's start-up on these machines, for a UI that
only a server mounts. OpenEnv already treats that module as optional (`env_server` catches
its ModuleNotFoundError), so the first import made here marks it missing. The mark is
removed straight after, so a server created later in the same process still imports its
web interface when it wants one.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import threading
import weakref
from types import ModuleType
from typing import Any

from openenvgen_runtime import json_text
from openenvgen_runtime.reply_deadline import ReplyDeadline

WEB_UI_MODULE = "openenv.core.env_server.web_interface"
"""Private module: OpenEnv's Gradio web UI, which `openenv.core.env_server` imports only if
it can; marking it missing is the one way to import OpenEnv's client without Gradio."""
UV_PROVIDER_MODULE = "openenv.core.containers.runtime.uv_provider"
"""Not re-exported by OpenEnv (only `UVProvider` is): home of the UV helpers below."""
_lock = threading.Lock()
_deadlines: weakref.WeakKeyDictionary[Any, ReplyDeadline] = weakref.WeakKeyDictionary()
"""Each WebSocket connection's reply timeout: it lives as long as the connection."""


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


def git_url_prefix() -> str:
    """`uv_provider.GIT_URL_PREFIX` (not exported): marks a `project_path` that is a git URL
    to clone, as OpenEnv's `UVProvider` reads it."""
    prefix: str = openenv_module(UV_PROVIDER_MODULE).GIT_URL_PREFIX
    return prefix


def clone_git_project(git_url: str, timeout_s: float) -> str:
    """`uv_provider._clone_git_project`: clone a `git+URL` project to a temporary folder and
    return it. Public only inside `UVProvider.start`, which the runtime replaces (it logs
    the server's output and owns its process group)."""
    folder: str = openenv_module(UV_PROVIDER_MODULE)._clone_git_project(git_url, timeout_s)
    return folder


async def step(client: Any, action: dict[str, Any]) -> Any:
    """`await client.step(action)` for an async `GenericEnvClient` already connected on this
    event loop, as OpenEnv's `EnvClient._step_async` does it (the same message, reply, error
    and result, the same timeout), but awaiting the reply under the connection's
    `ReplyDeadline` instead of `asyncio.wait_for`, which runs the receive as a task of its
    own and arms a timer for it: that task, the timer and the loop iterations they take cost
    more per step than everything the runtime does besides. Any other client (not connected
    yet, on another loop, used synchronously) goes through `client.step`.

    Private: `EnvClient._ws`, `_ws_loop`, `_execution_mode`, `_message_timeout`,
    `_step_payload` and `_parse_result`."""
    ws = getattr(client, "_ws", None)
    if ws is None or client._execution_mode != "async" or client._ws_loop is not asyncio.get_running_loop():
        return await client.step(action)
    deadline = _deadlines.get(ws)
    if deadline is None:
        deadline = _deadlines[ws] = ReplyDeadline()
    await ws.send(json_text.dumps({"type": "step", "data": client._step_payload(action)}))
    raw = await deadline.wait(ws.recv(), client._message_timeout)
    response = json.loads(raw)
    if response.get("type") == "error":
        error = response.get("data", {})
        raise RuntimeError(
            f"Server error: {error.get('message', 'Unknown error')} (code: {error.get('code', 'UNKNOWN')})"
        )
    return client._parse_result(response.get("data", {}))

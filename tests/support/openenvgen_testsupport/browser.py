"""Headless Chromium driven over the DevTools protocol, to measure a page's layout in a real browser.

`Chromium` starts Debian's `chromium` with a throwaway profile and `--remote-debugging-port=0`,
reads the DevTools address it prints, and talks to it with the `websockets` client (no
selenium or playwright download). `evaluate(url, script)` loads a page at the window size
given and returns the value of a JavaScript expression evaluated in it. The background
networking flags keep it from dialling Google's services, which a closed network refuses.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import itertools
import json
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
"""Headless, offline-friendly, with a DevTools port of the system's choosing."""


def chromium_executable() -> str | None:
    """Debian's `chromium` (or a `chromium-browser`/`google-chrome`) on PATH, or None."""
    return next(
        (found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None
    )


class BrowserError(RuntimeError):
    """Chromium did not start, or a DevTools command failed."""


class Chromium:
    """One headless Chromium for the length of a `with` block; each `evaluate` opens a fresh tab."""

    def __init__(self, width: int = 1400, height: int = 900, *, executable: str | None = None, timeout: float = 60):
        self.width, self.height, self.timeout = width, height, timeout
        self.executable = executable or chromium_executable()
        if self.executable is None:
            raise BrowserError("no chromium on PATH (Debian: apt-get install chromium)")
        self._ids = itertools.count(1)
        self._process: subprocess.Popen[str] | None = None
        self._socket: ClientConnection | None = None
        self._opened = contextlib.ExitStack()

    def __enter__(self) -> Chromium:
        with contextlib.ExitStack() as opening:
            profile = opening.enter_context(tempfile.TemporaryDirectory(prefix="chromium-profile-"))
            self._process = subprocess.Popen(
                [
                    str(self.executable),
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={self.width},{self.height}",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            opening.callback(_stop, self._process)
            address = self._devtools_address()
            self._socket = opening.enter_context(
                connect(address, max_size=None, open_timeout=self.timeout, ping_interval=None)
            )
            self._opened = opening.pop_all()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._opened.close()

    def _devtools_address(self) -> str:
        """The browser's `ws://127.0.0.1:PORT/devtools/browser/ID`, read from its stderr."""
        assert self._process is not None and self._process.stderr is not None
        found: list[str] = []
        seen: list[str] = []

        def read() -> None:
            assert self._process is not None and self._process.stderr is not None
            for line in self._process.stderr:
                seen.append(line)
                if match := re.search(r"DevTools listening on (ws://\S+)", line):
                    found.append(match.group(1))
                    break
            # Keep draining, so a chatty browser never blocks on a full pipe.
            for _ in self._process.stderr:
                pass

        threading.Thread(target=read, daemon=True).start()
        waited = 0.0
        while not found and waited < self.timeout and self._process.poll() is None:
            threading.Event().wait(0.1)
            waited += 0.1
        if not found:
            raise BrowserError("chromium printed no DevTools address; its stderr:\n" + "".join(seen[-20:]))
        return found[0]

    def _call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        return self._send(method, params, session, until=None)

    def _send(
        self, method: str, params: dict[str, Any] | None, session: str | None, until: str | None
    ) -> dict[str, Any]:
        """Send one command; return its result, or (with `until`) the first such event of its session
        (which may arrive before the command's own reply)."""
        assert self._socket is not None
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._socket.send(json.dumps(message))
        answered: dict[str, Any] | None = None
        event: dict[str, Any] | None = None
        while answered is None or (until is not None and event is None):
            reply = json.loads(self._socket.recv(timeout=self.timeout))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                answered = reply.get("result", {})
            elif until and reply.get("method") == until and reply.get("sessionId") == session:
                event = reply.get("params", {})
        return event if until is not None and event is not None else answered

    def evaluate(self, url: str, expression: str) -> Any:
        """Open `url` in a new tab at this browser's window size, wait for its load event and
        its fonts, and return the JSON value of `expression` (a promise is awaited)."""
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            self._call(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
                session,
            )
            self._call("Page.enable", session=session)
            self._send("Page.navigate", {"url": url}, session, until="Page.loadEventFired")
            self._call("Runtime.evaluate", {"expression": "document.fonts.ready", "awaitPromise": True}, session)
            result = self._call(
                "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, session
            )
        finally:
            self._call("Target.closeTarget", {"targetId": target})
        if "exceptionDetails" in result:
            raise BrowserError(f"{url}: {result['exceptionDetails']}")
        return result["result"].get("value")


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def page_url(base: str, page: str | Path) -> str:
    """The URL of a site page (`catalog.md` → `BASE/catalog/`), as mkdocs lays pages out."""
    path = str(page).removesuffix(".md")
    path = "" if path == "index" else path.removesuffix("/index") + "/"
    return f"{base.rstrip('/')}/{path}"


@contextlib.contextmanager
def serve_directory(folder: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """A built static site served on loopback for the length of a `with` block: its base URL."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer((host, 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{host}:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

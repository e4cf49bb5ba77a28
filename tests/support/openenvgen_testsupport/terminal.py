"""A command in a real terminal, read and typed at as a person does (tmux, 200×50).

Each terminal has a tmux server of its own (`-L`), started with the environment given, so a
command sees that environment and nothing of another test's terminal; the command's exit
status is written to a file when it ends. tmux must be installed (the tests that use this
skip with that reason when it is not: `needs_tmux`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from types import TracebackType

import pytest

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")

_serial = count()


class Terminal:
    """`command` (a shell line) running in a terminal; `with Terminal(...) as t:` ends it."""

    def __init__(self, command: str, *, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.socket = f"openenvgen-{os.getpid()}-{next(_serial)}"
        self._folder = tempfile.TemporaryDirectory(prefix="openenvgen-terminal-")
        self._status = Path(self._folder.name) / "status"
        line = f"{command}; echo $? > {shlex.quote(str(self._status))}"
        start = ["new-session", "-d", "-x", "200", "-y", "50", *(["-c", str(cwd)] if cwd else []), line]
        self._tmux(*start, env=env)

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        run = subprocess.run(["tmux", "-L", self.socket, *args], env=env, capture_output=True, text=True, check=True)
        return run.stdout

    def screen(self) -> str:
        """What the terminal shows, with up to 200 lines scrolled past."""
        return self._tmux("capture-pane", "-p", "-S", "-200")

    def wait_for(self, text: str, timeout: float = 180) -> str:
        """The screen once it shows `text`."""
        return self._wait(lambda shown: text in shown, f"never shown: {text!r}", timeout)

    def wait_for_prompt(self, timeout: float = 180) -> str:
        """The screen once its last line is the input prompt `>` (tmux drops its trailing space)."""
        return self._wait(lambda shown: shown.rstrip().splitlines()[-1:] == [">"], "no input prompt", timeout)

    def _wait(self, shown_enough: Callable[[str], bool], problem: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if shown_enough(shown):
                return shown
            time.sleep(0.3)
        raise AssertionError(f"{problem}\n{self.screen()}")

    def type(self, line: str) -> None:
        """`line`, then Enter."""
        self._tmux("send-keys", line, "Enter")

    def press(self, key: str) -> None:
        """One key as tmux names it (`C-c`)."""
        self._tmux("send-keys", key)

    def exit_status(self, timeout: float = 30) -> int:
        """The command's exit status, once it has ended."""
        deadline = time.monotonic() + timeout
        while not self._status.exists() or not self._status.read_text().strip():
            assert time.monotonic() < deadline, f"the command has not ended\n{self.screen()}"
            time.sleep(0.2)
        return int(self._status.read_text())

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        self._folder.cleanup()

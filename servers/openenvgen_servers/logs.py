"""A launched server's log on the host, bounded: rotated at a size, a few files kept.

A server can write without end to its stdout (an env that runs model-written code in its
server process: a REPL, a notebook), so no log of one grows without bound. `LogLimit` is the
bound: a container's (`docker run`, `docker service create`) is Docker's json-file driver
rotating at `max_size` and keeping `max_files` files (`docker_args`); a UV server's output
is read from a pipe into a `RotatingLog` with the same two numbers. Either way a server's log
takes at most `max_size` x `max_files` bytes on the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_SIZE = re.compile(r"^([0-9]+)([bkmg]?)$")
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
"""Docker's json-file driver reads `max-size` in decimal units (go-units' FromHumanSize)."""
CHUNK = 1 << 20
"""Bytes read from a UV server's output at a time, and the pipe's size where Linux allows it
(a larger pipe, fewer reads: a server that floods its output costs this process little)."""


@dataclass(frozen=True)
class LogLimit:
    """How large one server's log may grow: files of `max_size`, `max_files` of them."""

    max_size: str = "10m"
    """Docker's size form: digits and an optional b, k, m or g (decimal units)."""
    max_files: int = 3

    def __post_init__(self) -> None:
        if _SIZE.match(self.max_size.strip().lower()) is None or self.max_files < 1:
            raise ValueError(f"a log limit is a size like 10m and at least one file, not {self!r}")

    @property
    def size_bytes(self) -> int:
        """`max_size` in bytes, as Docker reads it."""
        match = _SIZE.match(self.max_size.strip().lower())
        assert match is not None
        return int(match.group(1)) * _UNITS[match.group(2)]

    @property
    def total_bytes(self) -> int:
        """The most a server's log takes on the host, every file together."""
        return self.size_bytes * self.max_files

    def docker_args(self) -> list[str]:
        """`docker run` / `docker service create` arguments: the json-file driver, rotated."""
        return [
            "--log-driver",
            "json-file",
            "--log-opt",
            f"max-size={self.max_size}",
            "--log-opt",
            f"max-file={self.max_files}",
        ]


DEFAULT_LOG_LIMIT = LogLimit()
"""The taskset's defaults (`log_max_size`, `log_max_files`): 30 MB per server at most."""


def rotated(path: Path, index: int) -> Path:
    """The `index`-th older file of the log at `path` (`server.log.1` is the last one full)."""
    return path.with_name(f"{path.name}.{index}")


def log_files(path: Path, limit: LogLimit) -> list[Path]:
    """The log's files that exist, oldest first, the current one last."""
    candidates = [rotated(path, i) for i in range(limit.max_files - 1, 0, -1)] + [path]
    return [p for p in candidates if p.exists()]


class RotatingLog:
    """Copies a server's output (a pipe) into its log file, rotating as Docker's json-file
    driver does: once the current file would pass `max_size` it becomes `.1` (`.1` becomes
    `.2`, ...), the oldest beyond `max_files` is dropped, and a new file starts with
    `header` (the command that was run, so every file says what wrote it)."""

    def __init__(self, source: IO[bytes], path: Path, limit: LogLimit, header: bytes) -> None:
        self.source = source
        self.path = path
        self.limit = limit
        self.header = header[: limit.size_bytes // 2]
        self._out = open(path, "ab")  # noqa: SIM115 - closed by the copying thread
        self._written = path.stat().st_size
        self._thread = threading.Thread(target=self._copy, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        fd = self.source.fileno()
        with contextlib.suppress(OSError, AttributeError):  # F_SETPIPE_SZ: Linux only, capped by pipe-max-size
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK)
        try:
            while chunk := os.read(fd, CHUNK):
                while chunk:
                    room = self.limit.size_bytes - self._written
                    if room <= 0:
                        self._rotate()
                        continue
                    self._out.write(chunk[:room])
                    self._out.flush()
                    self._written += min(room, len(chunk))
                    chunk = chunk[room:]
        except (OSError, ValueError):  # the log's folder removed, or the pipe closed under it
            pass
        finally:
            self._out.close()
            self.source.close()

    def _rotate(self) -> None:
        self._out.close()
        if self.limit.max_files == 1:
            self.path.unlink(missing_ok=True)
        else:
            for i in range(self.limit.max_files - 1, 1, -1):
                if rotated(self.path, i - 1).exists():
                    os.replace(rotated(self.path, i - 1), rotated(self.path, i))
            os.replace(self.path, rotated(self.path, 1))
        self._out = open(self.path, "wb")  # noqa: SIM115 - closed by the copying thread
        self._out.write(self.header)
        self._written = len(self.header)

    def join(self, timeout: float) -> None:
        """Wait for the copy to end (the server's output closed)."""
        self._thread.join(timeout)

"""Another user of the training host, made for a test: what it can do with a run's loopback URLs.

`other_user(config)` makes a real OS user (`useradd`, no home, no login shell) and removes it
after; `probe_as(user, url)` runs, as that user (`setpriv`: its uid and gid, no other
group, no capability), a standard-library Python that knows what `ss` or `/proc/net/tcp`
would tell it, the run's port, but not the run's URL: it resets, steps, reads the schema
and opens the WebSocket at the port's root, under a guessed first segment, and with paths
that try to climb out of one. It returns each attempt's status line (or the error's name).
Tests need root to make a user: without it they skip with a printed reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from openenvgen_testsupport.skips import skip_loudly

__all__ = ["REFUSED", "LocalUser", "other_user", "probe_as"]

PYTHON = "/usr/bin/python3"
"""The system's interpreter, which any user may run."""
REFUSED = "HTTP/1.1 403 "
"""How a relay's refusal starts."""

PROBE = r"""
import json, socket, sys
host, port, code, timeout, source = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
STEP = json.dumps({"action": {"guess": 7, "code": code}}).encode()
UPGRADE = ("Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")

def ask(method, path, body=b"", headers=("Connection: close",)):
    try:
        s = socket.create_connection((host, port), timeout=timeout, source_address=(source, 0) if source else None)
    except OSError as e:
        return type(e).__name__
    try:
        head = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}",
                "Content-Type: application/json", "Authorization: Bearer guessed", *headers]
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"

found = {}
for prefix in ("", "/guessed", "/x/..", "/%2e%2e", "/"):
    found[f"GET {prefix}/health"] = ask("GET", f"{prefix}/health")
    found[f"GET {prefix}/schema"] = ask("GET", f"{prefix}/schema")
    found[f"POST {prefix}/reset"] = ask("POST", f"{prefix}/reset", b"{}")
    found[f"POST {prefix}/step"] = ask("POST", f"{prefix}/step", STEP)
    found[f"GET {prefix}/ws"] = ask("GET", f"{prefix}/ws", headers=UPGRADE)
print(json.dumps(found))
"""


@dataclass(frozen=True)
class LocalUser:
    name: str
    uid: int
    gid: int


@contextmanager
def other_user(config: pytest.Config) -> Iterator[LocalUser]:
    """A new OS user of this machine for the test's duration (skipped, loudly, without root)."""
    if os.geteuid() != 0:
        skip_loudly(config, "tests as another local user", "making a user (useradd) needs root")
    name = f"oeg{uuid.uuid4().hex[:10]}"
    subprocess.run(
        ["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        ids = subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True).stdout
        gid = subprocess.run(["id", "-g", name], check=True, capture_output=True, text=True).stdout
        yield LocalUser(name, int(ids), int(gid))
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(user: LocalUser, *command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`command` run as `user`: its uid and gid alone, no capability, an empty environment."""
    setpriv = ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--inh-caps=-all"]
    return subprocess.run([*setpriv, "--", *command], capture_output=True, text=True, timeout=timeout, env={}, cwd="/")


def probe_as(
    user: LocalUser, url: str, code: str = "print('other user')", *, timeout: float = 10, source: str = ""
) -> dict[str, str]:
    """What `user` gets from the server whose run's URL is `url`, knowing only its host and
    port; its steps send `code` (for an env that runs the action's code); each attempt waits
    `timeout` seconds for the connection and for an answer, and leaves from address `source`
    when given (any user may pick any of the machine's addresses)."""
    parts = urlsplit(url)
    args = [parts.hostname or "", str(parts.port), code, str(timeout), source]
    done = as_user(user, PYTHON, "-c", PROBE, *args)
    assert done.returncode == 0, done.stderr
    found: dict[str, str] = json.loads(done.stdout)
    print(f"as {user.name} (uid {user.uid}) at {parts.hostname}:{parts.port}:", found)
    return found

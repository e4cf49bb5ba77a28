"""A `base_url` fleet behind an authenticating TLS ingress: a real OpenEnv server (the guess
env) behind TLS on 127.0.0.1 with a CA made here, admitting only requests that carry one
header. With `base_url_headers` (the value from a named variable) and `ca_bundle` every
episode plays, over `https://` and `wss://` URLs alike; a variable not set, a wrong value
or no CA is one line before any episode; the header's value is in no log and no trace.
The loopback relay the sessions take handles keep-alive requests and the WebSocket upgrade.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.relay import SessionRelays
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_servers.access import tls_context
from openenvgen_testsupport.adapters import load_env, model_context, outcome
from openenvgen_testsupport.local_user import REFUSED, other_user, probe_as
from openenvgen_testsupport.paths import UV_FIXTURE_PROJECT
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

pytestmark = pytest.mark.rollout

HEADER = "X-Fleet-Key"
VARIABLE = "OPENENVGEN_TEST_FLEET_KEY"


def guess_app() -> Any:
    sys.path.insert(0, str(UV_FIXTURE_PROJECT))
    try:
        from guess_env.server import app
    finally:
        sys.path.remove(str(UV_FIXTURE_PROJECT))
    return app


class Reached:
    """ASGI middleware: remembers every request that reached the app (past the fleet's gate)."""

    def __init__(self, app: Any) -> None:
        self.app, self.paths = app, []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            self.paths.append(f"{scope.get('method', 'WS')} {scope['path']}")
        await self.app(scope, receive, send)


class Fleet:
    def __init__(self, url: str, ca: Path, key: str, gate: Any, reached: Reached) -> None:
        self.url, self.ca, self.key, self.gate, self.reached = url, ca, key, gate, reached


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    tls = pytest.importorskip("openenvgen_testsupport.tls", reason="the TLS fleet needs `cryptography`")
    ca = tls.make_ca(tmp_path_factory.mktemp("ca"))
    key = secrets.token_urlsafe(24)
    reached = Reached(guess_app())
    gate = tls.RequireHeader(reached, HEADER, key)
    with tls.serve_tls(gate, ca) as url:
        yield Fleet(url, ca.ca, key, gate, reached)


def fleet_taskset(fleet: Fleet, url: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": url or fleet.url,
        "base_url_headers": {HEADER: VARIABLE},
        "ca_bundle": str(fleet.ca),
        **extra,
    }


def play(env: Any, repeat: int = 3) -> list[Any]:
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with serve_app(model) as model_url:

        async def main() -> list[Any]:
            async with env.serving():
                ctx = model_context(str(model_url))
                return await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * repeat))

        return asyncio.run(main())


def start(env: Any) -> None:
    async def main() -> None:
        async with env.serving():
            raise AssertionError("started")

    asyncio.run(main())


@pytest.mark.parametrize("scheme", ["https", "wss"])
def test_episodes_play_with_the_header_and_the_ca(
    fleet: Fleet, guess_pkg: str, scheme: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(VARIABLE, fleet.key)
    url = fleet.url.replace("https://", f"{scheme}://")
    caplog.set_level(logging.DEBUG)
    episodes = play(load_env(guess_pkg, fleet_taskset(fleet, url)))
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 3
    assert fleet.key not in caplog.text
    assert fleet.key not in repr([e.traces for e in episodes])


def test_a_variable_not_set_is_one_line_before_any_episode(
    fleet: Fleet, guess_pkg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    with pytest.raises(LaunchError) as info:
        start(load_env(guess_pkg, fleet_taskset(fleet)))
    assert str(info.value) == (
        f"base_url_headers: the {HEADER} header takes its value from ${VARIABLE}, which is not set in this environment"
    )


def test_a_wrong_header_is_one_line_without_the_value(
    fleet: Fleet, guess_pkg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = secrets.token_urlsafe(24)
    monkeypatch.setenv(VARIABLE, wrong)
    with pytest.raises(LaunchError) as info:
        start(load_env(guess_pkg, fleet_taskset(fleet)))
    message = str(info.value)
    assert "\n" not in message and "HTTP 401" in message and fleet.url in message, message
    assert wrong not in message and fleet.key not in message


def test_without_the_ca_the_server_is_not_trusted(
    fleet: Fleet, guess_pkg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, fleet.key)
    taskset = fleet_taskset(fleet)
    del taskset["ca_bundle"]
    with pytest.raises(LaunchError) as info:
        start(load_env(guess_pkg, taskset))
    message = str(info.value)
    assert "\n" not in message and "CERTIFICATE_VERIFY_FAILED" in message, message


def test_a_ca_bundle_that_cannot_be_read_is_one_line(
    fleet: Fleet, guess_pkg: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(VARIABLE, fleet.key)
    (tmp_path / "not.pem").write_text("not a certificate\n")
    for path, says in ((tmp_path / "absent.pem", "does not exist"), (tmp_path / "not.pem", "is not a readable PEM")):
        with pytest.raises(LaunchError) as info:
            start(load_env(guess_pkg, fleet_taskset(fleet, ca_bundle=str(path))))
        assert str(info.value).startswith(f"ca_bundle: {path} {says}"), str(info.value)


def test_the_relay_carries_keep_alive_requests_and_the_websocket_upgrade(fleet: Fleet) -> None:
    """Straight at the relay: three requests on one kept-alive connection, each with the
    header added upstream, then an OpenEnv session (the WebSocket upgrade) through it."""
    from openenv.core import GenericEnvClient

    async def main() -> tuple[list[int], int, Any, Any]:
        access = ServerAccess(tls_context(str(fleet.ca)))
        access.admit(fleet.url, {HEADER: fleet.key})
        relays = SessionRelays(access, timeout=10)
        try:
            relay = await relays.session_url(fleet.url)
            assert relay.startswith("http://127.0.0.1:") and await relays.session_url(fleet.url) == relay
            refused_before = fleet.gate.refused
            async with httpx.AsyncClient(base_url=relay, trust_env=False) as http:
                statuses = [(await http.get("/health")).status_code, (await http.get("/schema")).status_code]
                statuses.append((await http.post("/reset", json={})).status_code)
            client = GenericEnvClient(base_url=relay, connect_timeout_s=10, message_timeout_s=10)
            try:
                reset = await client.reset(seed=1)
                step = await client.step({"guess": 7})
            finally:
                await client.close()
            return statuses, fleet.gate.refused - refused_before, reset, step
        finally:
            await relays.close()

    statuses, refused, reset, step = asyncio.run(main())
    assert statuses == [200, 200, 200] and refused == 0
    assert reset.done is False and step.done is True and step.reward == 1.0


def test_another_local_user_gets_nothing_through_the_fleets_relay(
    fleet: Fleet, guess_pkg: str, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """As a second OS user that sees the relay's port (not its URL): every reset, step,
    schema read and WebSocket is refused by the relay, so none reaches the fleet, with the
    header or without; the run's episodes play on."""
    monkeypatch.setenv(VARIABLE, fleet.key)
    model = ScriptedChatModel(Script(["5", '{"guess": 7}']))
    with other_user(pytestconfig) as user, serve_app(model) as model_url:
        env = load_env(guess_pkg, fleet_taskset(fleet))

        async def main() -> tuple[str, dict[str, str], list[str], int, list[Any]]:
            async with env.serving():
                (server,) = env.pool.servers
                url = await env.pool.session_url(server)
                reached, refused = len(fleet.reached.paths), fleet.gate.refused
                found = await asyncio.to_thread(probe_as, user, url)
                theirs = fleet.reached.paths[reached:]
                ctx = model_context(str(model_url))
                episodes = await asyncio.gather(*(env.run_episode(t, ctx) for t in list(env.taskset) * 2))
                return url, found, theirs, fleet.gate.refused - refused, list(episodes)

        url, found, theirs, refused, episodes = asyncio.run(main())
    assert url.startswith("http://127.0.0.1:")
    assert all(status.startswith(REFUSED) for status in found.values()), found
    assert theirs == [] and refused == 0
    assert [outcome(e) for e in episodes] == [(True, "env_done", 1.0)] * 2

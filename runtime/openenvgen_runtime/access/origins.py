"""The headers and TLS trust a run presents to its servers, by origin.

One `ServerAccess` per server pool: each server that needs headers (a Swarm replica's
`Authorization: Bearer SECRET`, a `base_url` fleet's `base_url_headers`) is admitted with
them under its origin (scheme, host, port), and they go on every request to that origin
and on no other: `ServerAccess` is an `httpx.Auth`, set on the pool's HTTP client, and the
session relay asks it for the headers of a WebSocket session. `ssl_context` is the one TLS
context of every `https://`/`wss://` connection: the system's trust, or `ca_bundle`'s CAs.
Reading header values from variables and the CA bundle is `openenvgen_servers.access`, which
the generator's commands share.

Header values are secrets: nothing here logs them or puts them in a message or a repr.
"""

from __future__ import annotations

import ssl
from collections.abc import Generator, Mapping
from urllib.parse import urlsplit

import httpx

from openenvgen_servers.access import tls_context


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) or ws(s) URL, the default port filled in."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


class ServerAccess(httpx.Auth):
    """The headers each admitted origin gets, and the TLS context of every connection."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context or tls_context()
        self._headers: dict[tuple[str, str, int], dict[str, str]] = {}

    def __repr__(self) -> str:  # never the headers' values
        return f"ServerAccess({len(self._headers)} origins)"

    def admit(self, url: str, headers: Mapping[str, str]) -> None:
        """Requests to `url`'s origin carry `headers` from now on (none: nothing changes)."""
        if headers:
            self._headers[origin(url)] = dict(headers)

    def revoke(self, url: str) -> None:
        """Requests to `url`'s origin carry nothing from now on (a server that is gone)."""
        self._headers.pop(origin(url), None)

    def headers_for(self, url: str) -> dict[str, str]:
        """The headers a request to `url` carries ({} for an origin not admitted)."""
        return dict(self._headers.get(origin(url), {}))

    def needs_relay(self, url: str) -> bool:
        """Whether OpenEnv's client cannot reach `url` on its own: headers to add, or TLS
        with this context (its client would use the default one)."""
        return bool(self._headers.get(origin(url))) or origin(url)[0] == "https"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.update(self._headers.get(origin(str(request.url)), {}))
        yield request

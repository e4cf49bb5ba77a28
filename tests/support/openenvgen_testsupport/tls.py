"""A TLS fleet server for tests: a CA made here, and a real OpenEnv app behind TLS on
127.0.0.1 that admits only requests (HTTP and WebSocket) carrying one header.

`make_ca` writes a fresh CA and a server certificate for 127.0.0.1 and localhost
(`cryptography`); `serve_tls` runs an ASGI app on uvicorn with that certificate, in a
thread of this process; `RequireHeader` is the authenticating ingress: 401 for an HTTP
request without the header's value, a refused handshake (403) for a WebSocket.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TestCA:
    ca: Path
    """The CA's certificate (PEM): what `ca_bundle` names."""
    cert: Path
    key: Path
    """The server's certificate (for 127.0.0.1 and localhost) and key."""


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(folder: Path) -> TestCA:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("openenvgen test CA"))
        .issuer_name(_name("openenvgen test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    made = TestCA(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    made.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    made.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    made.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return made


class RequireHeader:
    """ASGI middleware: only requests whose `name` header is `value` reach `app`."""

    def __init__(self, app: Any, name: str, value: str) -> None:
        self.app, self.name, self.value = app, name.lower().encode(), value.encode()
        self.refused = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            given = [v for k, v in scope["headers"] if k.lower() == self.name]
            if given != [self.value]:
                self.refused += 1
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = b'{"detail":"missing or wrong credentials"}'
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


@contextmanager
def serve_tls(app: Any, ca: TestCA, *, startup_timeout: float = 15.0) -> Iterator[str]:
    """Serve `app` over TLS with `ca`'s server certificate on 127.0.0.1; yields `https://127.0.0.1:PORT`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
        log_level="warning",
        ssl_certfile=str(ca.cert),
        ssl_keyfile=str(ca.key),
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the TLS test server did not start")
            time.sleep(0.01)
        yield f"https://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()

"""What a request to a gated server carries: headers whose values come from environment
variables, and the CA certificates its TLS is verified against. One way for the runtime (a
`base_url` fleet's `base_url_headers` and `ca_bundle`) and the generator (`--header
NAME=VARIABLE`, `--ca-bundle` of generation, `check`, `regen`, `doctor` and `play`).

A header's value is a secret (a bearer token): it is read from the variable when a request
is made, never written in a config, a lock, a snapshot, a command line or a message.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_OPTION = "--header NAME=VARIABLE"
"""How the command line gives a header (its value read from $VARIABLE)."""


class AccessError(ValueError):
    """A header or variable name that is not one, a variable not set, or a CA bundle that
    cannot be read: one line."""


def header_names(names: Mapping[str, str], *, setting: str) -> dict[str, str]:
    """`{header: VARIABLE}` checked: each a header name and an environment variable's name
    (never a value); an AccessError names the first that is not, under `setting`."""
    for header, variable in names.items():
        if not isinstance(header, str) or not _TOKEN.match(header):
            raise AccessError(f"{setting}: {header!r} is not a header name")
        if not isinstance(variable, str) or not _VARIABLE.match(variable):
            raise AccessError(
                f"{setting}.{header}: {variable!r} is not an environment variable's name "
                "(the header's value is read from that variable, never written where it is configured)"
            )
    return dict(names)


def header_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """`--header NAME=VARIABLE` options as `{NAME: VARIABLE}`, checked (`header_names`)."""
    names: dict[str, str] = {}
    for pair in pairs:
        header, sep, variable = pair.partition("=")
        if not sep:
            raise AccessError(f"--header {pair!r}: expected NAME=VARIABLE, e.g. --header Authorization=HF_AUTH")
        names[header.strip()] = variable.strip()
    return header_names(names, setting="--header")


def headers_from_environment(
    names: Mapping[str, str], *, setting: str = "base_url_headers", source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`{header: VARIABLE}` as `{header: $VARIABLE}`; an AccessError names a variable not set."""
    source = os.environ if source is None else source
    headers = {}
    for header, variable in names.items():
        if variable not in source:
            raise AccessError(
                f"{setting}: the {header} header takes its value from ${variable}, which is not set in this environment"
            )
        headers[header] = source[variable]
    return headers


def tls_context(ca_bundle: str | None = None, *, setting: str = "ca_bundle") -> ssl.SSLContext:
    """A client TLS context trusting the system's CAs, or only `ca_bundle`'s (a PEM file)."""
    if ca_bundle is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=ca_bundle)
    except FileNotFoundError:
        raise AccessError(f"{setting}: {ca_bundle} does not exist") from None
    except (ssl.SSLError, OSError, ValueError) as e:
        reason = getattr(e, "strerror", None) or getattr(e, "reason", None) or type(e).__name__
        raise AccessError(f"{setting}: {ca_bundle} is not a readable PEM file of CA certificates ({reason})") from None


@dataclass(frozen=True)
class Credentials:
    """What the generator's requests to a server carry, as its command line gave them:
    `--header NAME=VARIABLE` names (`headers`, values read when a client is made) and
    `--ca-bundle`. Holds no value: safe to pass around, print or keep."""

    headers: Mapping[str, str] = field(default_factory=dict)
    ca_bundle: str | None = None

    @classmethod
    def from_options(cls, headers: Sequence[str] = (), ca_bundle: str | None = None) -> Credentials:
        """From the options as given (`header_pairs` checks them)."""
        return cls(header_pairs(headers), ca_bundle)

    def client_options(self) -> dict[str, Any]:
        """`httpx.Client` keyword arguments: the headers' values from this process's
        environment, and the TLS context; an AccessError names a variable not set."""
        return {
            "headers": headers_from_environment(self.headers, setting="--header"),
            "verify": tls_context(self.ca_bundle, setting="--ca-bundle"),
        }

    def refused(self) -> str:
        """What to say after a 401/403: which option gives the missing header, or which
        headers were sent (their names, never their values)."""
        if not self.headers:
            return f"pass it with {HEADER_OPTION} (its value read from $VARIABLE, e.g. a bearer token)"
        return f"check the value of {', '.join(f'${v}' for v in self.headers.values())} ({HEADER_OPTION})"


NO_CREDENTIALS = Credentials()

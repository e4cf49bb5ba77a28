"""A loopback relay's credential, and text about the run's servers as people may read it.

`new_token` makes a relay's token, the first path segment of its URL (`relay`); `for_people`
writes every such token in a text as `…` (`http://127.0.0.1:PORT/…`): the runtime's log lines
and error messages name the run's servers by it, so that a log shown to others, or kept,
lets no one in. Standard library only: the runtime's one error type uses it.
"""

from __future__ import annotations

import re
import secrets

TOKEN_BYTES = 24
"""192 random bits, 32 URL-safe characters."""
_TOKEN_IN_URL = re.compile(r"(://[^/\s'\"]+/)[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")


def new_token() -> str:
    """A relay's credential: the first path segment of its URL."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def for_people(text: str) -> str:
    """`text` with the token of each relay URL in it (a URL's first path segment of a token's
    length and alphabet) written `…`."""
    return _TOKEN_IN_URL.sub(r"\1…", text)

"""`swarm_isolation.dns_fix_missing`: which Docker Engine versions predate the fix for
CVE-2024-29018 (an `--internal` network's DNS forwarding), as engines report them."""

from __future__ import annotations

import pytest

from openenvgen_runtime.launching.swarm_isolation import dns_fix_missing


@pytest.mark.parametrize(
    ("version", "missing"),
    [
        ("20.10.24+dfsg1", True),  # Debian bookworm's docker.io
        ("23.0.10", True),
        ("23.0.11", False),
        ("24.0.9", True),  # the 24.0 line never got the fix
        ("25.0.4", True),
        ("25.0.5", False),
        ("26.0.0", False),
        ("28.2.2", False),
        ("v27.1.0", False),
        ("dev", False),  # unreadable: no claim either way
    ],
)
def test_engines_before_the_dns_fix_are_told_apart(version: str, missing: bool) -> None:
    assert dns_fix_missing(version) is missing

"""What the pool needs of a launched server's provider, whichever launch mode started it.

Each launch mode subclasses OpenEnv's own provider in a module of its own, imported only when
that mode runs: `uv_provider` (OpenEnv's `UVProvider`), `docker_provider`
(`LocalDockerProvider`) and `swarm_provider` (`DockerSwarmProvider`). They add the methods
below, so the pool and its launcher handle any of them as a `Provider` and never import a
mode (or OpenEnv's server side) they do not use.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class Provider(Protocol):
    """One launched server (or a Swarm service of servers) that the pool owns."""

    def launch(self) -> list[str]:
        """Start without waiting for readiness; the base URLs known at once (none for a
        Swarm service, whose replicas `ReplicatedProvider.replicas` lists)."""
        ...

    def exit_code(self) -> int | None:
        """The server's exit code once its process or container has exited, else None."""
        ...

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the server wrote ("" when there are none to read)."""
        ...

    def stop(self) -> None:
        """Stop the server and free what it holds; harmless when it is not running."""
        ...


@runtime_checkable
class ReplicatedProvider(Provider, Protocol):
    """A provider whose servers are replicas that the engine places and replaces (Swarm)."""

    def replicas(self) -> list[str]:
        """Base URLs of the replicas running now."""
        ...

    def failure(self) -> str | None:
        """Why replicas cannot start (no such image, no node fits), or None."""
        ...


@runtime_checkable
class GatedProvider(Provider, Protocol):
    """A provider whose servers admit only requests that carry its headers (Swarm's gate)."""

    def request_headers(self) -> dict[str, str]:
        """The headers every request to one of its servers must carry (secret values)."""
        ...

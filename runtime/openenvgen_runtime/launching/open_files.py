"""The open-file limit a run needs: raised once at start, checked against what the run plans.

Every episode in flight holds open files: its WebSocket session to the env server, the
model's HTTP connection, and, in a served worker, what verifiers keeps per request. Most
Linux installs give a user a soft limit of 1,024 open files with a higher hard limit, and a
process may raise its own soft limit up to the hard one, as servers commonly do: the runtime
does so once, where verifiers hands it the process (`AdapterEnv`, for `vf-eval` and every
served worker), and where a typed `Connection` or a trainer's adapter starts
(`raise_soft_limit`).

When the plan is known ahead (`max_in_flight`, a trainer's batch), `require` (`require_for`
a run's config) fails before
any episode when even the hard limit cannot hold it, in one line with the numbers and how
to raise the limit. The estimate (`planned_open_files`) is

    BASE + PER_EPISODE × episodes in flight + PER_SERVER × servers

BASE covers the interpreter, its libraries, logging and verifiers' own sockets;
PER_EPISODE the session's socket, the model's connection and what verifiers' serving keeps
per request (bench/p10_open_files.py measures a served worker at 1,024 episodes in flight:
its peak of open files stays under this estimate); PER_SERVER a launched server's pipes,
log file and the pool's HTTP connection to it.
"""

from __future__ import annotations

import errno
import logging
import resource
from dataclasses import dataclass
from pathlib import Path

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.launching.errors import LaunchError

logger = logging.getLogger(__name__)

BASE = 256
PER_EPISODE = 4
PER_SERVER = 8
NR_OPEN = Path("/proc/sys/fs/nr_open")
"""Linux's ceiling on any process's open files: what an unlimited hard limit means."""


class OpenFilesError(LaunchError):
    """The run cannot hold the open files it plans, or an episode found none left."""


@dataclass(frozen=True)
class Limits:
    soft: int
    hard: int


_raised: Limits | None = None


def _ceiling(hard: int) -> int:
    if hard != resource.RLIM_INFINITY:
        return hard
    try:
        return int(NR_OPEN.read_text())
    except (OSError, ValueError):
        return 1 << 20


def raise_soft_limit() -> Limits:
    """Raise this process's soft open-file limit to its hard limit, once (later calls return
    the first result); a limit that cannot be raised is left as it is, with a debug line."""
    global _raised
    if _raised is None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = _ceiling(hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (OSError, ValueError) as e:
                logger.debug("could not raise the open-file limit from %d to %d: %s", soft, target, e)
        _raised = Limits(soft=_ceiling(soft), hard=_ceiling(hard))
    return _raised


def planned_open_files(in_flight: int, servers: int) -> int:
    """The documented estimate of the open files a process needs for `in_flight` episodes
    at once on `servers` servers it launched (0 for servers it only connects to)."""
    return BASE + PER_EPISODE * in_flight + PER_SERVER * servers


def require(in_flight: int, servers: int) -> Limits:
    """Raise the soft limit, then fail (`OpenFilesError`, one line) when even the hard limit
    cannot hold `in_flight` episodes on `servers` launched servers."""
    limits = raise_soft_limit()
    needed = planned_open_files(in_flight, servers)
    if needed > limits.soft:
        raise OpenFilesError(
            f"{in_flight} episodes in flight on {servers} launched server(s) need about {needed} open files, "
            f"but this process may open at most {limits.soft} (hard limit {limits.hard}); raise the hard limit "
            f"(`ulimit -Hn {needed}` as root, `nofile` in /etc/security/limits.conf, or LimitNOFILE= for a "
            "systemd service, or `--ulimit nofile=N:N` for a container) or play fewer episodes at once"
        )
    return limits


def require_for(config: AdapterConfig) -> Limits:
    """`require` for a run's config: its `max_in_flight` (when set) on the servers it may
    launch (none for a `base_url` fleet, its replicas for a swarm, else `max_servers`)."""
    if config.max_in_flight is None:
        return raise_soft_limit()
    launched = 0 if config.base_urls else config.replicas if config.use_swarm else config.max_servers
    return require(config.max_in_flight, launched)


def too_many_open_files(error: BaseException) -> OpenFilesError | None:
    """The named error for an exception caused by running out of open files (EMFILE, or
    ENFILE for the whole system), anywhere in its chain; None for any other."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            return OpenFilesError(
                f"out of open files ({current.strerror}; soft limit {_ceiling(soft)}, hard {_ceiling(hard)}): "
                "play fewer episodes at once or raise the hard open-file limit"
            )
        current = current.__cause__ or current.__context__
    return None

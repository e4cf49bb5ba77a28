"""Launching a pool's servers through OpenEnv's providers, in the run's launch mode.

UV (the default, `uv_provider`), Docker (`docker_provider`) or Docker Swarm
(`swarm_provider`): each mode's module subclasses OpenEnv's provider and is imported only
when that mode runs. `provider_options` checks `provider_kwargs` against what the mode
takes and `make_provider` makes the mode's provider; the `Launcher` starts servers for a
pool, waits until each answers `/health` (every replica, for a swarm), reads its interface,
and stops what it started. A missing image, daemon or swarm, an option the mode does not
take, and a server that dies or never answers while starting are each a one-line
`LaunchError` (with the server's log tail) before any episode starts.

Blocking provider calls run in threads, so the event loop, and the WebSocket handshakes of
other episodes, never stall behind a launch. Launches and their progress (`starting …`,
`ready in N s`) are logged where `vf-eval` shows verifiers' own log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.launching.docker_cli import OWNER_LABEL, RUNTIME_LABEL, require_docker
from openenvgen_runtime.launching.errors import LaunchError
from openenvgen_runtime.launching.provider import GatedProvider, Provider, ReplicatedProvider
from openenvgen_runtime.launching.reaper import Reaper
from openenvgen_runtime.launching.sandbox import relay
from openenvgen_runtime.launching.sandbox.hardening import Sandbox, hardening_args, sandbox_for
from openenvgen_runtime.launching.servers import Server, describe
from openenvgen_servers.environment import missing
from openenvgen_servers.logs import DEFAULT_LOG_LIMIT, LogLimit
from openenvgen_servers.wire import NotHealthy, wait_healthy_async

logger = logging.getLogger(__name__)

UV_OPTIONS = ("project_path", "app", "host", "reload", "env_vars", "port", "workers")
DOCKER_OPTIONS = ("image", "tag", "port", "env_vars")
SWARM_OPTIONS = ("image", "tag", "env_vars", "cpu_limit", "memory_limit", "constraints", "command", "overlay_network")
TIMEOUT_OPTIONS = ("startup_timeout", "context_timeout_s")
TASKSET_OPTIONS = ("pass_env", "allow_host_execution", "log_max_size", "log_max_files")
"""Launch settings of every mode, set on the taskset, not in `provider_kwargs`."""


def mode_name(*, use_docker: bool = False, use_swarm: bool = False) -> str:
    """The launch mode: "uv", "docker" or "swarm"."""
    return "swarm" if use_swarm else "docker" if use_docker else "uv"


def provider_options(provider_kwargs: dict[str, Any], mode: str) -> dict[str, Any]:
    """`provider_kwargs` checked against what the mode's provider takes (one-line errors)."""
    timeouts = sorted(set(provider_kwargs) & set(TIMEOUT_OPTIONS))
    if timeouts:
        raise LaunchError(
            f"provider_kwargs.{timeouts[0]} is not a provider option: set `startup_timeout` "
            "(--env.taskset.startup-timeout SECONDS), the one startup timeout of every launch mode"
        )
    misplaced = sorted(set(provider_kwargs) & set(TASKSET_OPTIONS))
    if misplaced:
        flag = misplaced[0].replace("_", "-")
        raise LaunchError(
            f"provider_kwargs.{misplaced[0]} is not a provider option: set `{misplaced[0]}` on the taskset "
            f"(--env.taskset.{flag} ...), for every launch mode"
        )
    allowed = {"uv": UV_OPTIONS, "docker": DOCKER_OPTIONS, "swarm": SWARM_OPTIONS}[mode]
    unknown = sorted(set(provider_kwargs) - set(allowed))
    if unknown:
        raise LaunchError(
            f"provider_kwargs not understood by the {mode} launch mode: {unknown} (it takes {list(allowed)})"
        )
    kwargs = dict(provider_kwargs)
    if isinstance(kwargs.get("env_vars"), str):  # from the command line: a JSON object
        try:
            kwargs["env_vars"] = json.loads(kwargs["env_vars"])
        except json.JSONDecodeError as e:
            raise LaunchError(f"provider_kwargs.env_vars is not a JSON object: {e}") from None
    return kwargs


def image_for(env_id: str, kwargs: dict[str, Any]) -> str:
    """The `image` option, else the env's image on the Hugging Face Spaces registry."""
    tag = kwargs.pop("tag", "latest")
    return kwargs.pop("image", None) or f"registry.hf.space/{env_id.replace('/', '-')}:{tag}"


def make_provider(
    env_id: str,
    provider_kwargs: dict[str, Any],
    *,
    mode: str = "uv",
    timeout: float,
    labels: dict[str, str] | None = None,
    replicas: int = 1,
    pass_env: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    log_limit: LogLimit = DEFAULT_LOG_LIMIT,
) -> Provider:
    """Blocking: the mode's provider for `env_id`, checked and made but not started (an
    image is pulled now if missing). `timeout` bounds a pull or a git clone. Its servers get
    `pass_env` (names of this process's variables) and `provider_kwargs.env_vars`, and of
    the rest of this process's environment only what a UV server needs to start
    (`openenvgen_servers.environment`); a container nothing of it. A `sandbox` hardens
    each container (`sandbox.hardening`); `log_limit` bounds each server's log."""
    options = provider_options(provider_kwargs, mode)
    options["pass_env"] = list(pass_env)
    options["log_limit"] = log_limit
    if mode == "uv":
        from openenvgen_runtime.launching import uv_provider

        return uv_provider.provider_for(env_id, options, timeout=timeout)
    require_docker(f"use_{mode}")
    image = image_for(env_id, options)
    if mode == "docker":
        from openenvgen_runtime.launching import docker_provider

        return docker_provider.provider_for(image, options, labels=labels or {}, timeout=timeout, sandbox=sandbox)
    from openenvgen_runtime.launching import swarm_provider

    isolated = sandbox is not None and sandbox.isolated
    service = swarm_provider.provider_for(
        image, options, labels=labels or {}, replicas=replicas, timeout=timeout, isolated=isolated
    )
    if sandbox is not None:
        service.hardening = hardening_args(sandbox, "service")
    service.log_args = log_limit.docker_args()
    return service


class Launcher:
    """Starts a pool's servers and owns what it started: their providers and, for a
    container run, the reaper that removes the run's containers however the run ends."""

    def __init__(self, config: AdapterConfig, *, mcp: bool) -> None:
        self.config = config
        self.mcp = mcp
        self.owner = uuid.uuid4().hex[:12]
        """The run's owner label value: what its reaper removes."""
        self.providers: list[Provider] = []
        """Every provider made and not yet stopped, including ones still starting."""
        self._reaper: Reaper | None = None
        self._checked = False
        self._closed = False
        """Set by `stop()`: no provider is made after it, and a launch that ends after it undoes itself."""
        self._lock = threading.Lock()
        """`providers` and `_closed`, changed together: `_make` runs in threads."""
        self.access = ServerAccess()
        """What requests to the launched servers carry: a Swarm launch's secret, by replica."""
        self.sandbox: Sandbox | None = None
        """The run's sandbox (None: its containers run unhardened), decided at the first launch."""

    @property
    def mode(self) -> str:
        return mode_name(use_docker=self.config.use_docker, use_swarm=self.config.use_swarm)

    @property
    def pass_env(self) -> list[str]:
        """The variables of this process a launched server gets by name: the package's
        `SERVER_ENV`, then the user's `pass_env`."""
        return list(dict.fromkeys([*type(self.config).SERVER_ENV, *self.config.pass_env]))

    def check(self) -> None:
        """Blocking, before the first launch: decide the run's sandbox, refuse to run
        model-written code on this machine unless the user said so (a one-line LaunchError),
        and warn once, in one line, about the variables a server is to get that are not set here."""
        if self._checked:
            return
        config = type(self.config)
        self.sandbox = sandbox_for(self.config, self.mode)  # may ask the daemon for its runtimes
        if self.mode == "uv" and config.EXECUTES_CODE and not self.config.allow_host_execution:
            raise LaunchError(
                f"{self.config.env} runs model-written code, and the UV launch would run it on this machine "
                "as your user: set allow_host_execution = true (--env.taskset.allow-host-execution true) to "
                "allow it, or use_docker = true (--env.taskset.use-docker true) to run it in a container"
            )
        absent = missing(self.pass_env)
        if absent:
            needed = [name for name in absent if name in config.SERVER_ENV]
            names, them = ", ".join(absent), "them" if len(absent) > 1 else "it"
            needs = "the env's server needs " + ("them" if len(needed) > 1 else "it")
            why = needs if needed else f"pass_env names {them}"
            logger.warning(
                f"{self.config.env}: {names} not set in this environment ({why}); its server starts without {them}"
            )
        self._checked = True

    def labels(self) -> dict[str, str]:
        """The user's `provider_kwargs.labels` with ours over them: the run's owner label is what
        its reaper removes by, so a user's label of that name must not hide the run's containers."""
        extra = self.config.provider_kwargs.get("labels")
        return {**(extra or {}), RUNTIME_LABEL: "1", OWNER_LABEL: self.owner}

    def _make(self) -> Provider:
        """Blocking: make one provider and own it before it starts, so `stop()` stops it even
        while its launch is under way. (A container created while `stop()` runs is the reaper's.)"""
        env_id = self.config.env
        assert env_id is not None
        kwargs = dict(self.config.provider_kwargs)
        if self.mode != "uv":
            kwargs.pop("labels", None)  # theirs, added to ours
        provider = make_provider(
            env_id,
            kwargs,
            mode=self.mode,
            timeout=self.config.startup_timeout,
            labels=self.labels(),
            replicas=self.config.replicas,
            pass_env=self.pass_env,
            sandbox=self.sandbox,
            log_limit=LogLimit(self.config.log_max_size, self.config.log_max_files),
        )
        with self._lock:
            if not self._closed:
                if self.mode != "uv" and self._reaper is None:
                    self._reaper = Reaper(self.owner)  # before the first container exists
                self.providers.append(provider)
                return provider
        # `stop()` ran while this provider was made: it would be stopped by no one.
        provider.stop()
        raise LaunchError("server pool is closed")

    async def launch(self, http: httpx.AsyncClient) -> list[Server]:
        """Start one server (every replica, for a swarm) and wait until each answers
        `/health`; their interfaces read. A LaunchError, its log tail included, otherwise."""
        await asyncio.to_thread(self.check)
        timeout = self.config.startup_timeout
        sandboxed = f", {self.sandbox.describe(self.mode)}" if self.sandbox is not None else ""
        what = f"{self.config.env} ({self.mode}{sandboxed})"
        logger.info("starting %s …", what)
        started = time.monotonic()
        provider = await asyncio.to_thread(self._make)
        try:
            try:
                urls = await asyncio.to_thread(provider.launch)
            except LaunchError as e:  # could not clone, `docker run` failed, ...
                first, newline, rest = str(e).partition("\n")
                raise LaunchError(f"{what}: {first} ({what_to_try(self.mode)}){newline}{rest}") from None
            self._require_open()
            if isinstance(provider, ReplicatedProvider):
                urls = await self._wait_for_replicas(provider, started + timeout)
            servers = [self.server(url, provider) for url in urls]
            for server in servers:
                await self._wait_ready(http, server.url, provider, started + timeout)
            await asyncio.gather(*(describe(http, s, mcp=self.mcp) for s in servers))
        except BaseException:
            await self.stop_provider(provider)  # stopped already by `stop()`, stopping again is harmless
            raise
        shown = ", ".join(s.shown for s in servers)
        logger.info("%s ready in %.0f s at %s", what, time.monotonic() - started, shown)
        return servers

    def _require_open(self) -> None:
        """A launch still under way when `stop()` ran fails here (and is undone)."""
        if self._closed:
            raise LaunchError("server pool is closed")

    def server(self, url: str, provider: Provider) -> Server:
        """A server `provider` launched at `url`; requests to it carry the provider's headers
        (a Swarm replica's secret) from now on."""
        if isinstance(provider, GatedProvider):
            self.access.admit(url, provider.request_headers())
        return Server(url=url, provider=provider, access=self.access)

    def _failed_to_start(self, provider: Provider, reason: str) -> LaunchError:
        """Blocking (it may ask Docker for the log): the one-line error, then the log tail."""
        tail = provider.log_tail()
        return LaunchError(
            f"{self.config.env} ({self.mode}): {reason} ({what_to_try(self.mode)})"
            + (f"; last lines of its log:\n{tail}" if tail else "")
        )

    async def _wait_ready(self, http: httpx.AsyncClient, url: str, provider: Provider, deadline: float) -> None:
        """Wait for `/health` without blocking the loop; a server that exits fails at once."""

        def exited() -> int | None:
            self._require_open()
            return provider.exit_code()

        try:
            await wait_healthy_async(http, url, max(0.0, deadline - time.monotonic()), exited=exited)
        except NotHealthy as e:
            # Timed out: named by the one startup timeout, not by what was left of it here.
            timed_out = f"server not ready after {self.config.startup_timeout:g}s at {url}"
            reason = str(e) if e.exit_code is not None else timed_out
            raise await asyncio.to_thread(self._failed_to_start, provider, reason) from None

    async def _wait_for_replicas(self, provider: ReplicatedProvider, deadline: float) -> list[str]:
        """Every replica of a new swarm service running with its port published."""
        wanted = self.config.replicas
        while True:
            self._require_open()
            urls = await asyncio.to_thread(provider.replicas)
            if len(urls) >= wanted:
                return urls
            problem = await asyncio.to_thread(provider.failure)
            if problem is not None:
                reason = f"swarm cannot run a replica ({problem})"
                raise await asyncio.to_thread(self._failed_to_start, provider, reason)
            if time.monotonic() > deadline:
                reason = f"{len(urls)} of {wanted} replicas running after {self.config.startup_timeout:g}s"
                raise await asyncio.to_thread(self._failed_to_start, provider, reason)
            await asyncio.sleep(0.5)

    async def stop_provider(self, provider: Provider) -> None:
        """Stop one provider this launcher made (a server that failed or died)."""
        if provider in self.providers:
            self.providers.remove(provider)
        await asyncio.to_thread(provider.stop)

    async def stop(self) -> None:
        """Stop every provider made, then close the reaper (which also catches a container
        whose launch was still under way). No launch starts after this."""
        with self._lock:
            self._closed = True
            providers, self.providers = self.providers, []
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in providers))
        if self._reaper is not None:
            await asyncio.to_thread(self._reaper.close)
            self._reaper = None
        # Each provider closes its own relays; one still open here outlived its server.
        left = await asyncio.to_thread(relay.close_owned, self.owner)
        if left:
            logger.warning("closed %d loopback relay(s) whose server had gone: %s", len(left), ", ".join(left))


def what_to_try(mode: str) -> str:
    """What a failed launch's one line suggests: a server already running, a local copy of
    the env (UV), or the other launch mode."""
    running = "base_url for a server already running (`--base-url URL`)"
    if mode == "uv":
        return f"to try: {running}, provider_kwargs.project_path for a local copy of the env, or use_docker"
    return f"to try: {running}, or the UV launch (without use_{mode})"

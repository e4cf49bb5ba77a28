"""Configuration: which environment, how to reach it, which tasks, and the player seat.

At the bottom of the runtime's layers: `parse_range` reads `split_range` without any I/O,
so the config checks a range at validation time and the task planner reads it the same way.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, ClassVar, Literal, Self

import verifiers.v1 as vf
from pydantic import Field, field_validator, model_validator

from openenvgen_servers.access import header_names

_RANGE = re.compile(r"^\s*(-?\d+)?\s*:\s*(-?\d+)?\s*$")
_SIZE = r"^[0-9]+[bkmgBKMG]?$"


def parse_range(text: str | None) -> tuple[int | None, int | None]:
    """`"START:STOP"` (Python slice bounds, either side optional) as (start, stop)."""
    if text is None:
        return None, None
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"split_range must be START:STOP (e.g. 0:100, :50, 10:), not {text!r}")
    start, stop = (int(g) if g is not None else None for g in match.groups())
    return start, stop


def _command_line_list(text: str) -> list[Any]:
    """A list as the command line gives it: a JSON list, or items separated by commas."""
    text = text.strip()
    if text.startswith("["):
        return list(json.loads(text))
    return [part.strip() for part in text.split(",") if part.strip()]


class AdapterConfig(vf.TasksetConfig):
    env: str | None = None
    """OpenEnv env id to launch; generated packages set their own default. With `base_url`
    it launches nothing but still names the tasks; an `env` other than the package's own
    beside `base_url` is an error."""
    base_url: str | list[str] | None = None
    """Existing server(s) to use instead of launching `env`; a list spreads episodes over
    a fleet run elsewhere. `http(s)://` or `ws(s)://` URLs."""
    base_url_headers: dict[str, str] = Field(default_factory=dict)
    """Request headers for a `base_url` fleet, each value read from an environment variable
    of this process: `{"Authorization": "FLEET_AUTH"}` sends `Authorization: $FLEET_AUTH` on
    every request and WebSocket session (e.g. to a fleet behind an authenticating ingress).
    A variable that is not set is a one-line error before any episode."""
    ca_bundle: str | None = None
    """A PEM file of the CA certificates that `https://`/`wss://` fleet servers are verified
    against (instead of the system's)."""
    use_docker: bool = False
    """Launch `env` with OpenEnv's Docker provider instead of its UV provider."""
    use_swarm: bool = False
    """Launch `env` as one Docker Swarm service (OpenEnv's DockerSwarmProvider) of
    `replicas` containers; episodes spread over the replicas. Needs an active swarm."""
    replicas: int = Field(2, ge=1)
    """Containers in the Swarm service (`use_swarm`)."""
    provider_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Options for OpenEnv's provider. UV: project_path, app, env_vars, port, workers,
    host, reload (over the package's `PROVIDER_DEFAULTS`); Docker: image, tag, port,
    env_vars, labels; Swarm: image, tag, env_vars, labels, cpu_limit, memory_limit,
    constraints, command, overlay_network. Any other key is an error."""
    PROVIDER_DEFAULTS: ClassVar[dict[str, Any]] = {}
    """A package's UV provider options (its ASGI `app`): `provider_kwargs` is merged over
    them, so setting only `project_path` keeps the package's `app`."""
    pass_env: list[str] = Field(default_factory=list)
    """Names of this process's environment variables to hand a launched server (every
    launch mode), e.g. `["E2B_API_KEY"]`, besides the package's own `SERVER_ENV`. A launched
    server gets nothing else of this process's environment but what the interpreter and uv
    need (`openenvgen_servers.environment`); `provider_kwargs.env_vars` sets values."""
    SERVER_ENV: ClassVar[tuple[str, ...]] = ()
    """A package's own `pass_env`: the variables its env's server needs (an API key),
    always passed; one warning line at launch names any that is not set."""
    allow_host_execution: bool = False
    """Launch an env that runs model-written code (`EXECUTES_CODE`) with the UV provider,
    on this machine as this user; without it such a launch is refused before any episode
    (`use_docker` runs it in a container instead)."""
    EXECUTES_CODE: ClassVar[bool] = False
    """Whether the package's env runs code its model writes (the catalog's `executes_code`,
    or `openenv-gen NAME --executes-code`)."""
    sandbox: bool | None = None
    """Run each container launched (`use_docker`, `use_swarm`) in the sandbox: a non-root
    user, no capabilities, a read-only root with a scratch tmpfs at /tmp, the limits below,
    no network (`sandbox_network`) and gVisor when the daemon offers it (`container_runtime`).
    None (the default): on for a package whose env runs model-written code (`EXECUTES_CODE`),
    off for others; true with the UV launch is an error. See the Security guide."""
    sandbox_memory: str = Field("2g", pattern=_SIZE)
    """A sandboxed container's memory limit, swap included (Docker's sizes: `512m`, `2g`)."""
    sandbox_pids: int = Field(256, ge=16)
    """Most processes (and threads) a sandboxed container may run at once."""
    sandbox_cpus: float = Field(1.0, gt=0)
    """CPUs a sandboxed container may use (`1.5` = one and a half)."""
    sandbox_scratch: str = Field("256m", pattern=_SIZE)
    """Size of a sandboxed container's writable /tmp (a tmpfs, counted in its memory)."""
    sandbox_network: Literal["none", "egress"] = "none"
    """"none": a sandboxed container reaches no address at all, the host's included; "egress":
    it may open connections out (e.g. `websearch`), its server's port answering nothing on that
    network. The run reaches a Docker container's server through a Unix socket either way. A
    Swarm replica must be reachable, so it always has a network."""
    container_runtime: Literal["auto", "runc", "runsc"] = "auto"
    """The sandbox's OCI runtime under `use_docker`: "runsc" (gVisor), "runc", or "auto":
    runsc when the daemon offers it (`docker info`, with `--host-uds=all` among its runtime
    arguments) and `sandbox_network` is "none", else runc. The launch line names the one used."""
    log_max_size: str = Field("10m", pattern=_SIZE)
    """Size at which a launched server's log is rotated (every launch mode; Docker's sizes,
    decimal: `500k`, `10m`): a container's through Docker's json-file driver (`max-size`), a
    UV server's by the runtime. A server that writes without end (model code printing in a
    REPL env) then takes at most `log_max_size` x `log_max_files` of the host's disk."""
    log_max_files: int = Field(3, ge=1)
    """Log files kept per launched server, the current one included (`max-file`)."""
    resets: list[dict[str, Any]] = Field(default_factory=lambda: [dict[str, Any]()])  # one reset, no kwargs
    """Reset kwargs, one task each; task i resets with `seed=i` unless its kwargs set one."""
    split: str | None = None
    """Take the tasks from the env's Task API instead: one per task of this split, reset
    with `split` and `index` (and `seed=index`); works with every transport."""
    split_range: str | None = None
    """With `split`: which of its tasks, as START:STOP with Python slice bounds (`0:100`,
    `:50`, `10:`); default all."""
    hidden_fields: list[str] = Field(default_factory=list)
    """Observation fields the model never reads, as dotted paths (`board.solution`; a path
    through a list applies to each item), besides `metadata`, which is always hidden."""
    max_media_bytes: int = Field(10 * 1024 * 1024, gt=0)
    """Largest image or audio attachment taken from an observation, in bytes; a larger
    one is an error that names the field."""
    on_drift: Literal["warn", "error", "ignore"] = "warn"
    """When a server's live /schema or tool list differs from the package's snapshot at
    pool start: "warn" (one line with the model diff), "error" (stop before any
    episode), or "ignore"."""
    max_servers: int = Field(4, ge=1)
    """Most servers launched for an env that takes one session per server; under verifiers'
    env server each worker has its own pool, so this is per worker."""
    max_in_flight: int | None = Field(None, ge=1)
    """Episodes this process will hold at once, when known ahead (`vf-eval`'s
    `--max-concurrent`, a trainer's batch): the run then fails at start, before any episode,
    in one line with the numbers, if even the hard open-file limit cannot hold them (the
    estimate: `launching.open_files.planned_open_files`). The soft limit is raised to the
    hard one either way."""
    action_format: Literal["text", "tools"] = "text"
    """How the model acts: "text" replies parsed as JSON (or a bare value), or "tools":
    native function tool calls built from the generated action models (needs the
    package's in-process seat)."""
    max_invalid_actions: int = Field(3, ge=0)
    """Consecutive invalid replies sent back to the model before the episode stops."""
    startup_timeout: float = Field(120.0, gt=0)
    """Seconds a launched server (every replica, for a swarm) may take to answer /health;
    the one startup timeout of every launch mode."""
    unavailable_timeout: float = Field(60.0, gt=0)
    """Seconds an episode waits for a server when every server is down, before it fails."""
    reply_timeout: float = Field(60.0, gt=0)
    """Seconds each wait on an env server may take: opening a session, and the reply to each
    reset, step, state and close. Past it the session is lost: the episode ends as `env_lost`."""
    max_reply_mb: float = Field(32.0, gt=0)
    """Largest WebSocket frame taken from an env server, in MiB; a larger one ends the
    episode as `env_protocol_error`."""
    max_observation_chars: int = Field(65_536, gt=0)
    """Characters of text one observation may hold (its strings; media fields apart, see
    `max_media_bytes`); past it, `observation_overflow` applies."""
    observation_overflow: Literal["truncate", "refuse"] = "truncate"
    """An observation over `max_observation_chars`: "truncate" cuts its text with a visible
    marker, "refuse" ends the episode as `env_protocol_error`."""

    @field_validator("pass_env", mode="before")
    @classmethod
    def _name_list(cls, value: Any) -> Any:
        return _command_line_list(value) if isinstance(value, str) else value

    @field_validator("base_url_headers", mode="before")
    @classmethod
    def _header_names(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the command line: a JSON object
            value = json.loads(value)
        if isinstance(value, dict):
            header_names(value, setting="base_url_headers")  # an AccessError is a ValueError
        return value

    @field_validator("base_url", mode="before")
    @classmethod
    def _url_list(cls, value: Any) -> Any:
        # A fleet from the command line is one string; a single URL stays one.
        if isinstance(value, str) and (value.strip().startswith("[") or "," in value):
            return _command_line_list(value)
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        # Decided from the values alone, never from which fields were set: verifiers' env
        # server ships the config to its workers as a full dump (every field set) and
        # rebuilds it there, so a package's default `env` beside `base_url` must mean the
        # same in a worker as it does where the user wrote the config.
        package_env = type(self).model_fields["env"].default
        if self.env and self.base_url and self.env != package_env:
            raise ValueError(
                "set `env` or `base_url`, not both: drop `env` to use the running server "
                f"(`env` {self.env!r} is not the package's own, {package_env!r})"
            )
        if not self.env and not self.base_url:
            raise ValueError("set `env` (an OpenEnv env id to launch) or `base_url` (a running server)")
        if self.use_docker and self.use_swarm:
            raise ValueError("set `use_docker` or `use_swarm`, not both: a swarm already runs Docker containers")
        if (self.base_url_headers or self.ca_bundle) and not self.base_url:
            raise ValueError("`base_url_headers` and `ca_bundle` are for a `base_url` fleet: set `base_url` too")
        if self.split_range is not None and not self.split:
            raise ValueError("`split_range` picks tasks of a `split`: set `split` too")
        if self.split_range is not None:
            parse_range(self.split_range)
        if self.PROVIDER_DEFAULTS and not (self.use_docker or self.use_swarm):
            # Set in __dict__ so the merge does not count as the user setting the field.
            self.__dict__["provider_kwargs"] = {**self.PROVIDER_DEFAULTS, **self.provider_kwargs}
        return self

    @property
    def base_urls(self) -> list[str]:
        if self.base_url is None:
            return []
        urls = [self.base_url] if isinstance(self.base_url, str) else list(self.base_url)
        # A server's ws(s):// URL names the same server as its http(s):// one.
        return [re.sub(r"^ws(s?)://", r"http\1://", u.rstrip("/"), flags=re.IGNORECASE) for u in urls]


def settings_from_pairs(pairs: list[str]) -> dict[str, Any]:
    """Taskset settings from `--set KEY=VALUE` pairs (`play` and `doctor`): each value read as
    JSON when it is JSON, else as a bare string; dashes in keys become underscores."""
    settings: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {pair!r}: expected KEY=VALUE, e.g. --set max_invalid_actions=5")
        try:
            settings[key.replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            settings[key.replace("-", "_")] = value  # a bare string
    return settings


def default_resets(*resets: dict[str, Any]) -> Any:
    """A package's own `resets` default (its catalog's tasks), a fresh copy for each config:
    `resets: list[dict[str, Any]] = default_resets({...}, {...})`."""
    return Field(default_factory=lambda: copy.deepcopy(list(resets)))


class AdapterData(vf.TaskData):
    reset: dict[str, Any] = Field(default_factory=dict)
    """Kwargs for the environment's reset."""
    action_tools: list[dict[str, Any]] | None = None
    """With `action_format="tools"`: the function tools offered on every model call."""


class AdapterEnvConfig(vf.EnvConfig):
    # The runtime is the user and steps the env host-side, so the seat needs no sandbox:
    # a local runtime, and no harness pinned, so verifiers takes the package's bundled
    # one (the in-process seat); `--env.player.harness.id null` still picks another.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())

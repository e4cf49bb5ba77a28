"""Configuration: which environment, how to reach it, which tasks, and the player seat."""

from __future__ import annotations

import json
from typing import Any, Self

import verifiers.v1 as vf
from pydantic import Field, field_validator, model_validator
from verifiers.v1.harnesses.null import NullHarnessConfig


class AdapterConfig(vf.TasksetConfig):
    env: str | None = None
    """OpenEnv env id to launch; generated packages set their own default. Ignored when
    `base_url` is set, unless both are set explicitly (an error)."""
    base_url: str | list[str] | None = None
    """Existing server(s) to use instead of launching `env`; a list spreads episodes over
    a fleet run elsewhere."""
    use_docker: bool = False
    """Launch `env` with OpenEnv's Docker provider instead of its UV provider."""
    provider_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Arguments for OpenEnv's provider: app, project_path, env_vars, port, workers, host,
    reload, timeout."""
    resets: list[dict[str, Any]] = Field(default_factory=lambda: [{}])
    """Reset kwargs, one task each."""
    max_servers: int = Field(4, ge=1)
    """Most servers launched for an env that takes one session per server."""
    max_invalid_actions: int = Field(3, ge=0)
    """Consecutive invalid replies sent back to the model before the episode stops."""
    startup_timeout: float = Field(120.0, gt=0)
    """Seconds a launched server may take to answer /health."""

    @field_validator("base_url", mode="before")
    @classmethod
    def _url_list(cls, value: Any) -> Any:
        # From the command line a fleet arrives as one string: a JSON list or comma-separated.
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            if "," in text:
                return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        explicit = self.model_fields_set
        if "env" in explicit and "base_url" in explicit and self.env and self.base_url:
            raise ValueError("set `env` or `base_url`, not both: drop `env` to use the running server")
        if not self.env and not self.base_url:
            raise ValueError("set `env` (an OpenEnv env id to launch) or `base_url` (a running server)")
        return self

    @property
    def base_urls(self) -> list[str]:
        if self.base_url is None:
            return []
        urls = [self.base_url] if isinstance(self.base_url, str) else list(self.base_url)
        return [u.rstrip("/") for u in urls]


class AdapterData(vf.TaskData):
    reset: dict[str, Any] = Field(default_factory=dict)
    """Kwargs for the environment's reset."""


class AdapterEnvConfig(vf.EnvConfig):
    # A chat-only seat: the model answers in text and the runtime is the user, so no
    # sandbox or tools are needed; verifiers' `null` harness in a local subprocess.
    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=vf.SubprocessConfig())

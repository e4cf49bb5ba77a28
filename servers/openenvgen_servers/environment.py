"""The environment a launched env server gets: a short allowlist of this process's variables,
never all of them.

An env server may run code its model wrote (a code-executing env), and whatever is in its
environment that code can read: the trainer's `OPENAI_API_KEY`, `WANDB_API_KEY`, `HF_TOKEN`
or cloud credentials must not be there. So a server started with `uv run` gets only what the
interpreter and uv need to start it (`SERVER_BASE_NAMES`, the `SERVER_BASE_PREFIXES`
families), then the variables its user names: `pass_env` (names of this process's variables,
passed on when set) and `env_vars` (values, which win). Nothing that may hold a credential is
passed by default: not proxies (`HTTPS_PROXY` can carry a password), not uv's index
credentials (`UV_INDEX_<NAME>_PASSWORD`), not `PYTHONPATH` or `VIRTUAL_ENV` (this process's
imports, not the server's); name them in `pass_env` when a server needs them. Container
launches get `env_vars` and `pass_env` alone (`container_env_args`; a Swarm service gets
its `pass_env` values from `passed_values`, as Swarm secrets).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

SERVER_BASE_NAMES = (
    # Where programs are, whose home it is (uv's cache and config live under HOME), scratch space.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TZ",
    # Locale.
    "LANG",
    "LANGUAGE",
    # TLS trust for downloads (uv's, and the server's own).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    # Where uv keeps its cache, its interpreters and its config when they follow XDG.
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    # uv's own settings for `uv run`: its cache, where it finds packages and interpreters,
    # whether it may go online (a machine set up to run offline stays so).
    "UV_CACHE_DIR",
    "UV_NO_CACHE",
    "UV_OFFLINE",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_INDEX_STRATEGY",
    "UV_KEYRING_PROVIDER",
    "UV_NATIVE_TLS",
    "UV_INSECURE_HOST",
    "UV_HTTP_TIMEOUT",
    "UV_PYTHON",
    "UV_PYTHON_INSTALL_DIR",
    "UV_PYTHON_PREFERENCE",
    "UV_PYTHON_DOWNLOADS",
    "UV_MANAGED_PYTHON",
    "UV_NO_MANAGED_PYTHON",
    "UV_CONFIG_FILE",
    "UV_NO_CONFIG",
    "UV_LINK_MODE",
    "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_BUILDS",
    "UV_CONCURRENT_INSTALLS",
)
"""This process's variables a UV-launched server gets when they are set."""

SERVER_BASE_PREFIXES = ("LC_",)
"""Families of variables a UV-launched server gets: the locale's categories (`LC_ALL`, `LC_CTYPE`, ...)."""


def is_base_name(name: str) -> bool:
    """Whether a UV-launched server gets this process's `name` without being told to."""
    return name in SERVER_BASE_NAMES or name.startswith(SERVER_BASE_PREFIXES)


def server_environment(
    env_vars: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
    *,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A UV-launched server's whole environment: `source`'s (this process's) allowlisted
    variables, then its `pass_env` names that are set, then `env_vars`."""
    source = os.environ if source is None else source
    passed = {name for name in pass_env}
    environment = {k: v for k, v in source.items() if is_base_name(k) or k in passed}
    environment.update(env_vars or {})
    return environment


def missing(names: Iterable[str], *, source: Mapping[str, str] | None = None) -> list[str]:
    """The `names` that are not set in `source` (this process's environment), in order, once each."""
    source = os.environ if source is None else source
    return [name for name in dict.fromkeys(names) if name not in source]


def passed_values(
    pass_env: Sequence[str], env_vars: Mapping[str, str] | None = None, *, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The `pass_env` names set in `source` (this process's environment) with their values,
    in order, once each; a name `env_vars` also sets is left to `env_vars`, which wins."""
    source = os.environ if source is None else source
    return {name: source[name] for name in dict.fromkeys(pass_env) if name in source and name not in (env_vars or {})}


def container_env_args(
    flag: str, env_vars: Mapping[str, str] | None, pass_env: Sequence[str], *, source: Mapping[str, str] | None = None
) -> list[str]:
    """`docker run -e` arguments for a container's whole environment: `flag NAME` for each
    `pass_env` name that is set here (the docker CLI reads its value from its own
    environment, so the value is not on the command line), then `flag NAME=VALUE` for each
    of `env_vars`. (A Swarm service gets its `pass_env` values as Swarm secrets instead: the
    docker CLI writes an `--env NAME`'s value into the service's spec.)"""
    args: list[str] = []
    for name in passed_values(pass_env, env_vars, source=source):
        args += [flag, name]
    for key, value in (env_vars or {}).items():
        args += [flag, f"{key}={value}"]
    return args

"""Which tasks a run plays, named the same under every transport, and OpenEnv's Task API.

A task is a name and the kwargs of one `reset`:

- from `resets`: task `i` is named `<label>#<i>` and resets with `seed=i` unless its
  kwargs set a seed, so a run is reproducible;
- from the env's Task API (`split`, optionally `split_range` "START:STOP" with Python
  slice bounds): task `i` of the split is named `<label>#<split>:<i>` and resets with
  `split`, `index=i` and `seed=i` (over a single `resets` entry's kwargs, if given).

The label is the env id (`openenv/wordle`), or when only `base_url` is known, the name
the server gives in `/metadata`; never a URL, so the same task has the same name and
key whether the env was launched (UV, Docker) or reached at a `base_url`.

The Task API is the one OpenEnv's HTTP server serves (openenv >= 0.10):
`GET /list_environments` names the env, `POST /{name}/num_tasks {"split": ...}` counts a
split's tasks (`GET /{name}/splits` lists the splits), and `reset(split=..., index=...)`
plays task `index`. `read_split` reads it from any live server; `plan` decides the tasks
of a run, launching a short-lived server through the pool when `split` is set and there
is no `base_url` (verifiers loads tasks before the env's servers start); `load_specs` is
`plan` for synchronous callers (`Taskset.load()`), once per config. An env without the
Task API, an unknown split or an empty range is a `TaskApiError` with one line.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from openenvgen_runtime.access.origins import ServerAccess
from openenvgen_runtime.access.tokens import for_people
from openenvgen_runtime.config import parse_range
from openenvgen_runtime.launching.servers import fleet_access

_T = TypeVar("_T")


class TaskApiError(RuntimeError):
    """The env's Task API cannot give the requested tasks (the server named without its
    relay's token)."""

    def __init__(self, message: str) -> None:
        super().__init__(for_people(message))


@dataclass(frozen=True)
class TaskSpec:
    name: str
    """`<label>#<index>` or `<label>#<split>:<index>`: the same under every transport."""
    reset: dict[str, Any]
    """Kwargs for the env's reset, the seed included."""


@dataclass(frozen=True)
class SplitTasks:
    """What the Task API says about one split, and which of its tasks a run takes."""

    env_name: str
    split: str
    num_tasks: int
    indices: range


def seeded(reset: dict[str, Any], index: int) -> dict[str, Any]:
    """`reset` with `seed=index` unless it sets a seed itself."""
    return reset if "seed" in reset else {**reset, "seed": index}


def reset_tasks(label: str, resets: Iterable[dict[str, Any]]) -> list[TaskSpec]:
    return [TaskSpec(f"{label}#{i}", seeded(dict(reset), i)) for i, reset in enumerate(resets)]


def split_tasks(label: str, found: SplitTasks, common: dict[str, Any] | None = None) -> list[TaskSpec]:
    base = dict(common or {})
    return [
        TaskSpec(f"{label}#{found.split}:{i}", seeded({**base, "split": found.split, "index": i}, i))
        for i in found.indices
    ]


def _client(timeout: float, access: ServerAccess | None) -> httpx.AsyncClient:
    """An HTTP client for a server's Task API, carrying `access`'s headers and TLS trust."""
    if access is None:
        return httpx.AsyncClient(timeout=timeout, trust_env=False)
    return httpx.AsyncClient(timeout=timeout, trust_env=False, auth=access, verify=access.ssl_context)


async def server_name(base_url: str, *, timeout: float = 10.0, access: ServerAccess | None = None) -> str:
    """The env's name from the server's `/metadata`."""
    url = base_url.rstrip("/")
    try:
        async with _client(timeout, access) as http:
            response = await http.get(f"{url}/metadata")
            response.raise_for_status()
            name = response.json().get("name")
    except (httpx.HTTPError, ValueError, AttributeError) as e:
        raise TaskApiError(f"{url}: cannot read the env's name from /metadata: {e}") from None
    if not isinstance(name, str) or not name:
        raise TaskApiError(f"{url}: /metadata names no env")
    return name


async def read_split(
    base_url: str,
    split: str,
    *,
    split_range: str | None = None,
    timeout: float = 10.0,
    access: ServerAccess | None = None,
) -> SplitTasks:
    """Count `split`'s tasks with the env's Task API and take `split_range` of them."""
    url = base_url.rstrip("/")
    start, stop = parse_range(split_range)
    async with _client(timeout, access) as http:
        listed = await _request(http, "GET", f"{url}/list_environments")
        if listed.status_code in (404, 405, 501):
            raise TaskApiError(
                f"{url}: the env has no Task API (GET /list_environments answered {listed.status_code}); "
                "drop `split` and list reset kwargs in `resets`"
            )
        names = _json(listed, url, "GET /list_environments")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise TaskApiError(f"{url}: GET /list_environments gave {names!r}, not a list of env names")
        name = names[0]
        counted = await _request(http, "POST", f"{url}/{name}/num_tasks", json={"split": split})
        if counted.status_code == 501:
            raise TaskApiError(
                f"{url}: the env {name!r} has no Task API (POST /{name}/num_tasks answered 501); "
                "drop `split` and list reset kwargs in `resets`"
            )
        if counted.status_code != 200:
            known = await _splits(http, url, name)
            hint = f"; its splits: {', '.join(known)}" if known else ""
            raise TaskApiError(
                f"{url}: the env {name!r} has no split {split!r} "
                f"(POST /{name}/num_tasks answered {counted.status_code}){hint}"
            )
        body = _json(counted, url, f"POST /{name}/num_tasks")
        count = body.get("num_tasks") if isinstance(body, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise TaskApiError(f"{url}: POST /{name}/num_tasks gave {body!r}, not a task count")
    indices = range(count)[start:stop]
    if not indices:
        chosen = f" (split_range {split_range})" if split_range else ""
        raise TaskApiError(f"{url}: split {split!r} of {name!r} has {count} tasks; none selected{chosen}")
    return SplitTasks(name, split, count, indices)


async def _request(http: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> httpx.Response:
    try:
        return await http.request(method, url, **kwargs)
    except httpx.HTTPError as e:
        raise TaskApiError(f"{method} {url}: {type(e).__name__}: {e}") from None


def _json(response: httpx.Response, url: str, what: str) -> Any:
    if response.status_code != 200:
        raise TaskApiError(f"{url}: {what} answered {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise TaskApiError(f"{url}: {what} did not answer JSON") from None


async def _splits(http: httpx.AsyncClient, url: str, name: str) -> list[str]:
    """The split names the env lists, or [] when it lists none."""
    try:
        response = await http.get(f"{url}/{name}/splits")
        entries = response.json() if response.status_code == 200 else []
        return [e["name"] if isinstance(e, dict) else str(e) for e in entries]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return []


async def task_label(config: Any) -> str:
    """What names a run's tasks: the env id, else the `/metadata` name of the first server."""
    if config.env:
        return str(config.env)
    return await server_name(config.base_urls[0], access=fleet_access(config))


async def plan(config: Any, *, mcp: bool, resets: list[dict[str, Any]] | None = None) -> list[TaskSpec]:
    """The tasks of a run for an `AdapterConfig`: `resets` (default `config.resets`), or
    the env's Task API split.

    With `split` and no `base_url`, a server is launched through the pool just to read
    the split, and stopped again; the run's own pool starts later, as always."""
    urls: list[str] = config.base_urls
    resets = config.resets if resets is None else resets
    label = await task_label(config) if (config.env or urls) else None
    if not config.split:
        assert label is not None  # the config requires `env` or `base_url`
        return reset_tasks(label, resets)
    if len(resets) > 1:
        raise TaskApiError("with `split`, the tasks come from the env's Task API: give at most one `resets` entry")
    common = resets[0] if resets else {}
    if urls:
        found = await read_split(urls[0], config.split, split_range=config.split_range, access=fleet_access(config))
    else:
        from openenvgen_runtime.fleet.pool import ServerPool

        pool = ServerPool(config, mcp=mcp)
        try:
            await pool.start()
            found = await read_split(
                pool.servers[0].url, config.split, split_range=config.split_range, access=pool.access
            )
        finally:
            await pool.stop()
    return split_tasks(label or found.env_name, found, common)


_PLANS: dict[str, list[TaskSpec]] = {}


def load_specs(config: Any, *, mcp: bool, resets: list[dict[str, Any]] | None = None) -> list[TaskSpec]:
    """`plan`, from synchronous code such as `Taskset.load()`, once per distinct config
    and resets in this process (a split read in launch mode costs a server start)."""
    if not config.split and config.env:
        # The common case needs no server and no event loop.
        return reset_tasks(config.env, config.resets if resets is None else resets)
    key = json.dumps([config.model_dump(mode="json"), resets, mcp], sort_keys=True, default=str)
    if key not in _PLANS:
        _PLANS[key] = run_blocking(plan(config, mcp=mcp, resets=resets))
    return list(_PLANS[key])


def run_blocking(awaitable: Awaitable[_T]) -> _T:
    """Run a coroutine to completion from synchronous code (e.g. `Taskset.load`), on a
    fresh event loop in a worker thread, so it works whether or not a loop is running."""
    result: list[_T] = []
    error: list[BaseException] = []

    async def main() -> None:
        result.append(await awaitable)

    def worker() -> None:
        try:
            asyncio.run(main())
        except BaseException as e:  # re-raised in the caller's thread
            error.append(e)

    thread = threading.Thread(target=worker, name="openenvgen-tasks")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]

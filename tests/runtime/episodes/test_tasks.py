"""Reproducible tasks and OpenEnv's Task API (openenvgen_runtime.episodes.tasks), against real
servers: an in-process `create_app` env with the Task API routes (openenvgen_testsupport.media_envs)
and an openenv 0.10 env project (tests/fixtures/uv_task_env) launched with OpenEnv's UV
provider, whose own HTTP server serves the Task API."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from openenv import GenericEnvClient

from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.episodes.tasks import (
    TaskApiError,
    TaskSpec,
    load_specs,
    parse_range,
    plan,
    read_split,
    reset_tasks,
    run_blocking,
)
from openenvgen_testsupport.adapters import marked_processes, wait_for
from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.media_envs import TASK_ENV_NAME, make_task_api_app
from openenvgen_testsupport.paths import UV_TASK_FIXTURE_APP, UV_TASK_FIXTURE_PROJECT
from openenvgen_testsupport.servers import serve_app


class PackageConfig(AdapterConfig):
    """A generated package's config: its env id is a default, so `base_url` may be set."""

    env: str | None = "test/counting"


@pytest.fixture(scope="module")
def task_server() -> Iterator[str]:
    with serve_app(make_task_api_app(), ready_path="/health") as url:
        yield str(url)


async def _resets(url: str, specs: list[TaskSpec]) -> list[dict[str, Any]]:
    client = GenericEnvClient(base_url=url)
    try:
        return [(await client.reset(**spec.reset)).observation for spec in specs]
    finally:
        await client.close()


def test_each_task_resets_with_its_index_as_seed_unless_it_sets_one(task_server: str) -> None:
    specs = reset_tasks("test/counting", [{}, {"index": 3}, {"seed": 99}])
    assert specs == [
        TaskSpec("test/counting#0", {"seed": 0}),
        TaskSpec("test/counting#1", {"index": 3, "seed": 1}),
        TaskSpec("test/counting#2", {"seed": 99}),
    ]
    # What the env's reset actually received.
    observations = asyncio.run(_resets(task_server, specs))
    assert [(o["seed"], o["index"]) for o in observations] == [(0, None), (1, 3), (99, None)]


def test_task_names_do_not_depend_on_the_transport(task_server: str) -> None:
    launched = run_blocking(plan(PackageConfig(resets=[{}, {"index": 1}]), mcp=False))
    reached = run_blocking(plan(PackageConfig(base_url=task_server, resets=[{}, {"index": 1}]), mcp=False))
    assert launched == reached
    assert [s.name for s in reached] == ["test/counting#0", "test/counting#1"]
    # From synchronous code (`Taskset.load()`), with the resets a package's hooks supply.
    hooked = load_specs(PackageConfig(base_url=task_server), mcp=False, resets=[{"index": 4}])
    assert hooked == [TaskSpec("test/counting#0", {"index": 4, "seed": 0})]
    assert load_specs(PackageConfig(base_url=task_server), mcp=False, resets=[{"index": 4}]) == hooked
    # Without an env id the server's own name (its /metadata) labels the tasks, not its URL.
    anonymous = run_blocking(plan(AdapterConfig(base_url=task_server), mcp=False))
    assert [s.name for s in anonymous] == ["TaskEnvironment#0"]


def test_a_split_is_read_from_the_task_api(task_server: str) -> None:
    found = asyncio.run(read_split(task_server, "train", split_range="2:5"))
    assert (found.env_name, found.split, found.num_tasks, found.indices) == (TASK_ENV_NAME, "train", 12, range(2, 5))
    assert asyncio.run(read_split(task_server, "test")).indices == range(5)
    assert asyncio.run(read_split(task_server, "train", split_range="-2:")).indices == range(10, 12)

    specs = run_blocking(plan(PackageConfig(base_url=task_server, split="train", split_range=":3"), mcp=False))
    assert [s.name for s in specs] == ["test/counting#train:0", "test/counting#train:1", "test/counting#train:2"]
    assert specs[2].reset == {"split": "train", "index": 2, "seed": 2}
    # A single `resets` entry adds its kwargs (its seed wins) to every task of the split.
    common = run_blocking(
        plan(
            PackageConfig(base_url=task_server, split="test", split_range="4:", resets=[{"seed": 5, "hard": True}]),
            mcp=False,
        )
    )
    assert common == [TaskSpec("test/counting#test:4", {"seed": 5, "hard": True, "split": "test", "index": 4})]
    observations = asyncio.run(_resets(task_server, specs))
    assert [(o["split"], o["index"], o["seed"], o["question"]) for o in observations] == [
        ("train", 0, 0, "Say 1."),
        ("train", 1, 1, "Say 2."),
        ("train", 2, 2, "Say 3."),
    ]


def test_task_api_errors_are_one_clear_line(task_server: str) -> None:
    with serve_app(make_wordle_app(), ready_path="/health") as plain:
        with pytest.raises(
            TaskApiError,
            match=r"'wordle_fixture' has no Task API \(POST /wordle_fixture/num_tasks answered 501\); drop `split`",
        ):
            asyncio.run(read_split(str(plain), "train"))
    with pytest.raises(
        TaskApiError,
        match=r"has no split 'dev' \(POST /counting_tasks/num_tasks answered 500\); its splits: train, test",
    ):
        asyncio.run(read_split(task_server, "dev"))
    with pytest.raises(
        TaskApiError, match=r"split 'test' of 'counting_tasks' has 5 tasks; none selected \(split_range 7:\)"
    ):
        asyncio.run(read_split(task_server, "test", split_range="7:"))
    with pytest.raises(TaskApiError, match="give at most one `resets` entry"):
        run_blocking(plan(PackageConfig(base_url=task_server, split="test", resets=[{}, {}]), mcp=False))
    with pytest.raises(TaskApiError, match=r"GET http://127\.0\.0\.1:1/list_environments: ConnectError"):
        asyncio.run(read_split("http://127.0.0.1:1", "test"))
    with pytest.raises(ValueError, match="split_range must be START:STOP"):
        parse_range("5")
    with pytest.raises(ValueError, match="`split_range` picks tasks of a `split`"):
        PackageConfig(split_range="0:2")
    assert parse_range(" 1 : ") == (1, None)


class CountEnvPackage(AdapterConfig):
    env: str | None = "test/count-env"


def _uv_config(marker: str, **extra: Any) -> CountEnvPackage:
    return CountEnvPackage(
        provider_kwargs={
            "project_path": str(UV_TASK_FIXTURE_PROJECT),
            "app": UV_TASK_FIXTURE_APP,
            "env_vars": {"OPENENVGEN_TEST_MARKER": marker},
        },
        startup_timeout=240,
        **extra,
    )


def test_launch_mode_reads_the_split_from_a_server_it_launches_and_stops() -> None:
    """Without `base_url`, the tasks come from an openenv 0.10 server launched just for
    that (verifiers loads tasks before the env starts its pool) and stopped again. Read
    from inside a running event loop, as verifiers calls `Taskset.load()`."""
    marker = f"tasks-{uuid.uuid4().hex}"
    started = time.monotonic()

    async def load() -> list[TaskSpec]:
        return run_blocking(plan(_uv_config(marker, split="test", split_range="1:"), mcp=False))

    specs = asyncio.run(load())
    assert specs == [
        TaskSpec(f"test/count-env#test:{i}", {"split": "test", "index": i, "seed": i}) for i in range(1, 5)
    ]
    assert wait_for(lambda: marked_processes(marker) == [], timeout=30), (
        "the server launched to read the split is still running"
    )
    print(f"launch, read and stop took {time.monotonic() - started:.1f}s")

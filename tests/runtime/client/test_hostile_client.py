"""The typed client (`connect`) against the hostile env server: every class of bad reply in
`hostile_faults.FAULTS` raises the one documented `EnvProtocolError` (a hang, `EnvLost`
within `reply_timeout`), a reply that keeps the contract comes back typed, and a benign
session on the same server plays on. Real servers on loopback."""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from openenvgen_runtime import EnvLost, EnvProtocolError
from openenvgen_testsupport.adapters import generate_from_server
from openenvgen_testsupport.hostile_env import make_hostile_app, target_word
from openenvgen_testsupport.hostile_faults import FAULTS, Fault
from openenvgen_testsupport.servers import serve_app

REPLY_TIMEOUT = 1.5


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    with serve_app(make_hostile_app({}), ready_path="/health") as url:
        yield str(url)


@pytest.fixture(scope="module")
def package(hostile_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    package_id = generate_from_server("hostile", hostile_url, tmp_path_factory.mktemp("pkgs"))
    return importlib.import_module(package_id.replace("-", "_"))


@pytest.mark.parametrize("fault", list(Fault), ids=str)
def test_each_bad_reply_is_one_documented_error(package: Any, hostile_url: str, fault: Fault) -> None:
    documented = FAULTS[fault]
    with package.connect(base_url=hostile_url, reply_timeout=REPLY_TIMEOUT, max_reply_mb=100) as env:
        started = time.monotonic()
        if fault is Fault.RESET_HANGS:
            with pytest.raises(EnvLost, match="TimeoutError"):
                env.reset(seed=1, fault=fault.value)
        else:
            env.reset(seed=1, fault=fault.value)
            if documented.outcome == "env_lost":
                with pytest.raises(EnvLost, match="TimeoutError"):
                    env.step({"message": "hello"})
            elif documented.outcome == "env_protocol_error":
                with pytest.raises(EnvProtocolError) as raised:
                    env.step({"message": "hello"})
                message = str(raised.value)
                assert "\n" not in message and len(message) < 300, message[:300]
                assert raised.value.field in (documented.field, "frame"), (raised.value.field, message)
            else:
                result = env.step({"message": "hello"})
                assert result.reward is not None and math.isfinite(result.reward) and result.done is False
                assert len(result.observation.text) < 70_000  # the 60 MB text cut at max_observation_chars
                if documented.outcome == "bounded":
                    assert result.observation.text.endswith("over max_observation_chars (65,536)]")
        assert time.monotonic() - started < REPLY_TIMEOUT + 15
    # The same server still plays a benign session, beside a hung one too.
    with package.connect(base_url=hostile_url, reply_timeout=REPLY_TIMEOUT) as env:
        env.reset(seed=2)
        won = env.step({"message": target_word(2)})
        assert (won.reward, won.done) == (1.0, True)


def test_a_bad_reset_reply_and_a_refused_overflow_are_the_same_error(package: Any, hostile_url: str) -> None:
    with package.connect(base_url=hostile_url, reply_timeout=REPLY_TIMEOUT) as env:
        with pytest.raises(EnvProtocolError, match="reward: Infinity"):
            env.reset(fault="reward_infinity", fault_on="reset")
    # The frame bound at its default (32 MiB): the 60 MB frame is refused, the session closed.
    with package.connect(base_url=hostile_url, reply_timeout=10) as env:
        env.reset(fault="observation_huge")
        with pytest.raises(EnvProtocolError, match="frame: over max_reply_mb"):
            env.step({"message": "hello"})
    with package.connect(base_url=hostile_url, observation_overflow="refuse", max_reply_mb=100) as env:
        env.reset(fault="observation_huge")
        with pytest.raises(EnvProtocolError, match=r"observation\.text: a string of 62,914,560 characters, over"):
            env.step({"message": "hello"})

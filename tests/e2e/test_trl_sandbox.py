"""TRL trains on a code-executing package in the Docker sandbox: a real `GRPOTrainer` runs
2 steps on CPU with `environment_factory` set to the generated class of the code env
(`tests/fixtures/uv_code_env`, generated with `--executes-code`, so sandboxed by default),
launched by the class's own pool in a sandboxed container on the machine's daemon. The tiny
model is taught to answer "Finish." with code that prints `done` (the env's reward 1.0, which
only a step run in the container gives) and "Print hi." with code that does not (0.0). The
rewards TRL logs are those scores; once the class is closed when training ends (as the TRL
page writes it), no container of this run is left.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Iterator

import pytest

from openenvgen_testsupport import docker_images
from openenvgen_testsupport.adapters import generate_code_env_package
from openenvgen_testsupport.tiny_model import ToolCall, cpu_grpo_config, tiny_tool_caller, tool_methods

pytestmark = [pytest.mark.docker, pytest.mark.rollout, pytest.mark.timeout(900)]
RUN = uuid.uuid4().hex
CODES = {"Finish.": "print('done')", "Print hi.": "print('hi')"}
STEPS = 2
GENERATIONS = 2


@pytest.fixture(scope="module", autouse=True)
def host_left_as_found() -> Iterator[None]:
    with docker_images.host_left_as_found(RUN):
        yield


def test_grpo_trains_on_the_sandboxed_code_env(token: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import GRPOTrainer

    image = docker_images.code_env_image()
    package = generate_code_env_package(tmp_path_factory.mktemp("pkgs"))
    trl_module = importlib.import_module(f"{package.replace('-', '_')}.trl")
    labels = {docker_images.TEST_LABEL: token, docker_images.RUN_LABEL: RUN}
    environment_class = trl_module.environment_class(
        env="test/code-env",
        use_docker=True,
        startup_timeout=180,
        # One container per session: on a loaded machine the batch's starts outlast the default wait.
        unavailable_timeout=600,
        provider_kwargs={"image": image, "labels": labels},
    )
    try:
        probe = environment_class()
        (tool,) = tool_methods(probe)
        (parameter,) = get_json_schema(tool)["function"]["parameters"]["properties"]
        observation = probe.reset()
        replies = [tool(**{parameter: code}) for code in reversed(CODES.values())]
        lessons = [(prompt + observation, ToolCall(tool.__name__, {parameter: code})) for prompt, code in CODES.items()]
        tiny = tiny_tool_caller(tool_methods(probe), lessons, replies, steps=150)
        assert tiny.final_loss < 0.05, tiny.final_loss

        rows = [[{"role": "user", "content": prompt}] for prompt in CODES]
        args = cpu_grpo_config(
            str(tmp_path_factory.mktemp("out")), steps=STEPS, batch=len(CODES) * GENERATIONS, generations=GENERATIONS
        )
        trainer = GRPOTrainer(
            model=tiny.model,
            processing_class=tiny.tokenizer,
            args=args,
            train_dataset=Dataset.from_dict({"prompt": rows * STEPS}),
            environment_factory=environment_class,
        )
        trainer.train()
        assert docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}"), "no sandboxed container ran"
    finally:
        environment_class.close()  # as the TRL page writes it (contextlib.closing)
    steps = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert trainer.state.global_step == STEPS and len(steps) == STEPS, trainer.state.log_history
    assert all(entry["tools/failure_frequency"] == 0 for entry in steps), steps
    rewards = [entry[f"rewards/{environment_class.__name__}/mean"] for entry in steps]
    # Only code run in the container pays: some episode of the run printed done, not every one.
    assert 0.0 < sum(rewards) / STEPS < 1.0, rewards
    assert docker_images.ours("container", f"{docker_images.TEST_LABEL}={token}") == []

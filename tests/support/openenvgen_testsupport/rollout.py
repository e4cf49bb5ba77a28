"""Run real verifiers evaluations (`vf-eval`) against loopback servers and read the results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))
_DONE = re.compile(r"rollout done: .*?reward=(?P<reward>-?[\d.]+).*?stop=(?P<stop>\S+)")


@dataclass
class EvalRun:
    returncode: int
    stdout: str
    stderr: str
    episodes: list[dict[str, Any]]

    @property
    def traces(self) -> list[dict[str, Any]]:
        return [t for e in self.episodes for t in e["traces"]]

    @property
    def printed(self) -> list[tuple[float, str]]:
        """(reward, stop condition) of each `rollout done` line vf-eval printed."""
        return [(float(m["reward"]), m["stop"]) for m in _DONE.finditer(self.stderr)]


def write_eval_config(
    taskset_id: str,
    *,
    model_url: str,
    out_dir: Path,
    taskset: dict[str, Any] | None = None,
    player: dict[str, Any] | None = None,
    num_rollouts: int = 1,
    max_concurrent: int = 4,
) -> Path:
    """`out_dir/eval.toml`: one vf-eval run of `taskset_id` against the scripted model."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "scripted-model",
        "num_rollouts": num_rollouts,
        "max_concurrent": max_concurrent,
        "push": False,
        "output_dir": str(out_dir),
        "client": {"base_url": f"{model_url}/v1", "api_key_var": "SCRIPTED_API_KEY"},
        "env": {"taskset": {"id": taskset_id, **(taskset or {})}, "player": player or {"max_turns": 12}},
    }
    path = out_dir / "eval.toml"
    path.write_text(tomli_w.dumps(config))
    return path


def _eval_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "SCRIPTED_API_KEY": "scripted", "NO_COLOR": "1", **extra}


def start_eval(taskset_id: str, *, model_url: str, out_dir: Path, taskset: dict[str, Any]) -> subprocess.Popen[bytes]:
    """`vf-eval` in the background, for a test to signal; it imports what this process can
    (packages generated here), and its output goes to `out_dir/vf-eval.log`."""
    path = write_eval_config(taskset_id, model_url=model_url, out_dir=out_dir, taskset=taskset)
    with (out_dir / "vf-eval.log").open("wb") as log:
        return subprocess.Popen(
            [VF_EVAL, "@", str(path), "--no-rich"],
            env=_eval_env(PYTHONPATH=os.pathsep.join(sys.path)),
            cwd=out_dir,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def run_eval(
    taskset_id: str,
    *,
    model_url: str,
    out_dir: Path,
    taskset: dict[str, Any] | None = None,
    player: dict[str, Any] | None = None,
    num_rollouts: int = 1,
    max_concurrent: int = 4,
    timeout: float = 600,
    extra_args: list[str] | None = None,
) -> EvalRun:
    """`vf-eval @ config.toml` with the scripted model at `model_url` (no network beyond loopback)."""
    path = write_eval_config(
        taskset_id,
        model_url=model_url,
        out_dir=out_dir,
        taskset=taskset,
        player=player,
        num_rollouts=num_rollouts,
        max_concurrent=max_concurrent,
    )
    proc = subprocess.run(
        [VF_EVAL, "@", str(path), "--no-rich", *(extra_args or [])],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_eval_env(),
        cwd=out_dir,
    )
    episodes = []
    for traces in sorted(out_dir.glob("*/traces.jsonl")):
        episodes += [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]
    return EvalRun(proc.returncode, proc.stdout, proc.stderr, episodes)

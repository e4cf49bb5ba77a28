"""P1: a cold `openenv-gen wordle --out DIR` (no caches, a new package, scaffold included) at
most 1.5x datamodel-code-generator's own CLI, `datamodel-codegen`, making the same package's
action model alone (Wordle's `TextArenaAction`, from the same schema, with the options
openenv-gen passes it), side by side in one run: the commands take turns round-robin after
one uncounted warm-up round, each with Python's bytecode cache on in a folder of the run's
own; the ratio is of the medians. Beside it, not judged: `--version` and the generation with
the model cache warm. The run checks
that datamodel-codegen's classes are the package's, byte for byte."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from common import BIN, bench_env, cli, log, median, row, run_timed

from openenvgen_testsupport.paths import OPENENV_GEN

GEN_COLD = "openenv-gen wordle --out DIR (no caches)"
DMCG = "datamodel-codegen (Wordle's action model)"
GEN_WARM = "openenv-gen wordle --out DIR (model cache warm)"
VERSION = "openenv-gen --version"
TARGET = 1.5
"""A cold `openenv-gen wordle`, as a multiple of datamodel-codegen making its action model."""


def datamodel_codegen_command(schema: Path, output: Path) -> list[str]:
    """`datamodel-codegen` making `schema`'s model with the options openenv-gen gives it."""
    from openenvgen.generation.codegen import CODEGEN_OPTIONS

    command = [
        str(BIN / "datamodel-codegen"),
        *("--input", str(schema), "--input-file-type", "jsonschema", "--output", str(output)),
        *("--output-model-type", "pydantic_v2.BaseModel", "--target-python-version", "3.11"),
        *("--formatters", "ruff-check", "ruff-format"),
    ]
    for key, value in CODEGEN_OPTIONS.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            command.append(flag)
        elif value is False:
            # Off is datamodel-codegen's default unless it has a `--no-` form to say so.
            if f"--no-{flag[2:]}" in _dmcg_help():
                command.append(f"--no-{flag[2:]}")
        else:
            command += [flag, str(value)]
    return command


@functools.cache
def _dmcg_help() -> str:
    return subprocess.run([str(BIN / "datamodel-codegen"), "--help"], capture_output=True, text=True).stdout


def _classes(source: str) -> dict[str, str]:
    """Each top-level class of a module, by name, as its source text."""
    blocks = re.split(r"\n(?=class \w)", source)
    return {m.group(1): block.strip() for block in blocks if (m := re.match(r"class (\w+)", block))}


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    reps = 5 if quick else 9
    work = Path(tempfile.mkdtemp(prefix="p1-", dir=workdir))
    # Bytecode cached as an installed package has it (an empty PYTHONDONTWRITEBYTECODE is unset).
    compiled = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    cold = {**compiled, "OPENENV_GEN_CACHE": "0"}
    # The model cache, private to this run and warmed by the uncounted first round.
    warm = {**compiled, "OPENENV_GEN_CACHE": str(work / "models-cache")}
    from openenvgen.generation.package import resolve_spec

    schema = work / "wordle-action.json"
    schema.write_text(json.dumps(resolve_spec("wordle").action_schema), "utf-8")

    def fresh(rep: int, tag: str) -> list[str]:
        return [OPENENV_GEN, "wordle", "--out", str(work / f"wordle-{tag}-{rep}")]

    _, probe = run_timed(datamodel_codegen_command(schema, work / "dmcg-probe.py"), work, bench_env())
    if probe.returncode != 0:
        raise RuntimeError(f"datamodel-codegen failed: {probe.stderr.strip()[-500:]}")

    commands: dict[str, tuple[Any, dict[str, str]]] = {
        VERSION: (lambda rep: [OPENENV_GEN, "--version"], compiled),
        GEN_COLD: (lambda rep: fresh(rep, "cold"), cold),
        DMCG: (lambda rep: datamodel_codegen_command(schema, work / f"dmcg-{rep}.py"), compiled),
        GEN_WARM: (lambda rep: fresh(rep, "warm"), warm),
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    failures: list[str] = []
    # One warm-up round (page cache, bytecode, the model cache), not counted; then round-robin.
    for rep in range(reps + 1):
        for label, (argv, extra_env) in commands.items():
            seconds, result = run_timed(argv(rep), work, {**bench_env(), **extra_env})
            if result.returncode != 0:
                failures.append(f"{label}: rc={result.returncode}: {result.stderr.strip()[-300:]}")
            if rep:
                times[label].append(seconds)
    medians = {k: round(median(v), 3) for k, v in times.items()}
    cold_s, dmcg_s, warm_s = medians[GEN_COLD], medians[DMCG], medians[GEN_WARM]
    ratio = cold_s / dmcg_s
    # The same model: datamodel-codegen's class is the package's, byte for byte.
    action = _classes((work / "dmcg-0.py").read_text("utf-8"))
    package = _classes((work / "wordle-cold-0" / "wordle_openenv" / "models.py").read_text("utf-8"))
    same_model = bool(action) and all(package.get(name) == text for name, text in action.items())
    if not same_model:
        failures.append(f"datamodel-codegen's {sorted(action)} differ from the package's models")
    log(f"P1 openenv-gen {cold_s:.3f}s / datamodel-codegen {dmcg_s:.3f}s = {ratio:.2f} (target {TARGET:g})")
    return [
        row(
            "P1",
            "cold `openenv-gen wordle --out DIR` vs `datamodel-codegen` making its action model",
            f"≤ {TARGET:g}× datamodel-codegen, side by side (no caches, a new package)",
            f"openenv-gen {cold_s:.3f} s, datamodel-codegen {dmcg_s:.3f} s (medians of {reps}); model cache warm "
            f"{warm_s:.3f} s, `--version` {medians[VERSION]:.3f} s",
            round(ratio, 2),
            ratio <= TARGET and not failures,
            label="openenv-gen (cold) / datamodel-codegen",
            median_s=medians,
            all_s={k: [round(x, 3) for x in v] for k, v in times.items()},
            same_model=same_model,
            failures=failures,
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

"""P1: a cold `openenv-gen wordle --out DIR` (no caches, a new package, scaffold included)
against datamodel-code-generator's own CLI, `datamodel-codegen`, generating the same action
model (Wordle's `TextArenaAction`, from the same schema, with the options openenv-gen passes
it: `codegen.CODEGEN_OPTIONS`, Python 3.11, pydantic v2, formatted by ruff check + ruff
format), measured side by side in one run. The target is the ratio: openenv-gen making a
whole package, from nothing, takes no longer than the model generator it is built on takes
to make one of its models (≤ 1.0).

Side by side in one run, interleaved round-robin so machine noise hits all of them alike:
the interpreter's floor (`python -c pass`), `openenv-gen --version`, the two commands above,
the generation with the model cache warm (openenv-gen's one cache; a repeated generation or
`check`), regeneration into the existing package, and what the generation path must never
pay: importing verifiers (V1) and OpenEnv's client. Every command runs with Python's
bytecode cache on, in a folder of the run's own (`PYTHONPYCACHEPREFIX`; a pip install
compiles bytecode, and a `PYTHONDONTWRITEBYTECODE` in the environment would otherwise have
every import compile its module), filled by the uncounted first round. The run also checks
that datamodel-codegen's model is the one in the package's models.py, class for class. Then
`-X importtime` runs (import time grouped by top-level package, and a check that neither
verifiers nor openenv is imported) and cProfile runs (where the time goes)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import BIN, bench_env, load_average, log, median, run_timed
from profiling import importtime, profile

from openenvgen_testsupport.paths import OPENENV_GEN

GEN_COLD = "openenv-gen wordle --out DIR (no caches)"
DMCG = "datamodel-codegen (Wordle's action model)"
GEN_SERIAL = "openenv-gen wordle --out DIR (no caches, OPENENV_GEN_WORKER=0)"
GEN_WARM = "openenv-gen wordle --out DIR (model cache warm)"
GEN_AGAIN = "openenv-gen wordle --out DIR (DIR already generated)"
VERSION = "openenv-gen --version"
TARGET = 1.0
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


def run(quick: bool, workdir: Path) -> dict[str, Any]:
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

    probe = run_timed(datamodel_codegen_command(schema, work / "dmcg-probe.py"), cwd=work, env=bench_env())
    if probe.returncode != 0:
        raise RuntimeError(f"datamodel-codegen failed: {probe.stderr.strip()[-500:]}")

    commands: dict[str, tuple[Any, dict[str, str]]] = {
        "python -c pass": (lambda rep: [sys.executable, "-c", "pass"], compiled),
        VERSION: (lambda rep: [OPENENV_GEN, "--version"], compiled),
        GEN_COLD: (lambda rep: fresh(rep, "cold"), cold),
        GEN_SERIAL: (lambda rep: fresh(rep, "serial"), {**cold, "OPENENV_GEN_WORKER": "0"}),
        DMCG: (lambda rep: datamodel_codegen_command(schema, work / f"dmcg-{rep}.py"), compiled),
        GEN_WARM: (lambda rep: fresh(rep, "warm"), warm),
        GEN_AGAIN: (lambda rep: [OPENENV_GEN, "wordle", "--out", str(work / "wordle-again")], warm),
        "python -c 'import verifiers.v1'": (lambda rep: [sys.executable, "-c", "import verifiers.v1"], compiled),
        "python -c 'from openenv import GenericEnvClient'": (
            lambda rep: [sys.executable, "-c", "from openenv import GenericEnvClient"],
            compiled,
        ),
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    failures: list[str] = []
    load_before = load_average()
    # One warm-up round (page cache, bytecode, the model cache), not counted; then round-robin.
    for rep in range(reps + 1):
        for label, (argv, extra_env) in commands.items():
            result = run_timed(argv(rep), cwd=work, env={**bench_env(), **extra_env})
            if result.returncode != 0:
                failures.append(f"{label}: rc={result.returncode}: {result.stderr.strip()[-300:]}")
            if rep:
                times[label].append(result.seconds)
    medians = {k: round(median(v), 3) for k, v in times.items()}
    cold_s, dmcg_s, warm_s, again_s = medians[GEN_COLD], medians[DMCG], medians[GEN_WARM], medians[GEN_AGAIN]
    ratio = cold_s / dmcg_s
    # The same model: datamodel-codegen's class is the package's, byte for byte.
    action = _classes((work / "dmcg-0.py").read_text("utf-8"))
    package = _classes((work / "wordle-cold-0" / "wordle_openenv" / "models.py").read_text("utf-8"))
    same_model = bool(action) and all(package.get(name) == text for name, text in action.items())
    if not same_model:
        failures.append(f"datamodel-codegen's {sorted(action)} differ from the package's models")
    log(
        f"P1 cold openenv-gen wordle {cold_s:.3f}s vs datamodel-codegen {dmcg_s:.3f}s: {ratio:.2f}x "
        f"(target {TARGET:g}x); model cache warm {warm_s:.3f}s, in place {again_s:.3f}s, --version "
        f"{medians[VERSION]:.3f}s, over {reps}; load {load_average()}"
    )
    imports_cold = importtime(["wordle", "--out", str(work / "wordle-importtime-cold")], work, cold)
    imports = importtime(["wordle", "--out", str(work / "wordle-importtime")], work, warm)
    prof_cold = profile(["wordle", "--out", str(work / "wordle-profile-cold")], work, cold)
    prof = profile(["wordle", "--out", str(work / "wordle-profile")], work, warm)
    return {
        "id": "P1",
        "title": "cold `openenv-gen wordle --out DIR` vs `datamodel-codegen` making its action model",
        "target": f"≤ {TARGET:g}× datamodel-codegen, side by side (no caches, a new package)",
        "measured": f"openenv-gen {cold_s:.3f} s, datamodel-codegen {dmcg_s:.3f} s (medians of {reps}); "
        f"{warm_s:.3f} s with the model cache warm, {again_s:.3f} s in place, `--version` {medians[VERSION]:.3f} s",
        "ratio": round(ratio, 2),
        "ratio_label": "openenv-gen (cold) / datamodel-codegen",
        "meets_target": ratio <= TARGET and not failures,
        "details": {
            "repetitions": reps,
            "load_average_before_after": [load_before, load_average()],
            "median_s": medians,
            "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
            "datamodel_codegen_command": " ".join(datamodel_codegen_command(schema, Path("OUT.py"))[1:]),
            "same_model": same_model,
            "model_cache_saves_s": round(cold_s - warm_s, 3),
            "generation_vs_python_floor": round(cold_s / medians["python -c pass"], 1),
            "verifiers_import_vs_generation": round(medians["python -c 'import verifiers.v1'"] / cold_s, 1),
            "openenv_client_import_vs_generation": round(
                medians["python -c 'from openenv import GenericEnvClient'"] / cold_s, 1
            ),
            "importtime": imports_cold,
            "importtime_warm": imports,
            "cprofile": prof_cold,
            "cprofile_warm": prof,
            "failures": failures,
        },
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    ns = parser.parse_args()
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-"))), indent=2))

"""P1: whole-process `openenv-gen wordle --out DIR` wall time (embedded snapshot, offline),
against the CLI's own floor, `openenv-gen --version`, measured in the same run.

Side by side in one run, interleaved round-robin so machine noise hits all of them alike:
the interpreter's floor (`python -c pass`), the CLI's floor (`openenv-gen --version`), the
generation of a new package (scaffold included) into a new DIR with openenv-gen's caches
warm (the headline: the generation memo answers it), the same with the caches disabled (a
first run, or CI without a cache: the whole generation), regeneration into the existing
package (nothing changed: the memo proves it from the lock), and what the generation path
must never pay: importing verifiers (V1) and OpenEnv's client. The targets are ratios to
`--version` (new package ≤ 5×, in place ≤ 3×, `--version` itself ≤ 0.12 s), so a slow or
busy machine moves both sides. Every command runs with Python's bytecode cache on, in a
folder of the run's own (`PYTHONPYCACHEPREFIX`; a pip install compiles bytecode, and a
`PYTHONDONTWRITEBYTECODE` in the environment would otherwise have every import compile its
module), filled by the uncounted first round. Then `-X importtime` runs (import time
grouped by top-level package, and a check that neither verifiers nor openenv is imported)
and cProfile runs (where the time goes)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import bench_env, load_average, log, median, run_timed
from profiling import importtime, profile

from openenvgen_testsupport.paths import OPENENV_GEN

VERSION = "openenv-gen --version"
GEN = "openenv-gen wordle --out DIR"
GEN_COLD = "openenv-gen wordle --out DIR (no caches)"
GEN_AGAIN = "openenv-gen wordle --out DIR (DIR already generated)"
TARGET_VERSION_S = 0.12
"""`openenv-gen --version`, the CLI's start-up floor."""
TARGET_NEW = 5.0
"""A new package (scaffold included), as a multiple of `--version` in the same run."""
TARGET_AGAIN = 3.0
"""Regenerating in place, as a multiple of `--version` in the same run."""


def run(quick: bool, workdir: Path) -> dict[str, Any]:
    reps = 5 if quick else 9
    work = Path(tempfile.mkdtemp(prefix="p1-", dir=workdir))
    # Bytecode cached as an installed package has it (an empty PYTHONDONTWRITEBYTECODE is unset).
    compiled = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    # openenv-gen caches generated models, whole generations and compiled templates by content
    # (OPENENV_GEN_CACHE). A private cache, warmed by the uncounted first round, makes "warm"
    # independent of ~/.cache; "cold" disables it: a first run, or CI without a cache.
    warm = {**compiled, "OPENENV_GEN_CACHE": str(work / "models-cache")}
    cold = {**compiled, "OPENENV_GEN_CACHE": "0"}

    def fresh(rep: int, tag: str) -> list[str]:
        return [OPENENV_GEN, "wordle", "--out", str(work / f"wordle-{tag}-{rep}")]

    commands: dict[str, tuple[Any, dict[str, str]]] = {
        "python -c pass": (lambda rep: [sys.executable, "-c", "pass"], compiled),
        VERSION: (lambda rep: [OPENENV_GEN, "--version"], compiled),
        GEN: (lambda rep: fresh(rep, "warm"), warm),
        GEN_COLD: (lambda rep: fresh(rep, "cold"), cold),
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
    # One warm-up round (page cache, bytecode, openenv-gen's caches), not counted; then round-robin.
    for rep in range(reps + 1):
        for label, (argv, extra_env) in commands.items():
            result = run_timed(argv(rep), cwd=work, env={**bench_env(), **extra_env})
            if result.returncode != 0:
                failures.append(f"{label}: rc={result.returncode}: {result.stderr.strip()[-300:]}")
            if rep:
                times[label].append(result.seconds)
    medians = {k: round(median(v), 3) for k, v in times.items()}
    version, gen, gen_cold, again = medians[VERSION], medians[GEN], medians[GEN_COLD], medians[GEN_AGAIN]
    ratio, ratio_again, ratio_cold = gen / version, again / version, gen_cold / version
    log(
        f"P1 --version {version:.3f}s; new package {gen:.3f}s ({ratio:.1f}x), in place {again:.3f}s "
        f"({ratio_again:.1f}x), no caches {gen_cold:.3f}s ({ratio_cold:.1f}x), over {reps} "
        f"(targets {TARGET_NEW:g}x, {TARGET_AGAIN:g}x, --version {TARGET_VERSION_S} s); load {load_average()}"
    )
    imports = importtime(["wordle", "--out", str(work / "wordle-importtime")], work, warm)
    imports_cold = importtime(["wordle", "--out", str(work / "wordle-importtime-cold")], work, cold)
    imports_again = importtime(["wordle", "--out", str(work / "wordle-again")], work, warm)
    prof = profile(["wordle", "--out", str(work / "wordle-profile")], work, warm)
    prof_cold = profile(["wordle", "--out", str(work / "wordle-profile-cold")], work, cold)
    prof_again = profile(["wordle", "--out", str(work / "wordle-again")], work, warm)
    meets = ratio <= TARGET_NEW and ratio_again <= TARGET_AGAIN and version <= TARGET_VERSION_S
    return {
        "id": "P1",
        "title": "`openenv-gen wordle --out DIR`, whole process, vs `openenv-gen --version`",
        "target": f"new package ≤ {TARGET_NEW:g}× `--version`, in place ≤ {TARGET_AGAIN:g}×; "
        f"`--version` ≤ {TARGET_VERSION_S} s",
        "measured": f"new package {gen:.3f} s, in place {again:.3f} s, `--version` {version:.3f} s "
        f"(medians of {reps}, caches warm); {gen_cold:.3f} s with no caches (first run, bare CI)",
        "ratio": round(ratio, 2),
        "ratio_text": f"{ratio:.1f}× / {ratio_again:.1f}×",
        "ratio_label": "new package / `--version`, in place / `--version`",
        "meets_target": meets and not failures,
        "meets_target_cold": ratio_cold <= TARGET_NEW,
        "details": {
            "repetitions": reps,
            "load_average_before_after": [load_before, load_average()],
            "median_s": medians,
            "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
            "ratio_in_place": round(ratio_again, 2),
            "ratio_cold": round(ratio_cold, 2),
            "generation_vs_python_floor": round(gen / medians["python -c pass"], 1),
            "verifiers_import_vs_generation": round(medians["python -c 'import verifiers.v1'"] / gen, 1),
            "openenv_client_import_vs_generation": round(
                medians["python -c 'from openenv import GenericEnvClient'"] / gen, 1
            ),
            "importtime": imports,
            "importtime_cold": imports_cold,
            "importtime_regenerate_in_place": imports_again,
            "cprofile": prof,
            "cprofile_cold": prof_cold,
            "cprofile_regenerate_in_place": prof_again,
            "failures": failures,
        },
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    ns = parser.parse_args()
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-"))), indent=2))

"""P2: `openenv-gen check` over 10 packages (the first 10 checked-in packages of `generated/`
by name) in one process, at most 1 s, median of rounds taken in turn with `check` of one
package (the fixed cost and the per-package slope apart) and of the 10 with the model cache
disabled, after one uncounted round that warms a model cache and a bytecode cache of the
run's own (Python's bytecode cache on, as an installed package has it). `check` exits 0 when
every package is up to date, 1 when one is stale, 2 on drift: only 0 passes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from common import bench_env, cli, log, median, row, run_timed

from openenvgen_testsupport.paths import OPENENV_GEN, ROOT

TARGET_S = 1.0
PACKAGES = 10


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    reps = 5 if quick else 9
    work = Path(tempfile.mkdtemp(prefix="p2-", dir=workdir))
    packages = sorted(p for p in (ROOT / "generated").iterdir() if any(p.glob("*/snapshot.json")))[:PACKAGES]
    if len(packages) != PACKAGES:
        raise RuntimeError(f"P2 needs {PACKAGES} packages in generated/, found {len(packages)}")
    # Bytecode cached as an installed package has it (see P1), and a model cache of the run's own.
    compiled = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    warm = {**compiled, "OPENENV_GEN_CACHE": str(work / "models-cache")}
    all_ten = [OPENENV_GEN, "check", *map(str, packages)]
    commands = {
        "check (10 packages)": (all_ten, warm),
        "check (10 packages, no model cache)": (all_ten, {**compiled, "OPENENV_GEN_CACHE": "0"}),
        "check (1 package)": ([OPENENV_GEN, "check", str(packages[0])], warm),
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    codes: dict[str, set[int]] = {k: set() for k in commands}
    said: list[str] = []
    for rep in range(reps + 1):
        for label, (cmd, extra_env) in commands.items():
            seconds, result = run_timed(cmd, ROOT, {**bench_env(), **extra_env})
            codes[label].add(result.returncode)
            if result.returncode:
                said += [line for line in (result.stdout + result.stderr).splitlines() if "up to date" not in line][:5]
            if rep:
                times[label].append(seconds)
    ten, cold, one = (median(v) for v in times.values())
    per_package = (ten - one) / (PACKAGES - 1)
    log(f"P2 check x{PACKAGES} median {ten:.3f}s warm, {cold:.3f}s cold (target {TARGET_S}s)")
    ok = all(c == {0} for c in codes.values())
    return [
        row(
            "P2",
            f"`openenv-gen check` over {PACKAGES} packages, one process",
            f"≤ {TARGET_S} s",
            f"{ten:.3f} s median of {reps} (model cache warm); {cold:.3f} s with no cache; per package "
            f"{per_package:.3f} s, fixed {one - per_package:.3f} s; exit codes "
            + ("0 (every package up to date)" if ok else f"{ {k: sorted(v) for k, v in codes.items()} }: {said[:3]}"),
            round(ten / TARGET_S, 2),
            ten <= TARGET_S and ok,
            label="median / target",
            packages=[p.name for p in packages],
            all_s={k: [round(x, 3) for x in v] for k, v in times.items()},
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

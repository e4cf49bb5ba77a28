"""P2: `openenv-gen check` over 10 packages in one process.

The target names 10 packages, so exactly 10 are checked: the first 10 checked-in packages
of `generated/` by name, topped up (if there are fewer) with packages generated for this
run from schemas captured off the fixture envs (`--schema-file`). `check` exits 0 when
every package is up to date, 1 when one is stale, 2 on drift: only exit 0 is a pass; a
stale package makes P2 fail and is named. Side by side: `check` of one package, so the
per-package cost (the slope) and the fixed cost (imports) can be told apart, and the
10-package check with openenv-gen's model cache disabled. Then `-X importtime` and
cProfile runs of the 10-package check, warm and cold.

None of the 10 has hooks in a `custom.py`, so none is type-checked (mypy never runs or is
imported). Apart, not counted against the target: `check` of one package with typed hooks
(connect4, generated for this run, its `custom.py` annotated with its models), which runs
mypy, with mypy's cache warm (warmed by the uncounted first round) and cold (a fresh cache
dir each time, fewer rounds: a cold run reads verifiers and its dependencies).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from common import bench_env, log, median, run_timed
from profiling import importtime, profile

from openenvgen_testsupport.paths import OPENENV_GEN, ROOT

TARGET_S = 1.0
PACKAGES = 10
HOOKS = """\
import verifiers.v1 as vf
from pydantic import MISSING

from .models import Connect4Observation


@vf.reward(weight=0.5)
def center_control(observation: Connect4Observation) -> float:
    if observation.board is MISSING:
        return 0.0
    return float(sum(row[3] == 1 for row in observation.board))
"""
"""A typed reward, as a user writes one: the hooks the typed-hooks rows check."""


def capture_fixture_schemas(out: Path) -> list[tuple[str, Path]]:
    """Schema files (`{"schema", "metadata", "tools"}` captures) of the three fixture envs,
    read from their real servers on loopback."""
    import httpx

    from openenvgen_testsupport.fixture_envs import make_grid_app, make_mcp_app, make_wordle_app
    from openenvgen_testsupport.servers import serve_app

    files = []
    for name, factory in (
        ("fixture_wordle", make_wordle_app),
        ("fixture_grid", make_grid_app),
        ("fixture_mcp", make_mcp_app),
    ):
        with serve_app(factory(), ready_path="/health") as url:
            schema = httpx.get(f"{url}/schema", timeout=10).json()
            capture: dict[str, Any] = {
                "schema": {"action": schema["action"], "observation": schema["observation"]},
                "metadata": httpx.get(f"{url}/metadata", timeout=10).json(),
            }
            if name == "fixture_mcp":
                reply = httpx.post(
                    f"{url}/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}, timeout=10
                )
                capture["tools"] = reply.json()["result"]["tools"]
        path = out / f"{name}.json"
        path.write_text(json.dumps(capture, indent=1))
        files.append((name, path))
    return files


def run(quick: bool, workdir: Path) -> dict[str, Any]:
    reps = 5 if quick else 9
    work = Path(tempfile.mkdtemp(prefix="p2-", dir=workdir))
    checked_in = sorted(p for p in (ROOT / "generated").iterdir() if p.is_dir() and any(p.glob("*/snapshot.json")))[
        :PACKAGES
    ]
    extra: list[Path] = []
    for name, schema_file in capture_fixture_schemas(work):
        if len(checked_in) + len(extra) >= PACKAGES:
            break
        out = work / f"{name.replace('_', '-')}-openenv"
        gen = run_timed([OPENENV_GEN, name, "--schema-file", str(schema_file), "--out", str(out)], cwd=work)
        if gen.returncode != 0:
            raise RuntimeError(f"openenv-gen {name} --schema-file failed: {gen.stderr.strip()}")
        extra.append(out)
    packages = [*checked_in, *extra]
    if len(packages) != PACKAGES:
        raise RuntimeError(f"P2 needs {PACKAGES} packages, found {len(packages)}")
    one = [checked_in[0]]
    hooked = work / "connect4-hooks-openenv"
    gen = run_timed([OPENENV_GEN, "connect4", "--out", str(hooked)], cwd=work)
    if gen.returncode != 0:
        raise RuntimeError(f"openenv-gen connect4 failed: {gen.stderr.strip()}")
    (hooked / "connect4_openenv" / "custom.py").write_text(HOOKS)
    # A private model cache, warmed by the uncounted first round (see P1); cold = disabled.
    warm = {"OPENENV_GEN_CACHE": str(work / "models-cache")}
    cold = {"OPENENV_GEN_CACHE": "0"}
    ten_label = f"check ({len(packages)} packages)"
    cold_label = f"check ({len(packages)} packages, no model cache)"
    # mypy's cache lives under XDG_CACHE_HOME; the model cache stays `warm`'s.
    hooks_warm_label = "check (1 package, typed hooks, mypy cache warm)"
    hooks_cold_label = "check (1 package, typed hooks, mypy cache cold)"
    hooks_warm = {**warm, "XDG_CACHE_HOME": str(work / "mypy-warm")}
    commands = {
        ten_label: ([OPENENV_GEN, "check", *map(str, packages)], warm),
        cold_label: ([OPENENV_GEN, "check", *map(str, packages)], cold),
        "check (1 package)": ([OPENENV_GEN, "check", *map(str, one)], warm),
        hooks_warm_label: ([OPENENV_GEN, "check", str(hooked)], hooks_warm),
        "openenv-gen --version": ([OPENENV_GEN, "--version"], {}),
    }
    times: dict[str, list[float]] = {k: [] for k in [*commands, hooks_cold_label]}
    rcs: dict[str, set[int]] = {k: set() for k in times}
    stale_lines: list[str] = []

    def timed(label: str, cmd: list[str], extra_env: dict[str, str], *, counted: bool, timeout: float = 120) -> None:
        result = run_timed(cmd, cwd=ROOT, env={**bench_env(), **extra_env}, timeout=timeout)
        if result.returncode != 0 and result.returncode not in rcs[label]:
            # What check said about each package (it reports on stdout, errors on stderr).
            output = (result.stdout + "\n" + result.stderr).splitlines()
            stale_lines.extend(
                [f"{label}: {line}" for line in output if line.strip() and "up to date" not in line][:20]
            )
        rcs[label].add(result.returncode)
        if counted:
            times[label].append(result.seconds)

    for rep in range(reps + 1):
        for label, (cmd, extra_env) in commands.items():
            timed(label, cmd, extra_env, counted=rep > 0)
    # Cold: a fresh mypy cache each round, each counted (a cold run reads verifiers and what it imports).
    for rep in range(1 if quick else 3):
        fresh = {**warm, "XDG_CACHE_HOME": str(work / f"mypy-cold-{rep}")}
        timed(hooks_cold_label, [OPENENV_GEN, "check", str(hooked)], fresh, counted=True, timeout=900)
    medians = {k: round(median(v), 3) for k, v in times.items()}
    ten, ten_cold = medians[ten_label], medians[cold_label]
    per_package = (ten - medians["check (1 package)"]) / max(1, len(packages) - 1)
    log(f"P2 check x{len(packages)} median {ten:.3f}s warm, {ten_cold:.3f}s cold (target {TARGET_S}s)")
    log(
        f"P2 check of 1 package with typed hooks (mypy) median {medians[hooks_warm_label]:.3f}s with mypy's cache "
        f"warm, {medians[hooks_cold_label]:.3f}s cold (not counted against the target)"
    )
    args = ["check", *map(str, packages)]
    imports = importtime(args, ROOT, warm)
    imports_cold = importtime(args, ROOT, cold)
    prof = profile(args, ROOT, warm)
    prof_cold = profile(args, ROOT, cold)
    return {
        "id": "P2",
        "title": f"`openenv-gen check` over {len(packages)} packages, one process",
        "target": f"≤ {TARGET_S} s",
        "measured": f"{ten:.3f} s median of {reps} (model cache warm); {ten_cold:.3f} s with no cache; "
        f"exit codes {sorted(rcs[ten_label])} warm, {sorted(rcs[cold_label])} cold (0 = every package up to date)",
        "ratio": round(ten / TARGET_S, 2),
        "ratio_label": "median / target",
        "meets_target": ten <= TARGET_S and rcs[ten_label] == {0} and rcs[cold_label] == {0},
        "meets_target_cold": ten_cold <= TARGET_S,
        "details": {
            "repetitions": reps,
            "packages": [
                str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name + " (temp, --schema-file)"
                for p in packages
            ],
            "median_s": medians,
            "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
            "per_package_s": round(per_package, 3),
            "fixed_s": round(medians["check (1 package)"] - per_package, 3),
            "exit_codes": {k: sorted(v) for k, v in rcs.items()},
            "not_up_to_date": stale_lines,
            "importtime": imports,
            "importtime_cold": imports_cold,
            "cprofile": prof,
            "cprofile_cold": prof_cold,
        },
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    ns = parser.parse_args()
    print(json.dumps(run(ns.quick, Path(tempfile.mkdtemp(prefix="bench-"))), indent=2))

"""Where a CLI run's time goes, for P1 and P2: `python -X importtime` (import time grouped by
top-level package, and whether verifiers or OpenEnv's client was imported) and cProfile
(the cumulative time of the generator's main steps), each of one `openenv-gen` run in a
process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from common import bench_env

_PROFILE = r"""
import cProfile, io, json, pstats, sys
from openenvgen.cli import main
sys.argv = ["openenv-gen", *sys.argv[1:]]
prof = cProfile.Profile()
prof.enable()
try:
    main()
except SystemExit:
    pass
prof.disable()
stats = pstats.Stats(prof)
wanted = {
    "generate_package": ("generation/package.py", "generate_package"),
    "start_models": ("codegen.py", "start_models"),
    "format_models": ("python_format.py", "result"),
    "render_package": ("render.py", "render_package"),
    "write_tree": ("writer.py", "write_tree"),
    "resolve_spec": ("generation/package.py", "resolve_spec"),
    "dmcg_generate": ("datamodel_code_generator/__init__.py", "generate"),
    "scaffold": ("generation/scaffold.py", "render_scaffold"),
    "next_steps": ("generation/report.py", "next_steps"),
    "cli_parse_args": ("openenvgen/cli/base.py", "parse_args"),
    "diff_package": ("lifecycle/check.py", "diff_package"),
}
out = {"total": max(v[3] for v in stats.stats.values())}
for key, (file_suffix, func) in wanted.items():
    for (path, _line, name), (_cc, ncalls, _tt, ct, _callers) in stats.stats.items():
        if name == func and path.replace("\\", "/").endswith(file_suffix):
            out[key] = {"cumulative_s": round(ct, 4), "calls": ncalls}
print(json.dumps(out), file=sys.stderr)
"""


def importtime(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """`python -X importtime`: total, self time grouped by top-level package, forbidden imports."""
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import sys; from openenvgen.cli import main; sys.argv=['openenv-gen', *sys.argv[1:]]; main()",
            *args,
        ],
        cwd=cwd,
        env={**bench_env(), **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    by_package: dict[str, int] = defaultdict(int)
    modules: list[str] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        # "import time:  self [us] | cumulative | <indent>module"
        self_us, _cumulative, name = line[len("import time:") :].split("|", 2)
        module = name.strip()
        modules.append(module)
        by_package[module.split(".")[0]] += int(self_us)
    total_us = sum(by_package.values())
    forbidden = sorted(m for m in modules if m in ("verifiers", "openenv") or m.startswith(("verifiers.", "openenv.")))
    top = sorted(by_package.items(), key=lambda kv: -kv[1])[:12]
    return {
        "returncode": proc.returncode,
        "modules_imported": len(modules),
        "import_total_ms": round(total_us / 1000, 1),
        "import_ms_by_package": {k: round(v / 1000, 1) for k, v in top},
        "imports_verifiers_or_openenv": forbidden[:10],
    }


def profile(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    env = {**bench_env(), **(extra_env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", _PROFILE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    for line in reversed(proc.stderr.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": proc.stderr[-2000:]}

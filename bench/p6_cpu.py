"""P6: CPU-seconds per episode of the whole `vf-eval` process tree (every process is
reaped, so `RUSAGE_CHILDREN` counts them all) on P5's shared server and sides, as a slope:
runs of N and 4N episodes (N = 64 in-process, 4 on `null`, 2 with --quick), interleaved,
three pairs; per pair (CPU(4N) - CPU(N)) / 3N, start-up apart; median over the pairs.
Target: <= 0.3 CPU-s per episode on the in-process seat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import VARIANTS, cli, guess_setup, row, run_eval, spread

TARGET_CPU_PER_EPISODE = 0.3


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    with guess_setup(workdir, shared=True) as (package_dir, model_url, url):
        # N large enough on the in-process seat that 3N episodes' CPU stands well above the
        # noise of vf-eval's start-up (several CPU-s either way on a shared machine).
        sizes = {"in-process": 64, "null": 2 if quick else 4}
        pairs: dict[str, list[dict[str, Any]]] = {f"{a}/{s}": [] for a, s in VARIANTS}
        repeats = 3
        for rep in range(repeats):
            for adapter, seat in VARIANTS if rep % 2 == 0 else VARIANTS[::-1]:
                n = sizes[seat]
                cpu: dict[int, dict[str, Any]] = {}
                for size in (n, 4 * n) if rep % 2 == 0 else (4 * n, n):
                    out = workdir / f"p6-{rep}-{adapter}-{seat}-{size}"
                    transport = {"base_url": url}
                    cpu[size] = run_eval(
                        adapter, transport, size, min(4 * n, 16), model_url, package_dir, out, 900, seat
                    )
                slope = (cpu[4 * n]["cpu_s"] - cpu[n]["cpu_s"]) / (3 * n)
                pairs[f"{adapter}/{seat}"].append(
                    {
                        "n": n,
                        "cpu_s_n": cpu[n]["cpu_s"],
                        "cpu_s_4n": cpu[4 * n]["cpu_s"],
                        "slope": round(slope, 4),
                        "startup_cpu_s": round(cpu[n]["cpu_s"] - n * slope, 2),
                        "ok": cpu[n]["ok"] + cpu[4 * n]["ok"],
                        "episodes": 5 * n,
                        "runs": [cpu[n], cpu[4 * n]],
                    }
                )
    slopes = {k: spread([p["slope"] for p in v], 4) for k, v in pairs.items()}
    startup = {k: spread([p["startup_cpu_s"] for p in v], 2) for k, v in pairs.items()}
    all_ok = all(p["ok"] == p["episodes"] for v in pairs.values() for p in v)
    ours = slopes["runtime/in-process"]["median"]
    null = slopes["runtime/null"]["median"]
    builtin = slopes["builtin/null"]["median"]
    return [
        row(
            "P6",
            f"CPU-seconds per episode, whole vf-eval process tree: slope of {repeats} interleaved pairs of runs of "
            f"N and 4N episodes (N = {sizes['in-process']} in-process, {sizes['null']} on `null`), start-up apart",
            f"≤ {TARGET_CPU_PER_EPISODE:g} CPU-s per episode on the in-process seat (median of the pairs)",
            "; ".join(
                f"{k}: {slopes[k]['median']} CPU-s/episode (min {slopes[k]['min']}, max {slopes[k]['max']}), "
                f"start-up {startup[k]['median']} CPU-s"
                for k in pairs
            ),
            round(null / ours, 1) if ours > 0 else None,
            all_ok and ours <= TARGET_CPU_PER_EPISODE,
            label="seat: ours null / ours in-process CPU-s per episode; "
            f"adapter: built-in null / ours null {round(builtin / null, 2) if null > 0 else 'n/a'}",
            pairs=pairs,
        )
    ]


def main() -> None:
    cli(run)


if __name__ == "__main__":
    main()

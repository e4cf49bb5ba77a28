"""Shared helpers for the benchmarks: timing, machine description, process-tree memory.

Everything here is stdlib only (psutil is not installed in the project venv): the process
tree is read from /proc. Where things are, and the servers the benchmarks share with the
tests, come from the installed test support package (`openenvgen_testsupport`).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenvgen_testsupport.paths import ROOT

BENCH = ROOT / "bench"
BIN = Path(sys.executable).parent
VF_EVAL = str(BIN / "vf-eval")
CONCURRENT_APP = "guess_concurrent:app"  # bench/envs/guess_concurrent.py
ENV_ID = "test/guess-env"


def bench_env() -> dict[str, str]:
    """os.environ with the venv's bin first on PATH (uv, vf-eval, openenv-gen)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def write_eval_config(out_dir: Path, *, model_url: str, episodes: int, concurrency: int, env: dict[str, Any]) -> Path:
    """`out_dir/eval.toml`: one vf-eval run against the bench's scripted model; `episodes`
    is the rollouts per task (`num_rollouts`)."""
    import tomli_w

    out_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "scripted-model",
        "num_rollouts": episodes,
        "max_concurrent": concurrency,
        "push": False,
        "output_dir": str(out_dir),
        "client": {"base_url": f"{model_url}/v1", "api_key_var": "SCRIPTED_API_KEY"},
        "env": env,
    }
    path = out_dir / "eval.toml"
    path.write_text(tomli_w.dumps(config))
    return path


def eval_env(package_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """vf-eval's environment: the bench's, the scripted model's key, and `package_dir`
    (a generated package) importable."""
    env = {**bench_env(), "SCRIPTED_API_KEY": "scripted", "NO_COLOR": "1", **extra}
    if package_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(package_dir), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        match = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        mem_kb = int(match.group(1)) if match else 0
    except OSError:
        pass
    uv = shutil.which("uv", path=bench_env()["PATH"])
    uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip() if uv else None
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "uv": uv_version,
        "git": git_state(),
        "load_average_start": load_average(),
    }


def git_state() -> dict[str, Any]:
    """The commit measured (`git rev-parse HEAD`) and what the tree held beyond it: the
    paths changed or untracked, in bench/ (the code that measures) and elsewhere."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    changed = [line[3:] for line in git("status", "--porcelain").splitlines() if line.strip()]
    return {
        "commit": git("rev-parse", "HEAD").strip(),
        "subject": git("log", "-1", "--format=%s").strip(),
        "dirty_bench": sorted(p for p in changed if p.startswith("bench/")),
        "dirty_elsewhere": sorted(p for p in changed if not p.startswith("bench/")),
    }


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU-seconds of `pid` itself plus every child it has waited for (utime, stime,
    cutime, cstime of /proc/PID/stat); 0 for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(b")") + 2 :].split()
    # after "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime ...
    return sum(int(x) for x in fields[11:15]) / _CLK_TCK


def tree_cpu_s(root: int, marker: str | None = None) -> float:
    """CPU-seconds of a live process tree so far: each live process's own time plus that
    of the children it has reaped (a child that exited and was waited for is in its
    parent's cutime/cstime, so nothing is lost between two readings)."""
    return sum(process_cpu_s(pid) for pid in tree_pids(root, marker))


def spread(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """min / median / max of `values`."""
    return {
        "min": round(min(values), digits),
        "median": round(median(values), digits),
        "max": round(max(values), digits),
    }


@dataclass
class Timed:
    seconds: float
    returncode: int
    stdout: str
    stderr: str


def run_timed(
    cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> Timed:
    """Wall time of a whole process, from fork to exit."""
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env or bench_env(), capture_output=True, text=True, timeout=timeout)
    return Timed(time.perf_counter() - start, proc.returncode, proc.stdout, proc.stderr)


# --------------------------------------------------------------------------- memory


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
            # pid (comm) state ppid ...: comm may hold spaces and parens, so split after the last ')'.
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return marker in fh.read()
    except OSError:
        return False


def tree_pids(root: int, marker: str | None = None) -> set[int]:
    """`root` and its descendants, plus every process whose environment carries `marker`
    (servers and harness programs that a run starts, even if reparented)."""
    children = _children_map()
    found, stack = set(), [root]
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, []))
    if marker:
        needle = marker.encode()
        for pids in children.values():
            for pid in pids:
                if pid not in found and _has_marker(pid, needle):
                    found.add(pid)
    return found


def _rss_pss_kb(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "vf-eval"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    words = [a.decode(errors="replace") for a in argv if a]
    joined = " ".join(words)
    if words and Path(words[0]).name == "uv":
        return "uv run (server launcher)"
    if "uvicorn" in joined:
        return "env server (uvicorn)"
    return "harness/other"


def marked_pids(marker: str) -> list[int]:
    needle = marker.encode()
    return [
        int(e.name)
        for e in os.scandir("/proc")
        if e.name.isdigit() and int(e.name) != os.getpid() and _has_marker(int(e.name), needle)
    ]


@dataclass
class TreeSampler:
    """Samples the summed RSS and PSS of a process tree every `interval` seconds.

    RSS summed over processes counts shared pages (libraries, the interpreter) once per
    process; PSS splits them, so its sum is the tree's real share of memory. Both peaks
    are reported.
    """

    root: int
    marker: str | None = None
    interval: float = 0.25
    peak_rss_kb: int = 0
    peak_pss_kb: int = 0
    peak_processes: int = 0
    samples: int = 0
    at_peak: dict[str, Any] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        pids = tree_pids(self.root, self.marker)
        rss = pss = 0
        kinds: dict[str, list[int]] = {}
        for pid in pids:
            r, p = _rss_pss_kb(pid)
            rss += r
            pss += p
            kind = kinds.setdefault(_kind(pid, self.root), [0, 0, 0])
            kind[0] += 1
            kind[1] += r
            kind[2] += p
        if rss > self.peak_rss_kb:
            self.peak_rss_kb = rss
            self.at_peak = {
                k: {"processes": v[0], "rss_mib": round(v[1] / 1024, 1), "pss_mib": round(v[2] / 1024, 1)}
                for k, v in sorted(kinds.items())
            }
        self.peak_pss_kb = max(self.peak_pss_kb, pss)
        self.peak_processes = max(self.peak_processes, len(pids))
        self.samples += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def result(self) -> dict[str, Any]:
        return {
            "peak_rss_mib": round(self.peak_rss_kb / 1024, 1),
            "peak_pss_mib": round(self.peak_pss_kb / 1024, 1),
            "peak_processes": self.peak_processes,
            "at_peak_rss_by_kind": self.at_peak,
            "samples": self.samples,
        }


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fmt_ratio(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


class DelayedModel:
    """An ASGI wrapper that answers each chat completion `delay` seconds late, as a real
    model's turn takes time: episodes then overlap as they would in training, which a
    scripted model answering in a millisecond never makes them do."""

    def __init__(self, app: Any, delay: float) -> None:
        self.app = app
        self.delay = delay

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import asyncio

        if scope.get("type") == "http" and str(scope.get("path", "")).endswith("/chat/completions"):
            await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)

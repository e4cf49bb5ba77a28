"""R6: a soak. 20,000 episodes through one served worker: does its memory, or its count of
open files and sockets, grow?

The served path of P8 (verifiers' own `serve_env` + `EnvClient`, installed 0.4.0): the
env server runs in its own process (`python bench/r6_soak.py --serve ...`) with one
worker, so `serve_env` is a lone `EnvServer` in that process, playing every episode on
the generated package's default seat (its bundled in-process harness) against one
`base_url` env server; this process is the orchestrator: it loads the taskset, ships each
task as wire data (`task.data.model_dump(mode="json")`), and keeps 64 episodes in flight
through one `EnvClient` for the whole run. The `base_url` server is the guess-the-number
env of `tests/fixtures/uv_env`, concurrent-session variant (bench/envs/guess_concurrent.py),
launched once through OpenEnv's UV provider on 127.0.0.1; the model is the scripted one
(`Script(['{"guess": 3}', "7"])`: a wrong guess, then the right one), in this process.

The episodes go in segments of 1,000 (`--quick`: 2,000 episodes in segments of 500). After
each segment, with nothing in flight, the env-server process tree (the `serve_env` process
and anything it started) is read from /proc: RSS, PSS and USS (private pages) from
smaps_rollup, threads, open file descriptors (/proc/PID/fd), the sockets among them, and
their TCP states and peers (/proc/PID/net/tcp*: the env server, the model, the tree's own
listeners). The reading waits for the tree to settle: 2 s, then until two readings a
second apart agree on the open fds and on the TCP sockets by peer and state, at most 30 s
(a session the env server has closed is closed here a moment later, later under load).
Idle keep-alive connections stay in the readings: a peer that closed one leaves it
half-closed (CLOSE_WAIT) here until the pool that holds it next looks at it. Then a thread
inside the server runs `gc.collect()` and glibc's `malloc_trim(0)` (freed memory the
allocator kept goes back to the OS) and the tree is read again: "trimmed" RSS, the memory
still in use. Last, that thread counts the server's live objects by type
(`gc.get_objects()`; with `--tracemalloc`, also the top allocation sites).

Target: over the whole run every episode is ok; the tree's trimmed **RSS** after the last
segment (20,000 episodes; quick: 2,000) within 5% of after the first (1,000; quick: 500);
open file descriptors and sockets no more at the end than after the first segment, the
connections to the model apart: they are verifiers' interception keep-alive pool (one
client per model config, up to 100 idle connections, `verifiers.v1.clients.base`), whose
size follows how many calls the last episodes had open at once; it is reported beside.
Trimmed, because untrimmed RSS moves by several MiB (up to 10%) from one reading to the
next with what the allocator happens to keep from the last episodes' peak, leak or no
leak; RSS rather than PSS, because on this shared machine another process that maps the
same libraries moves PSS with nothing changing here (untrimmed RSS, PSS and USS are all
reported). Beside the pair: the least-squares trend of trimmed RSS over all readings (MiB
per 1,000 episodes) and the object types whose live count grew most from the first
reading to the last, where a leak would show. The shared OpenEnv server and the model are
outside the measured tree.

    python bench/r6_soak.py [--quick] [--episodes N] [--segment N] [--concurrency 64] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import served_runs
from common import BENCH, CONCURRENT_APP, load_average, log, tree_cpu_s, tree_pids

TARGET_MEMORY_DRIFT = 0.05
MEMORY_KEYS = ("trimmed_rss_mib", "rss_mib", "pss_mib", "uss_mib", "trimmed_pss_mib", "trimmed_uss_mib")
CONCURRENCY = 64
TASKS = 64
SETTLE_S = 2.0
SETTLE_MAX_S = 30.0
"""After a segment, readings are taken every second once SETTLE_S have passed, until two in a
row agree on the open fds and the TCP sockets by peer and state, for at most this long: a
WebSocket session the env server has closed is closed here a moment later, later on a
loaded machine. A socket that is never closed stays in the reading."""
EPISODE_TIMEOUT_S = 300.0
API_KEY_VAR = "SCRIPTED_API_KEY"
TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


# --------------------------------------------------------------------------- the server side


def _object_counts(use_tracemalloc: bool) -> dict[str, Any]:
    """Live gc-tracked objects by type name, in this process; with tracemalloc, the top
    allocation sites too."""
    import gc
    import tracemalloc

    gc.collect()
    counts: collections.Counter[str] = collections.Counter(
        f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects()
    )
    result: dict[str, Any] = {
        "objects": sum(counts.values()),
        "by_type": dict(counts),
        "gc_garbage": len(gc.garbage),
        "threads": threading.active_count(),
    }
    if use_tracemalloc and tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        result["traced_kib"] = round(tracemalloc.get_traced_memory()[0] / 1024, 1)
        result["top_sites"] = {
            str(stat.traceback[0]): [round(stat.size / 1024, 1), stat.count]
            for stat in snapshot.statistics("lineno")[:40]
        }
    return result


def _trim() -> dict[str, Any]:
    """Free what is garbage and hand the allocator's free pages back to the OS
    (`gc.collect()`, then glibc's `malloc_trim(0)`): what RSS holds after it is memory in use."""
    import ctypes
    import gc

    collected = gc.collect()
    try:
        trimmed = ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        trimmed = None  # not glibc: RSS is read untrimmed
    return {"collected": collected, "malloc_trim": trimmed}


def _probe_loop(probe_dir: Path, use_tracemalloc: bool) -> None:
    """Answers `probe_dir/request-K` (its text `count` or `trim`) with `probe_dir/response-K.json`."""
    while True:
        for request in sorted(probe_dir.glob("request-*")):
            key = request.name.removeprefix("request-")
            action = request.read_text().strip()
            request.unlink()
            answer = _trim() if action == "trim" else _object_counts(use_tracemalloc)
            out = probe_dir / f"response-{key}.json"
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(answer))
            tmp.rename(out)
        time.sleep(0.2)


def serve_main(config_file: str, address: str, probe_dir: str, use_tracemalloc: bool) -> None:
    """The env-server process: P8's (bench/served_runs.py: `serve_env` as a trainer's env server calls it, one
    worker), plus the object-count probe thread."""
    if use_tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
    threading.Thread(target=_probe_loop, args=(Path(probe_dir), use_tracemalloc), name="r6-probe", daemon=True).start()
    served_runs.serve_main(config_file, 1, address)


# --------------------------------------------------------------------------- the orchestrator side


@contextmanager
def env_server(
    config_data: dict[str, Any], out_dir: Path, package_dir: Path, marker: str, use_tracemalloc: bool
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """P8's env server (bench/served_runs.py) on one worker, started by this module (with its probe)."""
    probe_dir = out_dir / "probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    extra = ["--probe-dir", str(probe_dir)] + (["--tracemalloc"] if use_tracemalloc else [])
    with served_runs.env_server(
        config_data, 1, out_dir, package_dir, marker, script=Path(__file__).resolve(), extra_args=extra
    ) as (proc, address):
        yield proc, address, probe_dir


def _smaps(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB":
                    values[parts[0].rstrip(":")] = int(parts[1])
    except (OSError, ValueError):
        pass
    return values


def _tcp_states(pid: int) -> dict[str, tuple[str, int, int]]:
    """Socket inode -> (TCP state, local port, remote port), as this process's network
    namespace sees them."""
    states: dict[str, tuple[str, int, int]] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9:
                state = TCP_STATES.get(fields[3], fields[3])
                local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                states[fields[9]] = (state, local, remote)
    return states


def tree_reading(root: int, marker: str, peers: dict[int, str] | None = None) -> dict[str, Any]:
    """Memory, threads, file descriptors and sockets of the process tree of `root`; TCP
    sockets by state and by peer (`peers` names remote ports; the tree's own listening
    ports are "own listener")."""
    pids = sorted(tree_pids(root, marker))
    rss = pss = uss = threads = fds = sockets = 0
    fd_kinds: collections.Counter[str] = collections.Counter()
    tcp: collections.Counter[str] = collections.Counter()
    by_peer: collections.Counter[str] = collections.Counter()
    states = _tcp_states(root)
    inodes: list[str] = []
    for pid in pids:
        smaps = _smaps(pid)
        rss += smaps.get("Rss", 0)
        pss += smaps.get("Pss", 0)
        uss += smaps.get("Private_Clean", 0) + smaps.get("Private_Dirty", 0)
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            threads += int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
            entries = os.listdir(f"/proc/{pid}/fd")
        except (OSError, StopIteration, ValueError):
            continue
        for fd in entries:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed between the listing and the read
            fds += 1
            if target.startswith("socket:["):
                sockets += 1
                inodes.append(target[len("socket:[") : -1])
                fd_kinds["socket"] += 1
            elif target.startswith("anon_inode:"):
                fd_kinds[target.removeprefix("anon_inode:").strip("[]")] += 1
            elif target.startswith("pipe:"):
                fd_kinds["pipe"] += 1
            else:
                fd_kinds["file"] += 1
    own = {states[i][1] for i in inodes if i in states and states[i][0] == "LISTEN"}
    for inode in inodes:
        state, _, remote = states.get(inode, ("not TCP (unix)", 0, 0))
        tcp[state] += 1
        if state not in ("LISTEN", "not TCP (unix)"):
            peer = "own listener" if remote in own else (peers or {}).get(remote, f"port {remote}")
            by_peer[f"{peer} {state}"] += 1
    return {
        "processes": len(pids),
        "rss_mib": round(rss / 1024, 1),
        "pss_mib": round(pss / 1024, 1),
        "uss_mib": round(uss / 1024, 1),
        "threads": threads,
        "fds": fds,
        "sockets": sockets,
        "fd_kinds": dict(sorted(fd_kinds.items())),
        "sockets_by_tcp_state": dict(sorted(tcp.items())),
        "tcp_by_peer": dict(sorted(by_peer.items())),
        "model_pool_sockets": sum(v for k, v in by_peer.items() if k.startswith("model ")),
    }


def _outcome(episode: Any) -> tuple[bool, str | None]:
    if episode.ok:
        return True, None
    last = episode.last_error
    if not last:
        return False, "not ok"
    return False, (getattr(last, "type", None) or "error") + ": " + str(getattr(last, "message", last))[:160]


async def settled_reading(root: int, marker: str, peers: dict[int, str]) -> tuple[dict[str, Any], float]:
    """The tree's reading once it has settled (see SETTLE_MAX_S), and the seconds that took."""
    started = time.monotonic()
    await asyncio.sleep(SETTLE_S)
    reading = tree_reading(root, marker, peers)
    while time.monotonic() - started < SETTLE_MAX_S:
        await asyncio.sleep(1.0)
        previous, reading = reading, tree_reading(root, marker, peers)
        if (reading["fds"], reading["tcp_by_peer"]) == (previous["fds"], previous["tcp_by_peer"]):
            break
    return reading, round(time.monotonic() - started, 1)


async def _probe(probe_dir: Path, key: str, action: str = "count", timeout: float = 120) -> dict[str, Any]:
    (probe_dir / f"request-{key}").write_text(action)
    response = probe_dir / f"response-{key}.json"
    deadline = time.monotonic() + timeout
    while not response.exists():
        if time.monotonic() > deadline:
            return {"error": "the server's probe did not answer"}
        await asyncio.sleep(0.2)
    return dict(json.loads(response.read_text()))


async def soak(
    proc: subprocess.Popen[bytes],
    marker: str,
    address: str,
    probe_dir: Path,
    task_data: list[dict[str, Any]],
    *,
    episodes: int,
    segment: int,
    concurrency: int,
    model: Any,
    model_url: str,
    peers: dict[int, str],
) -> dict[str, Any]:
    """`episodes` episodes in segments; a reading of the server tree after each."""
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.serve import EnvClient
    from verifiers.v1.types import SamplingConfig

    client_config = EvalClientConfig(base_url=f"{model_url}/v1", api_key_var=API_KEY_VAR)
    client = EnvClient(address)
    gate = asyncio.Semaphore(concurrency)
    counts = {"sent": 0, "ok": 0, "in_flight": 0, "peak_in_flight": 0}
    errors: collections.Counter[str] = collections.Counter()
    checkpoints: list[dict[str, Any]] = []

    async def one(data: dict[str, Any]) -> None:
        async with gate:
            counts["in_flight"] += 1
            counts["peak_in_flight"] = max(counts["peak_in_flight"], counts["in_flight"])
            try:
                episode = await asyncio.wait_for(
                    client.run(client=client_config, model="scripted-model", sampling=SamplingConfig(), task_data=data),
                    EPISODE_TIMEOUT_S,
                )
                ok, error = _outcome(episode)
            except Exception as e:  # a failed request (or no answer in time) is a failed episode
                ok, error = False, f"{type(e).__name__}: {str(e)[:160]}"
            finally:
                counts["in_flight"] -= 1
            counts["ok"] += ok
            if error:
                errors[error] += 1

    try:
        await client.wait_for_server_startup(timeout=300, interval=0.5)
        cpu_start = tree_cpu_s(proc.pid, marker)
        started = time.perf_counter()
        while counts["sent"] < episodes:
            n = min(segment, episodes - counts["sent"])
            batch = [task_data[(counts["sent"] + i) % len(task_data)] for i in range(n)]
            seg_started = time.perf_counter()
            await asyncio.gather(*(one(d) for d in batch))
            counts["sent"] += n
            seg_wall = time.perf_counter() - seg_started
            reading, settle_s = await settled_reading(proc.pid, marker, peers)
            trim = await _probe(probe_dir, f"{counts['sent']}-trim", "trim")
            trimmed = tree_reading(proc.pid, marker, peers)
            objects = await _probe(probe_dir, str(counts["sent"]))
            model.clear()  # the scripted model's record of requests: this process's, not the server's
            checkpoint = {
                "episodes": counts["sent"],
                "ok": counts["ok"],
                "segment_wall_s": round(seg_wall, 1),
                "episodes_per_min": round(n / seg_wall * 60, 1),
                "server_cpu_s": round(tree_cpu_s(proc.pid, marker) - cpu_start, 1),
                "server_alive": proc.poll() is None,
                "settle_s": settle_s,
                "load_1min": load_average()[0],
                **reading,
                "trimmed_rss_mib": trimmed["rss_mib"],
                "trimmed_pss_mib": trimmed["pss_mib"],
                "trimmed_uss_mib": trimmed["uss_mib"],
                "gc_collected": trim.get("collected"),
                "objects": objects.get("objects"),
                "_objects": objects,
            }
            checkpoints.append(checkpoint)
            log(
                f"R6 {counts['sent']}/{episodes}: ok {counts['ok']}, {checkpoint['episodes_per_min']}/min; server tree "
                f"RSS {reading['rss_mib']} MiB ({trimmed['rss_mib']} trimmed), PSS {reading['pss_mib']}, "
                f"USS {reading['uss_mib']}, "
                f"threads {reading['threads']}, fds {reading['fds']} (sockets {reading['sockets']} "
                f"{reading['tcp_by_peer']}), settled in {settle_s} s, objects {checkpoint['objects']}"
            )
            if proc.poll() is not None:
                break
        wall = time.perf_counter() - started
    finally:
        await client.close()
    return {
        **counts,
        "wall_s": round(wall, 1),
        "errors": dict(errors.most_common(5)),
        "checkpoints": checkpoints,
    }


def _ratio(first: float, last: float) -> float | None:
    return round(last / first, 3) if first else None


def _slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys over xs (None for fewer than 3 points)."""
    if len(xs) < 3:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var, 2) if var else None


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def _grown_types(first: dict[str, Any], last: dict[str, Any], top: int = 12) -> dict[str, list[int]]:
    """Object types whose live count grew most from the first reading to the last:
    [count at first, count at last]."""
    a, b = first.get("by_type", {}), last.get("by_type", {})
    growth = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b)), reverse=True)
    return {k: [a.get(k, 0), b.get(k, 0)] for delta, k in growth[:top] if delta > 0}


def run(
    quick: bool,
    workdir: Path,
    *,
    episodes: int | None = None,
    segment: int | None = None,
    concurrency: int = CONCURRENCY,
    use_tracemalloc: bool = False,
    package_dir: Path | None = None,
) -> list[dict[str, Any]]:
    from served_runs import client_tasks, env_config
    from vf_eval_runs import SCRIPT, generate_package, uv_server

    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    episodes = episodes or (2000 if quick else 20000)
    segment = segment or (500 if quick else 1000)
    package_dir = package_dir or generate_package(workdir)
    sys.path.insert(0, str(package_dir))  # the orchestrator imports the package to load its taskset
    from verifiers.v1.serve import env_config_data
    from verifiers.v1.utils.loaders import resolve_env_config

    env_vars = {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": str(4 * concurrency)}
    model = ScriptedChatModel(Script(SCRIPT))
    marker = f"OPENENVGEN_BENCH_{uuid.uuid4().hex}"
    out_dir = workdir / "r6"
    load_before = load_average()
    with uv_server(CONCURRENT_APP, env_vars=env_vars) as url, serve_app(model) as model_url:
        env = env_config("runtime", url, TASKS)
        task_data = client_tasks(env, 1)
        config_data = env_config_data(resolve_env_config(env))
        with env_server(config_data, out_dir, package_dir, marker, use_tracemalloc) as (proc, address, probe_dir):
            played = asyncio.run(
                soak(
                    proc,
                    marker,
                    address,
                    probe_dir,
                    task_data,
                    episodes=episodes,
                    segment=segment,
                    concurrency=concurrency,
                    model=model,
                    model_url=str(model_url),
                    peers={_port(url): "env server (base_url)", _port(str(model_url)): "model"},
                )
            )
    checkpoints = played["checkpoints"]
    first, last = checkpoints[0], checkpoints[-1]
    grown = _grown_types(first["_objects"], last["_objects"])
    sites: dict[str, Any] = {}
    if use_tracemalloc:
        a, b = first["_objects"].get("top_sites", {}), last["_objects"].get("top_sites", {})
        sites = {k: [a.get(k, [0, 0]), v] for k, v in b.items() if v[0] > a.get(k, [0, 0])[0]}
    for c in checkpoints:
        c.pop("_objects")
    ratios = {key: _ratio(first[key], last[key]) for key in MEMORY_KEYS}
    trimmed = [c["trimmed_rss_mib"] for c in checkpoints]
    slope = _slope([c["episodes"] / 1000 for c in checkpoints], trimmed)
    rss_ratio = ratios["trimmed_rss_mib"]
    all_ok = played["ok"] == episodes and last["episodes"] == episodes
    memory_ok = rss_ratio is not None and abs(rss_ratio - 1) <= TARGET_MEMORY_DRIFT
    # The model connections are verifiers' interception keep-alive pool (one client per model
    # config, at most 100 idle connections): its size follows the last burst, so it is
    # reported but left out of the comparison; every other fd and socket is compared.
    pool_first, pool_last = first["model_pool_sockets"], last["model_pool_sockets"]
    fds_ok = all(last[k] - pool_last <= first[k] - pool_first for k in ("fds", "sockets"))
    details = {
        "episodes": episodes,
        "segment": segment,
        "concurrency": concurrency,
        "tasks": TASKS,
        "ok": played["ok"],
        "peak_in_flight": played["peak_in_flight"],
        "errors": played["errors"],
        "wall_s": played["wall_s"],
        "episodes_per_min": round(episodes / played["wall_s"] * 60, 1) if played["wall_s"] else None,
        "server_cpu_s_per_episode": round(last["server_cpu_s"] / last["episodes"], 4) if last["episodes"] else None,
        "ratios_last_over_first": ratios,
        "trimmed_rss_mib_min_max": [min(trimmed), max(trimmed)],
        "trimmed_rss_slope_mib_per_1000_episodes": slope,
        "memory_goal_met": memory_ok,
        "fds_goal_met": fds_ok,
        "object_types_grown": grown,
        "tracemalloc_sites_grown": sites,
        "checkpoints": checkpoints,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "out_dir": str(out_dir),
    }
    if not all_ok:
        details["server_log_tail"] = (out_dir / "server.log").read_text(errors="replace")[-1500:]
    measured = (
        f"{played['ok']}/{episodes} ok in {played['wall_s']} s ({details['episodes_per_min']}/min, peak "
        f"{played['peak_in_flight']} in flight); server tree after {first['episodes']} → {last['episodes']} episodes: "
        f"RSS after trimming {first['trimmed_rss_mib']} → {last['trimmed_rss_mib']} MiB (untrimmed "
        f"{first['rss_mib']} → {last['rss_mib']}; PSS {first['pss_mib']} → {last['pss_mib']}, "
        f"USS {first['uss_mib']} → {last['uss_mib']}), open fds {first['fds']} → {last['fds']}, "
        f"sockets {first['sockets']} → {last['sockets']} (of which the model keep-alive pool "
        f"{pool_first} → {pool_last}), threads {first['threads']} → {last['threads']}, "
        f"live objects {first['objects']} → {last['objects']}; trimmed RSS over all {len(checkpoints)} readings "
        f"{min(trimmed)}–{max(trimmed)} MiB, fitted trend {slope} MiB per 1,000 episodes"
    )
    log(f"R6: {measured}")
    return [
        {
            "id": "R6",
            "title": f"soak: {episodes} episodes served on one worker (`serve_env` + `EnvClient`, in-process seat, "
            f"one `base_url` server) at {concurrency} in flight",
            "target": f"all ok; server-tree RSS (after gc and malloc_trim) after {last['episodes']} episodes within "
            f"{TARGET_MEMORY_DRIFT:.0%} of after {first['episodes']}; open fds and sockets no more "
            "(the model keep-alive pool apart)",
            "measured": measured,
            "ratio": rss_ratio,
            "ratio_text": f"{fmt(rss_ratio)} (untrimmed RSS {fmt(ratios['rss_mib'])}, PSS {fmt(ratios['pss_mib'])}, "
            f"USS {fmt(ratios['uss_mib'])})",
            "ratio_label": f"server-tree RSS after gc and malloc_trim, after {last['episodes']} / after "
            f"{first['episodes']} episodes",
            "meets_target": all_ok and memory_ok and fds_ok,
            "details": details,
        }
    ]


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 episodes in segments of 500")
    parser.add_argument("--episodes", type=int, default=None, help="default 20000 (2000 with --quick)")
    parser.add_argument("--segment", type=int, default=None, help="episodes between readings (1000; 500 with --quick)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="episodes in flight")
    parser.add_argument("--tracemalloc", action="store_true", help="trace allocations in the server (slower)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (server log, probe answers)")
    parser.add_argument("--serve", metavar="CONFIG_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)  # P8's server: always 1
    parser.add_argument("--probe-dir", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        serve_main(ns.serve, ns.address, ns.probe_dir, ns.tracemalloc)
        return
    for name in ("episodes", "segment", "concurrency"):
        value = getattr(ns, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be at least 1, got {value}")
    workdir = Path(tempfile.mkdtemp(prefix="openenvgen-r6-"))
    try:
        (result,) = run(
            ns.quick,
            workdir,
            episodes=ns.episodes,
            segment=ns.segment,
            concurrency=ns.concurrency,
            use_tracemalloc=ns.tracemalloc,
        )
    finally:
        if not ns.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

"""R4: a fleet under load that loses a server mid-run, and gets it back mid-run.

256 episodes at concurrency 64 (`--quick`: 64 at 16) through a real `vf-eval` over a
`base_url` fleet of 4 servers; once the model has answered `concurrency` turns (every
slot has its first episode on a server), one server is SIGKILLed and, two seconds later,
restarted on the same port while episodes are still being played (the model answers each
turn MODEL_DELAY_S late, as a real model takes time, so the run outlasts the restart). Twice: without retries, and with
`--env.retries.max-retries 2`.

"In flight" is the pool's own count of the killed server's sessions (`Server.active`)
at the moment it died: `vf-eval` runs through `bench/vf_eval_probe.py`, which reads the
runtime's pool from inside the eval process and sends the SIGKILL itself, so the reading
and the kill are one step. Episodes per server come from each env server's own counter
of the episodes it began (`GET /bench/resets`, bench/envs/guess_concurrent.py); the
restarted process counts from zero, so its count is what it took after its return. The
probe's pool log (every 0.25 s) also shows the returned server holding sessions again.

Goal: the killed server is back while the run is still going and takes new episodes;
without retries, every episode not in flight on the killed server ends ok (the failures
are at most the sessions the pool had on it when it died, all `env_lost`); with retries,
all end ok.

The servers are the guess-the-number env of `tests/fixtures/uv_env`, concurrent-session
variant (bench/envs/guess_concurrent.py), each launched through OpenEnv's UV provider by
the runtime's own launcher; the model is the scripted one (a wrong guess, then the right
one: two model turns per episode). The player seat is the package default.

    python bench/r4_fleet.py [--episodes 256] [--concurrency 64] [--servers 4] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    CONCURRENT_APP,
    ENV_ID,
    DelayedModel,
    bench_env,
    eval_env,
    load_average,
    log,
    write_eval_config,
)

from openenvgen_servers.processes import stop_process_group
from openenvgen_servers.wire import health
from openenvgen_testsupport.paths import OPENENV_GEN, UV_FIXTURE_PROJECT

SCRIPT = ['{"guess": 3}', "7"]
TURNS_PER_EPISODE = len(SCRIPT)
PACKAGE = "guess_r4"
PACKAGE_ID = "guess-r4-openenv"
RESTART_AFTER_S = 2.0
MODEL_DELAY_S = 10.0
"""Seconds the model takes per turn: a run long enough for the killed server to return."""


class FleetServer:
    """One env server on a fixed port, launched by the runtime's launcher; killable and
    restartable on the same port."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port
        self.provider: Any = None
        self.url = ""

    def launch(self) -> None:
        """Start the server (not waiting for it); from the main thread: the launcher asks
        the kernel to stop a server when the thread that started it ends."""
        from openenvgen_runtime.launching import launch

        kwargs: dict[str, Any] = {
            "project_path": str(UV_FIXTURE_PROJECT),
            "app": CONCURRENT_APP,
            "env_vars": {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": "256"},
        }
        if self.port:
            kwargs["port"] = self.port
        self.provider = launch.make_provider(ENV_ID, kwargs, mode="uv", timeout=300)
        (self.url,) = self.provider.launch()
        self.port = int(self.url.rsplit(":", 1)[1])

    def ready(self) -> bool:
        import httpx

        code = self.provider.exit_code()
        if code is not None:
            raise RuntimeError(f"server exited with {code}: {self.provider.log_tail()}")
        with httpx.Client() as client:
            return health(client, self.url, timeout=2) is None

    def start(self, timeout: float = 300) -> None:
        self.launch()
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {timeout}s: {self.provider.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.provider is not None:
            self.provider.stop()


def generate(url: str, workdir: Path) -> Path:
    out = workdir / PACKAGE
    proc = subprocess.run(
        [OPENENV_GEN, PACKAGE, "--base-url", url, "--out", str(out), "--env-id", ENV_ID, "--app", CONCURRENT_APP],
        capture_output=True,
        text=True,
        timeout=180,
        env=bench_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"openenv-gen failed: {proc.stderr.strip()}")
    return out


def server_resets(server: FleetServer) -> int | None:
    """Episodes the server process has begun (its own counter, bench/envs/guess_concurrent.py)."""
    import httpx

    try:
        return int(httpx.get(f"{server.url}/bench/resets", timeout=5).json()["resets"])
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def _pool_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            pass  # a last line cut short when the eval process was killed
    return lines


def one_run(
    fleet: list[FleetServer],
    package_dir: Path,
    out_dir: Path,
    *,
    episodes: int,
    concurrency: int,
    retries: int,
    timeout: float,
) -> dict[str, Any]:
    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    model = ScriptedChatModel(Script(SCRIPT))
    victim = fleet[0]
    # Once every slot's first episode has had its first turn answered: early, so that the
    # restarted server (uv sync + import: 20-60 s on this loaded machine) is back while
    # episodes are still being played (the model answers each turn MODEL_DELAY_S late).
    kill_at = concurrency
    event: dict[str, Any] = {}
    out_dir.mkdir(parents=True, exist_ok=True)
    resets_before = [server_resets(s) for s in fleet]

    def kill() -> None:
        event["model_turns_at_kill"] = len(model.requests)
        victim_pid = victim.provider.server.process.pid
        (out_dir / "kill.json.tmp").write_text(json.dumps({"url": victim.url, "pgid": victim_pid}))
        (out_dir / "kill.json.tmp").rename(out_dir / "kill.json")
        deadline = time.monotonic() + 30
        while not (out_dir / "killed.json").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("R4: the pool probe did not kill the server")
            time.sleep(0.01)
        killed = json.loads((out_dir / "killed.json").read_text())
        victim.provider.server.process.wait()
        event["in_flight"] = killed["in_flight"]
        event["killed_at"] = time.monotonic()
        log(
            f"R4: killed {victim.url} holding {event['in_flight']} sessions (the pool's count), "
            f"after {event['model_turns_at_kill']} model turns"
        )

    def back() -> None:
        event["down_s"] = round(time.monotonic() - event["killed_at"], 1)
        event["back_while_running"] = proc.poll() is None
        log(
            f"R4: {victim.url} back after {event['down_s']} s"
            + ("" if event["back_while_running"] else " (after the run ended)")
        )

    with serve_app(DelayedModel(model, MODEL_DELAY_S)) as model_url:
        config = write_eval_config(
            out_dir,
            model_url=str(model_url),
            episodes=episodes,
            concurrency=concurrency,
            env={
                "taskset": {"id": PACKAGE_ID, "base_url": [s.url for s in fleet]},
                "player": {"max_turns": 12},
                "retries": {"max_retries": retries},
            },
        )
        env = eval_env(package_dir, OPENENVGEN_BENCH_PROBE=str(out_dir))
        load_before = load_average()
        started = time.perf_counter()
        with open(out_dir / "stderr.txt", "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, str(BENCH / "vf_eval_probe.py"), "@", str(config), "--no-rich"],
                cwd=out_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
            timed_out = False
            try:
                while proc.poll() is None:
                    if "killed_at" not in event and len(model.requests) >= kill_at:
                        kill()
                    elif (
                        "killed_at" in event
                        and "restarted" not in event
                        and time.monotonic() - event["killed_at"] >= RESTART_AFTER_S
                    ):
                        victim.launch()
                        event["restarted"] = True
                    elif "restarted" in event and "down_s" not in event and victim.ready():
                        back()
                    elif time.perf_counter() - started > timeout:
                        timed_out = True
                        stop_process_group(proc, grace=60)
                    time.sleep(0.05)
            finally:
                if proc.poll() is None:  # this bench broke: the eval must not outlive it
                    stop_process_group(proc, grace=5)
            wall = time.perf_counter() - started
        # The run may end first: the fleet is whole again before the next run.
        if "killed_at" in event and "restarted" not in event:
            victim.launch()
        if "killed_at" in event and "down_s" not in event:
            while not victim.ready():
                time.sleep(0.2)
            back()
    resets_after = [server_resets(s) for s in fleet]
    # The restarted process counts from 0: all its resets came after its return.
    taken = [
        (after - (0 if (s is victim and "restarted" in event) else (before or 0))) if after is not None else None
        for s, before, after in zip(fleet, resets_before, resets_after, strict=True)
    ]
    probe = _pool_lines(out_dir / "pool.jsonl")
    victim_active_after_return = (
        [
            srv["active"]
            for line in probe
            if "killed_at" in event
            for srv in line["servers"]
            if srv["url"] == victim.url
            and srv["down"] is None
            and line["t"] > json.loads((out_dir / "killed.json").read_text())["t"] + RESTART_AFTER_S
        ]
        if (out_dir / "killed.json").exists()
        else []
    )
    records = []
    for traces in sorted(out_dir.glob("*/traces.jsonl")):
        records += [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]
    stops: collections.Counter[str] = collections.Counter()
    failed_stops: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    ok = 0
    for record in records:
        for error in record.get("errors") or []:
            errors[f"{error.get('type')}: {str(error.get('message'))[:160]}"] += 1
        trace = (record.get("traces") or [{}])[0]
        stop = str(trace.get("stop_condition"))
        stops[stop] += 1
        if record.get("ok"):
            ok += 1
        else:
            failed_stops[stop] += 1
    stderr_text = (out_dir / "stderr.txt").read_text(errors="replace")
    failed = episodes - ok
    in_flight = event.get("in_flight")
    victim_taken = taken[0]
    returned = bool(event.get("back_while_running")) and (victim_taken or 0) > 0
    if retries:
        goal = ok == episodes and returned
    else:
        goal = in_flight is not None and failed <= in_flight and set(failed_stops) <= {"env_lost"} and returned
    result = {
        "episodes": episodes,
        "concurrency": concurrency,
        "servers": len(fleet),
        "retries": retries,
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "wall_s": round(wall, 1),
        "recorded": len(records),
        "ok": ok,
        "failed": failed,
        "failed_stop_conditions": dict(failed_stops),
        "stop_conditions": dict(stops),
        "errors": dict(errors.most_common(4)),
        "in_flight_on_killed_server": in_flight,
        "model_turns_at_kill": event.get("model_turns_at_kill"),
        "killed_server_down_s": event.get("down_s"),
        "back_while_running": event.get("back_while_running"),
        "episodes_begun_per_server": dict(zip([s.url for s in fleet], taken, strict=True)),
        "killed_server_episodes_after_return": victim_taken,
        "killed_server_peak_sessions_after_return": max(victim_active_after_return, default=0),
        "down_warnings": stderr_text.count("is down ("),
        "back_notices": stderr_text.count("is back ("),
        "episode_retries": stderr_text.count("retrying episode"),
        "goal_met": goal,
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    if not records:
        result["stderr_tail"] = stderr_text[-1500:]
    log(
        f"R4 {episodes}@{concurrency}, retries {retries}: ok {ok}/{episodes}, failed {failed} {dict(failed_stops)}, "
        f"in flight on the killed server {in_flight}, episodes per server {taken}, {wall:.1f}s"
        + (" TIMED OUT" if timed_out else "")
    )
    return result


def run(
    quick: bool,
    workdir: Path,
    *,
    episodes: int | None = None,
    concurrency: int | None = None,
    servers: int = 4,
    timeout: float = 1800,
) -> list[dict[str, Any]]:
    episodes = episodes or (64 if quick else 256)
    concurrency = concurrency or (16 if quick else 64)
    os.environ["PATH"] = bench_env()["PATH"]
    fleet = [FleetServer() for _ in range(servers)]
    runs = []
    try:
        for server in fleet:
            server.start()
        log(f"R4: fleet of {servers} at {', '.join(s.url for s in fleet)}")
        package_dir = generate(fleet[1].url, workdir)
        for retries in (0, 2):
            runs.append(
                one_run(
                    fleet,
                    package_dir,
                    workdir / f"r4-retries{retries}",
                    episodes=episodes,
                    concurrency=concurrency,
                    retries=retries,
                    timeout=timeout,
                )
            )
    finally:
        for server in fleet:
            server.stop()
    plain, retried = runs
    measured = "; ".join(
        f"retries {x['retries']}: {x['ok']}/{episodes} ok "
        f"({x['failed']} failed: {x['failed_stop_conditions'] or 'none'}; "
        f"{x['in_flight_on_killed_server']} in flight on the killed server by the pool's count), "
        f"killed server back after {x['killed_server_down_s']} s "
        f"{'while the run went on' if x['back_while_running'] else 'only after the run ended'}, "
        f"then took {x['killed_server_episodes_after_return']} new episodes "
        f"(up to {x['killed_server_peak_sessions_after_return']} at once), "
        f"{x['wall_s']} s"
        for x in (plain, retried)
    )
    return [
        {
            "id": "R4",
            "title": f"fleet of {servers} under load ({episodes}@{concurrency}), "
            "one server killed and restarted mid-run",
            "target": "the killed server returns mid-run and takes new episodes; "
            "no retries: failures ≤ its sessions in flight, all env_lost; retries: all ok",
            "measured": measured,
            "ratio": round(retried["ok"] / episodes, 3),
            "ratio_label": "ok fraction with retries",
            "meets_target": plain["goal_met"] and retried["goal_met"],
            "details": {"fleet_runs": runs},
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=None, help="default 256 (64 with --quick)")
    parser.add_argument("--concurrency", type=int, default=None, help="default 64 (16 with --quick)")
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds each vf-eval run may take")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openenvgen-r4-") as tmp:
        (result,) = run(
            ns.quick,
            Path(tmp),
            episodes=ns.episodes,
            concurrency=ns.concurrency,
            servers=ns.servers,
            timeout=ns.timeout,
        )
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

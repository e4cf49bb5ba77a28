"""R4: a fleet under load that loses a server mid-run.

256 episodes at concurrency 64 (`--quick`: 64 at 16) through a real `vf-eval` over a
`base_url` fleet of 4 servers; once an eighth of the model turns are done, one server is
SIGKILLed and, two seconds later, restarted on the same port. Twice: without retries,
and with `--env.retries.max-retries 2`.

Goal: without retries, every episode not in flight on the killed server ends ok (the
failures are at most the sessions that server held when it died, all `env_lost`); with
retries, all end ok. In flight = the server's established TCP connections at the moment
of the kill (one per WebSocket session), read from /proc/net/tcp.

The servers are the guess-the-number env of `tests/fixtures/uv_env`, concurrent-session
variant (bench/envs/guess_concurrent.py), each launched through OpenEnv's UV provider by
the runtime's own launcher; the model is the scripted one (a wrong guess, then the right
one: two model turns per episode). The player seat is the package default, so R4 gets
cheaper whenever the default seat does.

    python bench/r4_fleet.py [--episodes 256] [--concurrency 64] [--servers 4] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    CONCURRENT_APP,
    ENV_ID,
    OPENENV_GEN,
    UV_ENV_PROJECT,
    VF_EVAL,
    bench_env,
    eval_env,
    load_average,
    log,
    write_eval_config,
)

SCRIPT = ['{"guess": 3}', "7"]
TURNS_PER_EPISODE = len(SCRIPT)
PACKAGE = "guess_r4"
PACKAGE_ID = "guess-r4-openenv"
RESTART_AFTER_S = 2.0


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
        from openenvgen_runtime import launch

        kwargs: dict[str, Any] = {
            "project_path": str(UV_ENV_PROJECT),
            "app": CONCURRENT_APP,
            "env_vars": {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": "256"},
        }
        if self.port:
            kwargs["port"] = self.port
        self.provider, self.url = launch.start(ENV_ID, kwargs, use_docker=False, timeout=300)
        self.port = int(self.url.rsplit(":", 1)[1])

    def ready(self) -> bool:
        import httpx

        from openenvgen_runtime import launch

        code = launch.exited(self.provider)
        if code is not None:
            raise RuntimeError(f"server exited with {code}: {launch.log_tail(self.provider)}")
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 300) -> None:
        from openenvgen_runtime import launch

        self.launch()
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {timeout}s: {launch.log_tail(self.provider)}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL the server's whole process group (uv and the uvicorn it runs)."""
        os.killpg(self.provider._process.pid, signal.SIGKILL)
        self.provider._process.wait()

    def stop(self) -> None:
        from openenvgen_runtime import launch

        if self.provider is not None:
            launch.stop(self.provider)


def established_connections(port: int) -> int:
    """Established TCP connections whose local end is `port` (server side of each session)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def generate(url: str, workdir: Path) -> Path:
    out = workdir / PACKAGE
    proc = subprocess.run(
        [OPENENV_GEN, PACKAGE, "--base-url", url, "--out", str(out), "--env-id", ENV_ID, "--app", CONCURRENT_APP],
        capture_output=True, text=True, timeout=180, env=bench_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"openenv-gen failed: {proc.stderr.strip()}")
    return out


def one_run(
    fleet: list[FleetServer], package_dir: Path, out_dir: Path, *, episodes: int, concurrency: int, retries: int,
    timeout: float,
) -> dict[str, Any]:
    from tests.support.scripted_model import Script, ScriptedChatModel
    from tests.support.servers import serve_app

    model = ScriptedChatModel(Script(SCRIPT))
    victim = fleet[0]
    # Early enough that the restarted server (uv sync + import: ~20 s) is back mid-run.
    kill_at = episodes * TURNS_PER_EPISODE // 8
    event: dict[str, Any] = {}

    def kill() -> None:
        event["in_flight"] = established_connections(victim.port)  # type: ignore[arg-type]
        event["model_turns_at_kill"] = len(model.requests)
        victim.kill()
        event["killed_at"] = time.monotonic()
        log(f"R4: killed {victim.url} holding {event['in_flight']} sessions, after {event['model_turns_at_kill']} model turns")

    def back() -> None:
        event["down_s"] = round(time.monotonic() - event["killed_at"], 1)
        log(f"R4: {victim.url} back after {event['down_s']} s")

    out_dir.mkdir(parents=True, exist_ok=True)
    with serve_app(model) as model_url:
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
        env = eval_env(package_dir)
        load_before = load_average()
        started = time.perf_counter()
        with open(out_dir / "stderr.txt", "wb") as stderr:
            proc = subprocess.Popen(
                [VF_EVAL, "@", str(config), "--no-rich"],
                cwd=out_dir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                start_new_session=True,
            )
            timed_out = False
            while proc.poll() is None:
                if "killed_at" not in event and len(model.requests) >= kill_at:
                    kill()
                elif "killed_at" in event and "restarted" not in event and time.monotonic() - event["killed_at"] >= RESTART_AFTER_S:
                    victim.launch()
                    event["restarted"] = True
                elif "restarted" in event and "down_s" not in event and victim.ready():
                    back()
                elif time.perf_counter() - started > timeout:
                    timed_out = True
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=60)
                time.sleep(0.05)
            wall = time.perf_counter() - started
        # The run may end first: the fleet is whole again before the next run.
        if "killed_at" in event and "restarted" not in event:
            victim.launch()
        if "killed_at" in event and "down_s" not in event:
            while not victim.ready():
                time.sleep(0.2)
            back()
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
    if retries:
        goal = ok == episodes
    else:
        goal = in_flight is not None and failed <= in_flight and set(failed_stops) <= {"env_lost"}
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
        f"in flight on the killed server {in_flight}, {wall:.1f}s" + (" TIMED OUT" if timed_out else "")
    )
    return result


def run(quick: bool, workdir: Path, *, episodes: int | None = None, concurrency: int | None = None, servers: int = 4,
        timeout: float = 1800) -> list[dict[str, Any]]:
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
                one_run(fleet, package_dir, workdir / f"r4-retries{retries}", episodes=episodes, concurrency=concurrency,
                        retries=retries, timeout=timeout)
            )
    finally:
        for server in fleet:
            server.stop()
    plain, retried = runs
    measured = (
        f"{episodes}@{concurrency} over {servers} servers, one killed and restarted: no retries {plain['ok']}/{episodes} ok "
        f"({plain['failed']} failed: {plain['failed_stop_conditions'] or 'none'}; {plain['in_flight_on_killed_server']} in flight "
        f"on the killed server), {plain['wall_s']} s; retries 2: {retried['ok']}/{episodes} ok, {retried['wall_s']} s"
    )
    return [{
        "id": "R4",
        "title": "fleet under load, one server killed and restarted mid-run",
        "target": "no retries: failures ≤ sessions in flight on the killed server, all env_lost; retries: all ok",
        "measured": measured,
        "ratio": round(retried["ok"] / episodes, 3),
        "ratio_label": "ok fraction with retries",
        "meets_target": plain["goal_met"] and retried["goal_met"],
        "details": {"fleet_runs": runs},
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=None, help="default 256 (64 with --quick)")
    parser.add_argument("--concurrency", type=int, default=None, help="default 64 (16 with --quick)")
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds each vf-eval run may take")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openenvgen-r4-") as tmp:
        (result,) = run(ns.quick, Path(tmp), episodes=ns.episodes, concurrency=ns.concurrency, servers=ns.servers,
                        timeout=ns.timeout)
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

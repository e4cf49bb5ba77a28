"""R4: a fleet under load that loses a server mid-run and gets it back mid-run: 256 episodes
at 64 in flight (quick: 64 at 16) through a real `vf-eval` over a `base_url` fleet of 4
servers (the concurrent guess-the-number app, each launched through OpenEnv's UV provider by
the runtime's launcher); once the model has answered as many turns as there are slots, one
server is SIGKILLed and, 2 s later, restarted on its port while episodes are still played
(the model answers each turn 10 s late). Twice: without retries and with 2. "In flight" is
the pool's own count of the killed server's sessions (`Server.active`) when it died:
`vf-eval` runs inside this module (`--probe`), where a thread reads the runtime's pool and
sends the SIGKILL itself, so the reading and the kill are one step. Episodes per server
come from each env server's own counter (`GET /bench/resets`); the restarted process counts
from zero. Target: the killed server is back while the run goes on and takes new episodes;
without retries the failures are at most its sessions in flight, all `env_lost`; with
retries every episode is ok."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import (
    BENCH,
    CONCURRENT_APP,
    ENV_ID,
    PACKAGE_ID,
    SCRIPT,
    DelayedModel,
    bench_env,
    cli,
    eval_env,
    generate_package,
    log,
    row,
    traces,
    write_eval_config,
)

from openenvgen_servers.processes import stop_process_group
from openenvgen_servers.wire import health, wait_healthy
from openenvgen_testsupport.paths import UV_FIXTURE_PROJECT

RESTART_AFTER_S = 2.0
TIMEOUT_S = 1800
MODEL_DELAY_S = 10.0
"""Seconds the model takes per turn: a run long enough for the killed server to return."""


class FleetServer:
    """One env server on a fixed port, launched by the runtime's launcher; killable and
    restartable on the same port."""

    port: int | None = None
    provider: Any = None
    url = ""

    def launch(self) -> None:
        """Start the server (not waiting for it); from the main thread: the launcher asks
        the kernel to stop a server when the thread that started it ends."""
        from openenvgen_runtime.launching import launch

        kwargs = {
            "project_path": str(UV_FIXTURE_PROJECT),
            "app": CONCURRENT_APP,
            "env_vars": {"PYTHONPATH": str(BENCH / "envs"), "GUESS_ENV_MAX_SESSIONS": "256"},
            **({"port": self.port} if self.port else {}),
        }
        self.provider = launch.make_provider(ENV_ID, kwargs, mode="uv", timeout=300)
        (self.url,) = self.provider.launch()
        self.port = int(self.url.rsplit(":", 1)[1])

    def ready(self) -> bool:
        import httpx

        if (code := self.provider.exit_code()) is not None:
            raise RuntimeError(f"server exited with {code}: {self.provider.log_tail()}")
        with httpx.Client() as client:
            return health(client, self.url, timeout=2) is None


def server_resets(server: FleetServer) -> int | None:
    """Episodes the server process has begun (its own counter, bench/envs/guess_concurrent.py)."""
    import httpx

    try:
        return int(httpx.get(f"{server.url}/bench/resets", timeout=5).json()["resets"])
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def one_run(
    fleet: list[FleetServer], package_dir: Path, out_dir: Path, episodes: int, concurrency: int, retries: int
) -> dict[str, Any]:
    from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
    from openenvgen_testsupport.servers import serve_app

    model = ScriptedChatModel(Script(SCRIPT))
    victim = fleet[0]
    # Killed once every slot's first turn is answered: early, so that the restarted server
    # (uv sync + import: 20-60 s here) is back while episodes are still being played.
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
        log(f"R4: killed {victim.url} holding {event['in_flight']} sessions ({event['model_turns_at_kill']} turns)")

    def back() -> None:
        event["down_s"] = round(time.monotonic() - event["killed_at"], 1)
        event["back_while_running"] = proc.poll() is None
        log(f"R4: {victim.url} back after {event['down_s']} s, while running: {event['back_while_running']}")

    with serve_app(DelayedModel(model, MODEL_DELAY_S)) as model_url:
        taskset = {"id": PACKAGE_ID, "base_url": [s.url for s in fleet]}
        env_config = {"taskset": taskset, "player": {"max_turns": 12}, "retries": {"max_retries": retries}}
        config = write_eval_config(out_dir, str(model_url), episodes, concurrency, env_config)
        env = eval_env(package_dir, OPENENVGEN_BENCH_PROBE=str(out_dir))
        argv = [sys.executable, __file__, "--probe", "@", str(config), "--no-rich"]
        started = time.perf_counter()
        with open(out_dir / "stderr.txt", "wb") as stderr:
            streams: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": stderr}
            proc = subprocess.Popen(argv, cwd=out_dir, env=env, start_new_session=True, **streams)
            timed_out = False
            try:
                while proc.poll() is None:
                    if "killed_at" not in event and len(model.requests) >= concurrency:
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
                    elif time.perf_counter() - started > TIMEOUT_S:
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
    records = traces(out_dir)
    ok = sum(bool(record.get("ok")) for record in records)
    failed_stops = collections.Counter(
        str((record.get("traces") or [{}])[0].get("stop_condition")) for record in records if not record.get("ok")
    )
    stderr_text = (out_dir / "stderr.txt").read_text(errors="replace")
    failed, in_flight = episodes - ok, event.get("in_flight")
    returned = bool(event.get("back_while_running")) and (taken[0] or 0) > 0
    if retries:
        goal = ok == episodes and returned
    else:
        goal = in_flight is not None and failed <= in_flight and set(failed_stops) <= {"env_lost"} and returned
    result = {
        "episodes": episodes,
        "concurrency": concurrency,
        "servers": len(fleet),
        "retries": retries,
        "timed_out": timed_out,
        "wall_s": round(wall, 1),
        "ok": ok,
        "failed": failed,
        "failed_stop_conditions": dict(failed_stops),
        "in_flight_on_killed_server": in_flight,
        "killed_server_down_s": event.get("down_s"),
        "back_while_running": event.get("back_while_running"),
        "episodes_begun_per_server": dict(zip([s.url for s in fleet], taken, strict=True)),
        "killed_server_episodes_after_return": taken[0],
        "episode_retries": stderr_text.count("retrying episode"),
        "goal_met": goal,
    }
    log(f"R4 {result}")
    return result | ({} if records else {"stderr_tail": stderr_text[-1500:]})


def run(quick: bool, workdir: Path) -> list[dict[str, Any]]:
    episodes, concurrency, servers = (64, 16, 4) if quick else (256, 64, 4)
    os.environ["PATH"] = bench_env()["PATH"]
    fleet = [FleetServer() for _ in range(servers)]
    try:
        for server in fleet:
            server.launch()
            wait_healthy(server.url, 300, exited=server.provider.exit_code, interval=0.2)
        log(f"R4: fleet of {servers} at {', '.join(s.url for s in fleet)}")
        package_dir = generate_package(workdir)
        runs = [one_run(fleet, package_dir, workdir / f"r4-retries{r}", episodes, concurrency, r) for r in (0, 2)]
    finally:
        for server in fleet:
            if server.provider is not None:
                server.provider.stop()
    plain, retried = runs
    measured = "; ".join(
        f"retries {x['retries']}: {x['ok']}/{episodes} ok "
        f"({x['failed']} failed: {x['failed_stop_conditions'] or 'none'}; "
        f"{x['in_flight_on_killed_server']} in flight on the killed server by the pool's count), "
        f"killed server back after {x['killed_server_down_s']} s "
        f"{'while the run went on' if x['back_while_running'] else 'only after the run ended'}, "
        f"then took {x['killed_server_episodes_after_return']} new episodes, "
        f"{x['wall_s']} s"
        for x in (plain, retried)
    )
    return [
        row(
            "R4",
            f"fleet of {servers} under load ({episodes}@{concurrency}), one server killed and restarted mid-run",
            "the killed server returns mid-run and takes new episodes; "
            "no retries: failures ≤ its sessions in flight, all env_lost; retries: all ok",
            measured,
            round(retried["ok"] / episodes, 3),
            plain["goal_met"] and retried["goal_met"],
            label="ok fraction with retries",
            fleet_runs=runs,
        )
    ]


def probe(out: Path, pools: list[Any]) -> None:
    """In the `vf-eval` process: once `out/kill.json` (`{"url", "pgid"}`) appears, read that
    server's sessions in flight from the `pools` the run started, SIGKILL its process group
    and write `out/killed.json` (`{"in_flight"}`)."""
    import signal

    while not (out / "kill.json").exists():
        time.sleep(0.01)
    order = json.loads((out / "kill.json").read_text())
    victim = next((s for pool in pools for s in list(pool.servers) if s.url == order["url"]), None)
    in_flight = victim.active if victim is not None else None
    os.killpg(order["pgid"], signal.SIGKILL)
    (out / "killed.tmp").write_text(json.dumps({"in_flight": in_flight}))
    (out / "killed.tmp").rename(out / "killed.json")  # whole or not at all: read as soon as it exists


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:  # the `vf-eval` process of a run, with the pool probe
        import threading

        from verifiers.v1.cli.eval.main import main as vf_eval

        from openenvgen_runtime.fleet import pool as pool_module

        pools: list[Any] = []
        start = pool_module.ServerPool.start

        async def registered(self: Any) -> None:  # every pool the run starts is known
            pools.append(self)
            await start(self)

        pool_module.ServerPool.start = registered  # type: ignore[method-assign]
        out = Path(os.environ["OPENENVGEN_BENCH_PROBE"])
        threading.Thread(target=probe, args=(out, pools), daemon=True).start()
        sys.argv[:2] = ["vf-eval"]
        sys.exit(vf_eval())
    cli(run)


if __name__ == "__main__":
    main()

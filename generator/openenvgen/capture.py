"""`openenv-gen capture CHECKOUT`: record every env of a huggingface/OpenEnv checkout.

Each env folder (`envs/NAME` with a `pyproject.toml`) is started the way OpenEnv's UV
provider starts it, `uv run --isolated --project ENV_DIR -- uvicorn APP --host 127.0.0.1
--port P`, so its own pyproject and `uv.lock` decide what runs (what users of the UV
provider get; uv re-resolves a lock that no longer matches its pyproject). From the
running server we record, one JSON file per reply:

- `health.json`, `metadata.json`, `schema.json` (GET `/health`, `/metadata`, `/schema`);
- `mcp_tools_list.json` (POST `/mcp` tools/list) for MCP envs, else `mcp_probe.json`
  (the JSON-RPC error a non-MCP env returns);
- one WebSocket session on `/ws`: `reset_request.json`/`reset.json`, then for MCP envs
  `tools.json` (a `list_tools` step) and `ws_mcp_tools_list.json` (an `mcp` message), then
  the catalog's episode actions as `step_action.json`/`step.json`,
  `step_N_action.json`/`step_N.json` (N = 2, 3, ...);
- `source.json`: the commit, the command, the env vars set, the versions installed
  (openenv, fastmcp, ...), and notes on what the env could not do here.

The reset kwargs and the actions come from the env's catalog entry (`resets[0]`, then
`episode`, else `example_action`; none with `no_episode`), so the recording is exactly the
scripted episode the tests replay. An env without a catalog entry is recorded up to its
reset. `capture.json`
in the output folder indexes the run: the source commit, what was captured, and each
failure with its reason (the server's last log lines). With `--catalog DIR` the catalog's
snapshots (`DIR/snapshots`) and source commit (`DIR/catalog.toml`) are rewritten too
(see corpus.py).

Some envs download data when they start; where a small stand-in makes them run offline
it is made here (see `_SETUP`), and `source.json` says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
from openenvgen_schemas.modeldiff import is_mcp_action

from openenvgen.errors import SourceError, UsageError

UPSTREAM_REPO = "huggingface/OpenEnv"
INDEX_FILE = "capture.json"
START_TIMEOUT_S = 900.0
"""The first start of an env runs its `uv sync`, which downloads its dependencies."""
REQUEST_TIMEOUT_S = 120.0
CATALOG_TOML = Path(__file__).parent / "data" / "catalog.toml"


class CaptureFailed(Exception):
    """One env could not be recorded; the message says why (one line plus log lines)."""


# ---------------------------------------------------------------------------
# Per-env setup: stand-ins for data an env downloads when it starts
# ---------------------------------------------------------------------------

# Common English five-letter nouns: the stand-in word list TextArena's Wordle draws its
# secret word from (real Wordle uses NLTK's `words` corpus, downloaded at start).
_STUB_WORDS = (
    "apple", "beach", "bread", "brick", "chair", "chalk", "cloud", "crane", "dream", "earth",
    "field", "flame", "fruit", "glass", "grape", "heart", "horse", "house", "juice", "knife",
    "lemon", "light", "money", "mouse", "music", "night", "ocean", "paper", "piano", "plant",
    "river", "salad", "sheep", "slate", "smile", "snake", "stone", "storm", "table", "tiger",
    "toast", "train", "water", "whale", "world",
)  # fmt: skip


def _stub_nltk_data(root: Path) -> dict[str, str]:
    """Write the two NLTK resources TextArena loads (the `words` corpus and the English
    perceptron tagger) as small stand-ins: the word list above, and a tagger with no
    weights whose only class is `NN`, so every word counts as a noun."""
    words = root / "corpora" / "words"
    words.mkdir(parents=True, exist_ok=True)
    for name in ("en", "en-basic"):
        (words / name).write_text("\n".join(_STUB_WORDS) + "\n", "ascii")
    tagger = root / "taggers" / "averaged_perceptron_tagger_eng"
    tagger.mkdir(parents=True, exist_ok=True)
    for suffix, value in (("weights", {}), ("tagdict", {}), ("classes", ["NN"])):
        (tagger / f"averaged_perceptron_tagger_eng.{suffix}.json").write_text(json.dumps(value), "utf-8")
    # TEXTARENA_DOWNLOAD_NLTK=0 skips the env's own download call; NLTK_DATA points NLTK
    # at the stand-ins (textarena itself still tries `nltk.download`, which fails offline
    # and falls back to what is there).
    return {"NLTK_DATA": str(root), "TEXTARENA_DOWNLOAD_NLTK": "0"}


def _stub_tokenizer(root: Path) -> dict[str, str]:
    """A word-level tokenizer over the word list above, saved as a local Hugging Face
    tokenizer: chat_env loads `TOKENIZER_NAME` (default gpt2, downloaded from the Hub)."""
    root.mkdir(parents=True, exist_ok=True)
    vocab = {"[UNK]": 0, **{word: i for i, word in enumerate(_STUB_WORDS, start=1)}}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [
            {"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        ],
        "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
        "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }  # fmt: skip
    (root / "tokenizer.json").write_text(json.dumps(tokenizer), "utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 4096}
    (root / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    return {"TOKENIZER_NAME": str(root), "HF_HUB_OFFLINE": "1"}


def _stub_finqa_data(root: Path) -> dict[str, str]:
    """A one-question stand-in for the FinQA data (SEC 10-K tables and questions that
    upstream downloads from the Hugging Face Hub): one company with one table."""
    questions = root / "benchmark_questions"
    questions.mkdir(parents=True, exist_ok=True)
    (questions / "finqa.csv").write_text(
        "id,user_query,company,question,answer,question_type,explanation\n"
        'q1,"What was example_corp\'s revenue in 2023, in millions of dollars?",example_corp,'
        "What was the revenue in 2023?,$420 million,lookup,From the income statement.\n",
        "utf-8",
    )
    company = root / "input_companies" / "example_corp"
    company.mkdir(parents=True, exist_ok=True)
    table = [{"item": "revenue", "2022": "380", "2023": "420"}, {"item": "net income", "2022": "40", "2023": "52"}]
    (company / "income_statement.json").write_text(json.dumps(table), "utf-8")
    cleaned = {"example_corp/income_statement": {"description": "Income statement, millions of dollars", "table": json.dumps(table)}}
    (root / "input_companies" / "tables_cleaned_all_companies.json").write_text(json.dumps(cleaned), "utf-8")
    return {"FINQA_DATA_PATH": str(root)}


@dataclass(frozen=True)
class Setup:
    """What an env needs around it to start here."""

    env_vars: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path], dict[str, str]] | None = None
    """Makes stand-in data in a scratch folder; returns the env vars pointing at it."""
    note: str = ""
    run_in_env_dir: bool = False
    """Start from inside the env folder: apps doing `from models import ...` (a top-level
    import of the env's own module) only import there (uvicorn puts the cwd on sys.path)."""


_SETUP: dict[str, Setup] = {
    "atari_env": Setup(
        env_vars={"ATARI_OBS_TYPE": "ram"},
        note="ATARI_OBS_TYPE=ram: 128-byte RAM observations instead of 100,800-value RGB frames, to keep the recording small; the schema is the same",
    ),
    "snake_env": Setup(
        run_in_env_dir=True,
        note="started from inside envs/snake_env: its app falls back to `from models import ...`, which imports only there",
    ),
    "websearch_env": Setup(
        run_in_env_dir=True,
        note="started from inside envs/websearch_env: its app does `from models import ...`, which imports only there",
    ),
    "finqa_env": Setup(
        prepare=_stub_finqa_data,
        note="stand-in data (one question, one company, one table) instead of the FinQA dataset from the Hub",
    ),
    "chat_env": Setup(
        prepare=_stub_tokenizer,
        note="stand-in tokenizer (word level, a small vocabulary) instead of gpt2 from the Hub: token ids differ",
    ),
    "textarena_env": Setup(
        prepare=_stub_nltk_data,
        note="stand-in NLTK data (a small word list and a tagger that tags every word NN): "
        "secret words differ from real Wordle; the schema is real",
    ),
}


# ---------------------------------------------------------------------------
# The checkout
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvFolder:
    path: Path
    package: str
    """The import package the env's pyproject maps its folder to (its `<pkg>.server.app`)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def app(self) -> str:
        # `uv run --project` does not cd into the env: its own `server.app:app` would not
        # import, the installed package's module does.
        return f"{self.package}.server.app:app"


def env_folders(checkout: Path, only: list[str] | None = None) -> list[EnvFolder]:
    envs = checkout / "envs"
    if not envs.is_dir():
        raise UsageError(f"{checkout}: not an OpenEnv checkout (no envs/ folder)")
    found = {p.name: EnvFolder(p, _package_of(p)) for p in sorted(envs.iterdir()) if (p / "pyproject.toml").is_file()}
    if not only:
        return list(found.values())
    unknown = [name for name in only if name not in found]
    if unknown:
        raise UsageError(f"no env folder {', '.join(unknown)} under {envs}")
    return [found[name] for name in only]


def _package_of(env_dir: Path) -> str:
    pyproject = tomllib.loads((env_dir / "pyproject.toml").read_text("utf-8"))
    package_dir = pyproject.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, folder in package_dir.items():
        if folder in (".", "") and package:
            return package
    return env_dir.name


def source_commit(checkout: Path, given: str | None) -> str:
    if given:
        return given
    try:
        done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        raise UsageError(f"{checkout} is not a git checkout: pass the commit it was exported from with --commit")
    return done.stdout.strip()


_VERSIONS_SCRIPT = """
import importlib.metadata as m, json, platform
names = ("openenv", "openenv-core", "fastmcp", "pydantic")
found = {}
for name in names:
    try:
        found[name] = m.version(name)
    except m.PackageNotFoundError:
        pass
print(json.dumps({"python": platform.python_version(), **found}))
"""


def installed_versions(env: EnvFolder) -> dict[str, str]:
    """What the env's UV environment really holds (uv re-resolves a stale uv.lock in
    memory, so the lock alone can name an older openenv than the one that runs)."""
    command = [find_uv(), "run", "--isolated", "--project", str(env.path), "--", "python", "-c", _VERSIONS_SCRIPT]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------
# Running one env
# ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_uv() -> str:
    """`uv` on PATH, else the one installed next to this interpreter (an unactivated venv)."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found is None:
        raise UsageError("capturing needs `uv` (pip install uv)")
    return found


def uv_command(env: EnvFolder, port: int) -> list[str]:
    """The command OpenEnv's UVProvider runs (openenv.core.containers.runtime.uv_provider)."""
    return [find_uv(), "run", "--isolated", "--project", str(env.path), "--", "uvicorn", env.app,
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]  # fmt: skip


def _tail(log: Path, lines: int = 12) -> str:
    with contextlib.suppress(OSError), open(log, errors="replace") as fh:
        return " | ".join(line.rstrip() for line in deque(fh, maxlen=lines) if line.strip())
    return ""


@contextlib.contextmanager
def running(env: EnvFolder, env_vars: dict[str, str], log: Path, timeout: float, *, cwd: Path | None = None) -> Iterator[str]:
    """The env's server, started as the UV provider starts it; yields its base URL."""
    port = _free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            uv_command(env, port),
            env={**os.environ, **env_vars},
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stopping the group also stops the uvicorn uv spawned
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise CaptureFailed(f"server exited with {process.returncode} while starting: {_tail(log)}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise CaptureFailed(f"no healthy /health within {timeout:.0f}s: {_tail(log)}")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What to send: the reset kwargs and the episode's actions (wire form)."""

    reset: dict[str, Any]
    actions: list[dict[str, Any]]


def wire_form(action: dict[str, Any], *, mcp: bool) -> dict[str, Any]:
    """A catalog action (`{tool, arguments}` for MCP envs) as the env receives it."""
    if mcp and "tool" in action:
        return {"type": "call_tool", "tool_name": action["tool"], "arguments": action.get("arguments", {})}
    return dict(action)


def plan_for(env: EnvFolder, *, mcp: bool, catalog_toml: Path = CATALOG_TOML) -> Plan:
    """The catalog entry's first reset and its `episode` (default: its example action)."""
    raw = tomllib.loads(catalog_toml.read_text("utf-8"))
    entry = next((e for e in raw["envs"].values() if e.get("corpus") == env.name), None)
    if entry is None:
        return Plan(reset={}, actions=[])
    example = entry.get("example_action")
    episode = entry.get("episode") or ([example] if example else [])
    if entry.get("no_episode"):  # the env cannot play one here: the reason is in the catalog
        episode = []
    return Plan(reset=dict((entry.get("resets") or [{}])[0]), actions=[wire_form(a, mcp=mcp) for a in episode])


def _write(folder: Path, name: str, value: Any) -> None:
    (folder / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", "utf-8")


def _get(client: httpx.Client, path: str) -> Any:
    reply = client.get(path)
    if reply.status_code != 200:
        raise CaptureFailed(f"GET {path} answered {reply.status_code}: {reply.text[:200]}")
    return reply.json()


def record(url: str, folder: Path, plan_of: Callable[[bool], Plan]) -> list[str]:
    """Record one running env into `folder`; returns the notes worth keeping.

    `/health` and `/schema` must answer (else CaptureFailed): they are what the catalog is
    made of. Past that, what the env cannot do here is noted, not fatal: a `/metadata`
    that fails (openenv builds an env instance to answer it, so the env cannot start a
    session here either), a reset that answers an error or ends the episode.
    """
    notes: list[str] = []
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S) as client:
        _write(folder, "health.json", _get(client, "/health"))
        schema = _get(client, "/schema")
        _write(folder, "schema.json", schema)
        action = schema.get("action")
        mcp = isinstance(action, dict) and is_mcp_action(action)
        metadata = client.get("/metadata")
        if metadata.status_code != 200:
            notes.append(f"GET /metadata answered {metadata.status_code}: the env cannot be created here, no session recorded")
            return notes
        _write(folder, "metadata.json", metadata.json())
        listing = client.post("/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1})
        try:
            listing_json = listing.json()
        except ValueError:  # an openenv without /mcp
            listing_json = {"status_code": listing.status_code, "text": listing.text[:500]}
    _write(folder, "mcp_tools_list.json" if mcp else "mcp_probe.json", listing_json)
    plan = plan_of(mcp)
    outcome = _record_session(url, folder, plan, mcp=mcp)
    if outcome:
        notes.append(outcome)
    elif not plan.actions:
        notes.append("no catalog episode for this env: recorded up to the reset")
    return notes


def _record_session(url: str, folder: Path, plan: Plan, *, mcp: bool) -> str:
    """Record the WS session; returns why it stopped at the reset ("" if it did not)."""
    from websockets.sync.client import connect

    ws_url = "ws" + url.removeprefix("http") + "/ws"

    def send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        ws.send(json.dumps(message))
        return json.loads(ws.recv(timeout=REQUEST_TIMEOUT_S))

    with connect(ws_url, max_size=None, open_timeout=30) as ws:
        request = {"type": "reset", "data": plan.reset}
        _write(folder, "reset_request.json", request)
        reset = send(ws, request)
        _write(folder, "reset.json", reset)
        if reset.get("type") == "error":
            return f"the reset answered an error: {json.dumps(reset.get('data'))[:300]}"
        if mcp:
            _write(folder, "tools.json", send(ws, {"type": "step", "data": {"type": "list_tools"}}))
            message = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 7}
            _write(folder, "ws_mcp_tools_list.json", send(ws, {"type": "mcp", "data": message}))
        if reset.get("data", {}).get("done"):
            return "the reset ended the episode (done): no step sent"
        for n, action in enumerate(plan.actions, start=1):
            stem = "step" if n == 1 else f"step_{n}"
            _write(folder, f"{stem}_action.json", action)
            reply = send(ws, {"type": "step", "data": action})
            _write(folder, f"{stem}.json", reply)
            if reply.get("type") == "error":
                raise CaptureFailed(f"step {n} of the catalog episode answered an error: {json.dumps(reply.get('data'))[:300]}")
        with contextlib.suppress(Exception):
            ws.send(json.dumps({"type": "close"}))
    return ""


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------


def capture_env(env: EnvFolder, out: Path, *, commit: str, timeout: float, logs: Path, catalog_toml: Path = CATALOG_TOML) -> list[str]:
    """Start, record and stop one env into `out/<env dir>`; raises CaptureFailed."""
    folder = out / env.name
    scratch = Path(tempfile.mkdtemp(prefix=f"capture-{env.name}-"))
    try:
        setup = _SETUP.get(env.name, Setup())
        env_vars = dict(setup.env_vars)
        if setup.prepare is not None:
            env_vars.update(setup.prepare(scratch / "data"))
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        # Some envs write files into their working directory (calendar_env's databases):
        # a scratch one keeps them out of wherever the capture was started.
        cwd = env.path if setup.run_in_env_dir else scratch
        with running(env, env_vars, logs / f"{env.name}.log", timeout, cwd=cwd) as url:
            notes = record(url, folder, lambda mcp: plan_for(env, mcp=mcp, catalog_toml=catalog_toml))
        shown_vars = {k: ("<stand-in data>" if v.startswith(str(scratch)) else v) for k, v in env_vars.items()}
        _write(folder, "source.json", {
            "repo": UPSTREAM_REPO,
            "commit": commit,
            "env_dir": f"envs/{env.name}",
            "command": ["uv", "run", "--isolated", "--project", f"envs/{env.name}", "--", "uvicorn", env.app,
                        "--host", "127.0.0.1", "--port", "PORT", "--workers", "1"],
            "app": env.app,
            "versions": installed_versions(env),
            "env_vars": shown_vars,
            "cwd": f"envs/{env.name}" if setup.run_in_env_dir else None,
            "notes": [n for n in (setup.note, *notes) if n],
        })  # fmt: skip
        return notes
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _short(reason: str, width: int = 300) -> str:
    """What went wrong, then the end of the log (where the error is), within `width`."""
    if len(reason) <= width:
        return reason
    what = reason.split(": ", 1)[0][:80]
    return f"{what}: ... {reason[-(width - len(what) - 6):]}"


def load_index(out: Path) -> dict[str, Any]:
    path = out / INDEX_FILE
    if path.is_file():
        return json.loads(path.read_text("utf-8"))
    return {"repo": UPSTREAM_REPO, "commit": None, "captured": [], "failed": {}}


def run_capture(
    checkout: Path,
    *,
    out: Path,
    only: list[str] | None = None,
    commit: str | None = None,
    timeout: float = START_TIMEOUT_S,
    catalog_dir: Path | None = None,
    jobs: int = 1,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Capture the checkout's envs into `out`; returns the updated index. The reset and
    episode of each env come from `catalog_dir`'s catalog.toml (default: the embedded
    catalog's); with `catalog_dir`, its snapshots and source commit are rewritten too."""
    catalog_toml = (catalog_dir / "catalog.toml") if catalog_dir is not None else CATALOG_TOML
    checkout = checkout.resolve()
    if not checkout.is_dir():
        raise UsageError(f"{checkout}: no such directory")
    envs = env_folders(checkout, only)
    find_uv()
    sha = source_commit(checkout, commit)
    out.mkdir(parents=True, exist_ok=True)
    # Server logs stay out of the recordings: failures carry their last lines anyway.
    logs = Path(tempfile.mkdtemp(prefix="openenv-capture-logs-"))
    echo(f"server logs: {logs}")
    index = load_index(out)
    if index.get("commit") not in (None, sha):
        if only:
            raise UsageError(f"{out} holds captures of {index['commit']}; capture every env of {sha} (no --only) or use another --out")
        index = {"repo": UPSTREAM_REPO, "commit": sha, "captured": [], "failed": {}}
    index["commit"] = sha
    captured = set(index.get("captured", []))
    failed = dict(index.get("failed", {}))
    lock = threading.Lock()

    def one(env: EnvFolder) -> None:
        started = time.monotonic()
        try:
            capture_env(env, out, commit=sha, timeout=timeout, logs=logs, catalog_toml=catalog_toml)
        except Exception as exc:  # any failure is this env's, recorded with its reason
            reason = " ".join(str(exc).split()) or type(exc).__name__
            with lock:
                failed[env.name] = reason
                captured.discard(env.name)
            echo(f"{env.name}: FAILED ({time.monotonic() - started:.0f}s): {_short(reason)}")
        else:
            with lock:
                captured.add(env.name)
                failed.pop(env.name, None)
            echo(f"{env.name}: captured ({time.monotonic() - started:.0f}s)")
        with lock:
            index.update(captured=sorted(captured), failed=dict(sorted(failed.items())))
            _write(out, INDEX_FILE, index)

    # Each env mostly waits (on uv installing its environment, on its server starting):
    # a few at a time use the machine better than one.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, envs))
    if catalog_dir is not None:
        from openenvgen.corpus import write_catalog

        write_catalog(out, catalog_dir, echo=echo)
    return index


def check_captured(index: dict[str, Any]) -> None:
    if not index.get("captured"):
        raise SourceError("no env could be captured (capture.json lists each with its reason)")

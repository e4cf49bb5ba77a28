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
    app_path: str | None = None
    """The ASGI app, when not `<package>.server.app:app` (an author's project: its manifest's)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def app(self) -> str:
        # `uv run --project` does not cd into the env: its own `server.app:app` would not
        # import, the installed package's module does.
        return self.app_path or f"{self.package}.server.app:app"


@dataclass(frozen=True)
class RunSettings:
    """How uv runs one env, beyond its own pyproject: the catalog entry's `capture` table.

    Each is what a user of the UV provider would have to do for the env to start here;
    `source.json` records them with the command.
    """

    python: str | None = None
    """The interpreter uv runs the env with (`uv run --python`): a version such as "3.12",
    found through `--python VERSION=PATH` (else uv's own search), or a path."""
    with_: tuple[str, ...] = ()
    """Extra requirements (`uv run --with`), e.g. a dependency the env's pyproject lacks."""
    overrides: tuple[str, ...] = ()
    """Requirements that replace the env's own (uv's `override-dependencies`), e.g. openenv
    from the index where the env's pyproject takes it from a git URL: the env is then run
    through a one-dependency wrapper project that applies them."""

    @classmethod
    def from_entry(cls, entry: dict[str, Any] | None) -> RunSettings:
        table = (entry or {}).get("capture") or {}
        unknown = set(table) - {"python", "with", "overrides"}
        if unknown:
            raise UsageError(f"catalog capture table: unknown key(s) {', '.join(sorted(unknown))} (python, with, overrides)")
        return cls(python=table.get("python"), with_=tuple(table.get("with", ())), overrides=tuple(table.get("overrides", ())))

    def options(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"python": self.python, "with": list(self.with_), "overrides": list(self.overrides)}
        return {k: v for k, v in shown.items() if v}


def resolve_python(requested: str | None, interpreters: dict[str, str]) -> str | None:
    """`requested` ("3.12", or a path) as uv's `--python` value: the interpreter given for
    that version with `--python VERSION=PATH`, else the request itself (uv searches PATH)."""
    if requested is None:
        return None
    return interpreters.get(requested, requested)


def parse_interpreters(values: list[str]) -> dict[str, str]:
    """`--python VERSION=PATH` options as {version: path}."""
    found = {}
    for value in values:
        version, sep, path = value.partition("=")
        if not sep or not version or not path:
            raise UsageError(f"--python {value!r}: expected VERSION=PATH, e.g. 3.12=/usr/bin/python3.12")
        if not Path(path).is_file():
            raise UsageError(f"--python {value!r}: no interpreter at {path}")
        found[version] = path
    return found


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
    return _mapped_package(env_dir) or env_dir.name


def _mapped_package(env_dir: Path) -> str | None:
    """The package setuptools' `package-dir` maps the env folder itself to, if any."""
    try:
        pyproject = tomllib.loads((env_dir / "pyproject.toml").read_text("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{env_dir}/pyproject.toml is not TOML ({e})") from None
    package_dir = pyproject.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, folder in package_dir.items():
        if folder in (".", "") and package:
            return package
    return None


MANIFEST = "openenv.yaml"


def project_env(path: Path) -> EnvFolder:
    """An env author's OpenEnv project (a folder with its `pyproject.toml` and `openenv.yaml`)
    as the UV provider runs it: `uv run --project PATH -- uvicorn APP`, APP the manifest's
    `app` as an installed module. uvicorn is not started inside the folder, so an app named
    relative to it (`server.app:app`) is named through the package the pyproject maps the
    folder to (`my_env.server.app:app`), as for upstream's envs."""
    path = path.resolve()
    for required in ("pyproject.toml", MANIFEST):
        if not (path / required).is_file():
            raise UsageError(f"--project {path}: no {required} (an OpenEnv env project has a pyproject.toml and an {MANIFEST})")
    import yaml

    try:
        manifest = yaml.safe_load((path / MANIFEST).read_text("utf-8"))
    except yaml.YAMLError as e:
        raise UsageError(f"--project {path}: {MANIFEST} is not YAML ({' '.join(str(e).split())[:160]})") from None
    app = manifest.get("app") if isinstance(manifest, dict) else None
    if not isinstance(app, str) or ":" not in app:
        raise UsageError(f"--project {path}: {MANIFEST} names no app as MODULE:ATTR (e.g. `app: server.app:app`)")
    mapped = _mapped_package(path)
    if mapped is not None:
        module = app.split(":", 1)[0]
        if f".{mapped}." in f".{module}":  # a repository-relative path: envs.my_env.server.app
            app = app[f".{app}".index(f".{mapped}.") :]
        elif not module.startswith(f"{mapped}."):
            app = f"{mapped}.{app}"
    return EnvFolder(path, mapped or path.name, app_path=app)


def project_name(path: Path) -> str | None:
    """The manifest's `name` (an env id for the package), if it has one."""
    import yaml

    manifest = yaml.safe_load((path / MANIFEST).read_text("utf-8"))
    name = manifest.get("name") if isinstance(manifest, dict) else None
    return name if isinstance(name, str) and name else None


@contextlib.contextmanager
def serving_project(env: EnvFolder, *, timeout: float = START_TIMEOUT_S) -> Iterator[str]:
    """The project's server, started as `capture` starts upstream envs (from a scratch
    working directory, its log in a scratch file); yields its URL, stops it on exit."""
    scratch = Path(tempfile.mkdtemp(prefix=f"openenv-gen-project-{env.name}-"))
    try:
        try:
            with running(env, {}, scratch / "server.log", timeout, cwd=scratch) as url:
                yield url
        except CaptureFailed as e:
            raise SourceError(f"--project {env.path}: {' '.join(str(e).split())[:600]}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


def installed_versions(env: EnvFolder, uv_run: list[str] | None = None, *, cwd: Path | None = None) -> dict[str, str]:
    """What the env's UV environment really holds (uv re-resolves a stale uv.lock in
    memory, so the lock alone can name an older openenv than the one that runs)."""
    command = [*(uv_run or uv_run_prefix(env)), "python", "-c", _VERSIONS_SCRIPT]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=cwd)
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


def uv_run_prefix(env: EnvFolder, settings: RunSettings = RunSettings(), *, python: str | None = None, project: Path | None = None) -> list[str]:
    """`uv run ... --`: OpenEnv's UVProvider's `uv run --isolated --project ENV`, with the
    env's run settings (`python` is the resolved `--python`; `project` the wrapper project
    that applies overrides)."""
    command = [find_uv(), "run", "--isolated"]
    if python:
        command += ["--python", python]
    for requirement in settings.with_:
        command += ["--with", requirement]
    return [*command, "--project", str(project or env.path), "--"]


def uv_command(env: EnvFolder, port: int, uv_run: list[str] | None = None) -> list[str]:
    """The command OpenEnv's UVProvider runs (openenv.core.containers.runtime.uv_provider)."""
    return [*(uv_run or uv_run_prefix(env)), "uvicorn", env.app,
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]  # fmt: skip


def override_project(env: EnvFolder, overrides: tuple[str, ...], folder: Path) -> Path:
    """A wrapper project in `folder` whose one dependency is the env (from its folder) and
    whose uv `override-dependencies` are `overrides`: uv applies overrides of the project
    it runs, and the env's own pyproject stays as upstream wrote it. The env's `uv.lock`
    still decides the rest: its pinned versions become the wrapper's constraints (a fresh
    resolution can pair versions the lock never did, e.g. dm_control with a newer MuJoCo)."""
    pyproject = tomllib.loads((env.path / "pyproject.toml").read_text("utf-8"))
    project = pyproject.get("project", {})
    dist = project.get("name")
    if not dist:
        raise CaptureFailed(f"{env.path}/pyproject.toml names no [project] name to depend on")
    requires = project.get("requires-python")
    constraints = _locked_versions(env.path, skip={_requirement_name(o) for o in overrides} | {_requirement_name(dist)})
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Runs the env with overridden requirements (openenv-gen capture).",
        "[project]",
        'name = "capture-wrapper"',
        'version = "0"',
        *([f"requires-python = {json.dumps(requires)}"] if requires else []),
        f"dependencies = [{json.dumps(dist)}]",
        "",
        "[tool.uv]",
        "package = false",
        f"override-dependencies = [{', '.join(json.dumps(o) for o in overrides)}]",
        f"constraint-dependencies = [{', '.join(json.dumps(c) for c in constraints)}]",
        "",
        "[tool.uv.sources]",
        f"{json.dumps(dist)} = {{ path = {json.dumps(str(env.path))} }}",
        "",
    ]
    (folder / "pyproject.toml").write_text("\n".join(lines), "utf-8")
    return folder


def _tail(log: Path, lines: int = 12) -> str:
    with contextlib.suppress(OSError), open(log, errors="replace") as fh:
        return " | ".join(line.rstrip() for line in deque(fh, maxlen=lines) if line.strip())
    return ""


def _requirement_name(requirement: str) -> str:
    """A PEP 508 requirement's distribution name, normalised (`openenv[core]>=1` → openenv)."""
    import re

    name = re.split(r"[\s\[<>=!~;@(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked_versions(env_dir: Path, *, skip: set[str]) -> list[str]:
    """`name==version` for each index package the env's uv.lock pins to one version."""
    lock = env_dir / "uv.lock"
    if not lock.is_file():
        return []
    versions: dict[str, set[str]] = {}
    for package in tomllib.loads(lock.read_text("utf-8")).get("package", []):
        if "registry" in (package.get("source") or {}) and package.get("version"):
            versions.setdefault(_requirement_name(package["name"]), set()).add(package["version"])
    return [f"{name}=={next(iter(found))}" for name, found in sorted(versions.items()) if len(found) == 1 and name not in skip]


@contextlib.contextmanager
def running(env: EnvFolder, env_vars: dict[str, str], log: Path, timeout: float, *, cwd: Path | None = None, uv_run: list[str] | None = None) -> Iterator[str]:
    """The env's server, started as the UV provider starts it; yields its base URL."""
    port = _free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            uv_command(env, port, uv_run),
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
        _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop uv and everything it started (its process group): SIGTERM, then SIGKILL to
    whatever is left after 10 s; returns once the group is gone (or after 20 s more)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    # uv is gone; the uvicorn it started may still be shutting down.
    started = time.monotonic()
    while time.monotonic() - started < 20:
        try:
            os.killpg(process.pid, signal.SIGKILL if time.monotonic() - started > 10 else 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


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


def catalog_entry(env_name: str, catalog_toml: Path = CATALOG_TOML) -> dict[str, Any] | None:
    """The catalog entry made from the env folder `env_name` (its `corpus`), if any."""
    raw = tomllib.loads(catalog_toml.read_text("utf-8"))
    return next((e for e in raw["envs"].values() if e.get("corpus") == env_name), None)


def plan_for(env: EnvFolder, *, mcp: bool, catalog_toml: Path = CATALOG_TOML) -> Plan:
    """The catalog entry's first reset and its `episode` (default: its example action)."""
    entry = catalog_entry(env.name, catalog_toml)
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


def record(url: str, folder: Path, plan_of: Callable[[bool], Plan], *, log: Path | None = None) -> list[str]:
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
            _write(folder, SEED_FILE, {"verdict": "unmeasured", "evidence": {"reason": f"GET /metadata answered {metadata.status_code}: the env cannot be created here"}})
            _record_verdicts(url, folder, action, log)
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
    _write(folder, SEED_FILE, measure_seed(url, plan))
    _record_verdicts(url, folder, action, log)
    return notes


SEED_FILE = "seed.json"
VERDICTS_FILE = "validation.json"


def _record_verdicts(url: str, folder: Path, action_schema: Any, log: Path | None) -> None:
    """The server's verdicts on actions sampled from its schema (see verdicts.py); its log
    tells a validator that raised from a step that raised."""
    from openenvgen.verdicts import record_verdicts

    if isinstance(action_schema, dict):
        _write(folder, VERDICTS_FILE, record_verdicts(url, action_schema, log=log))


def _ws_send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=REQUEST_TIMEOUT_S))


def measure_seed(url: str, plan: Plan) -> dict[str, Any]:
    """Whether the env honours `seed` (see seeding.py): five sessions of the episode."""
    from websockets.sync.client import connect

    from openenvgen import seeding

    ws_url = "ws" + url.removeprefix("http") + "/ws"
    seed = plan.reset.get("seed", 0)
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
    other = seed + 1
    traces = []
    try:
        for s in (seed, seed, seed, other, other + 1):
            with connect(ws_url, max_size=None, open_timeout=30) as ws:
                traces.append(seeding.session_trace(ws, _ws_send, {**plan.reset, "seed": s}, plan.actions))
                with contextlib.suppress(Exception):
                    ws.send(json.dumps({"type": "close"}))
    except Exception as e:  # a session that breaks off cannot be compared
        from websockets.exceptions import ConnectionClosed

        why = "the server closed it" if isinstance(e, ConnectionClosed) else f"{type(e).__name__}: {str(e)[:200]}"
        return {"verdict": "unmeasured", "evidence": {"reason": f"session {len(traces) + 1} broke off ({why})"}}
    return seeding.verdict(traces[0], traces[1:3], traces[3:], seed=seed, other_seed=other)


def _record_session(url: str, folder: Path, plan: Plan, *, mcp: bool) -> str:
    """Record the WS session; returns why it stopped at the reset ("" if it did not)."""
    from websockets.sync.client import connect

    ws_url = "ws" + url.removeprefix("http") + "/ws"
    send = _ws_send

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


def capture_env(
    env: EnvFolder, out: Path, *, commit: str, timeout: float, logs: Path, catalog_toml: Path = CATALOG_TOML,
    interpreters: dict[str, str] | None = None,
) -> list[str]:
    """Start, record and stop one env into `out/<env dir>`; raises CaptureFailed."""
    folder = out / env.name
    scratch = Path(tempfile.mkdtemp(prefix=f"capture-{env.name}-"))
    try:
        settings = RunSettings.from_entry(catalog_entry(env.name, catalog_toml))
        python = resolve_python(settings.python, interpreters or {})
        project = override_project(env, settings.overrides, scratch / "wrapper") if settings.overrides else None
        uv_run = uv_run_prefix(env, settings, python=python, project=project)
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
        log = logs / f"{env.name}.log"
        with running(env, env_vars, log, timeout, cwd=cwd, uv_run=uv_run) as url:
            notes = record(url, folder, lambda mcp: plan_for(env, mcp=mcp, catalog_toml=catalog_toml), log=log)
        shown_vars = {k: ("<stand-in data>" if v.startswith(str(scratch)) else v) for k, v in env_vars.items()}
        shown_project = f"envs/{env.name}" if project is None else f"<a wrapper project: envs/{env.name} with override-dependencies {list(settings.overrides)}>"
        shown_run = ["uv", "run", "--isolated", *(["--python", settings.python] if settings.python else []),
                     *(arg for r in settings.with_ for arg in ("--with", r)), "--project", shown_project, "--"]
        _write(folder, "source.json", {
            "repo": UPSTREAM_REPO,
            "commit": commit,
            "env_dir": f"envs/{env.name}",
            "command": [*shown_run, "uvicorn", env.app, "--host", "127.0.0.1", "--port", "PORT", "--workers", "1"],
            "app": env.app,
            "run_settings": settings.options(),
            "versions": installed_versions(env, uv_run, cwd=scratch),
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
    interpreters: dict[str, str] | None = None,
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
            capture_env(env, out, commit=sha, timeout=timeout, logs=logs, catalog_toml=catalog_toml, interpreters=interpreters)
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

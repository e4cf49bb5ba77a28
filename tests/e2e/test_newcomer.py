"""A newcomer's first hour, as README.md and the docs write it, each in a fresh clone.

A copy of the repository, as a clone has it, with the network cut to everything but the
package registries: the proxy variables send every other connection of pip, git, httpx and
the Hugging Face hub (also set offline) to a closed loopback port. Installs from PyPI are
slow (minutes on a cold pip cache), hence the `rollout` mark.

* After `make demo`, offline, nothing past loopback: `openenv-gen replay` serves recorded
  catalog envs, and `list`, `play` (typed at in a terminal), `doctor --html`, the typed
  client's `connect()` and `vf-eval` run against them exactly as the docs write them, only
  their URL being the port the replay took.
* In a clone of its own, README.md's "By hand" block, read from the README (so changing the
  README changes what this runs) and run with bash as written: create the venv, install
  openenv-gen and the runtime, generate ./wordle-openenv, install it, and `vf-eval` it. The
  only change is on its `vf-eval` line: MODEL becomes the scripted model, and options point
  vf-eval at it and at a Wordle server on loopback (the README's command would launch the env
  from its Hugging Face Space).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.paths import ROOT
from openenvgen_testsupport.rollout import EvalRun
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import replay_server, serve_app
from openenvgen_testsupport.terminal import Terminal, needs_tmux

README = ROOT / "README.md"
FIRST_BLOCK = re.compile(r"^```(?:bash|sh|console)?\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_BLOCK = re.compile(r"^```(?P<language>\w*)\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)
JOURNEY = "\n### By hand\n"


def readme_first_block() -> list[str]:
    """The commands of the first code block under README.md's "By hand" heading, one per
    line, comments kept."""
    text = README.read_text("utf-8")
    assert JOURNEY in text, "README.md has no 'By hand' section"
    match = FIRST_BLOCK.search(text, text.index(JOURNEY))
    assert match, "README.md's 'By hand' section has no code block"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_the_readme_opens_with_the_two_commands() -> None:
    """A newcomer's first two commands: the main job on its embedded default, and the tests."""
    match = FIRST_BLOCK.search(README.read_text("utf-8"))
    assert match
    assert [line.split("#")[0].strip() for line in match.group(1).splitlines() if line.strip()] == [
        "make demo",
        "make test",
    ]


def test_the_first_block_is_the_whole_journey() -> None:
    """Generate → install (the runtime too: it is not on PyPI) → vf-eval, nothing else needed."""
    commands = [shlex.split(line, comments=True) for line in readme_first_block()]
    words = [" ".join(c) for c in commands]
    assert words[0].startswith("python3 -m venv .venv")
    installs = [c for c in commands if c[:2] == ["pip", "install"]]
    assert any("./runtime" in c for c in installs), "the README must install openenvgen-runtime"
    # Not on PyPI either, and the runtime and the generator depend on them.
    assert any({"./schemas", "./servers"} <= set(c) for c in installs), "the README must install the shared code"
    assert any("uv" in c for c in installs), "the README must install uv (OpenEnv's UV provider needs it)"
    assert ["openenv-gen", "wordle"] in commands
    assert any("./wordle-openenv" in c for c in installs)
    assert commands[-1][:2] == ["vf-eval", "wordle-openenv"]


@pytest.mark.parametrize("name", ["wordle", "echo"])
def test_every_generated_readme_says_how_to_install_the_runtime(name: str) -> None:
    from openenvgen import catalog
    from openenvgen.generation.render import render_package
    from openenvgen.spec import build_spec

    entry = catalog.lookup(name)
    spec = build_spec(entry.interface(), name=entry.name, env_id=entry.env_id, defaults=entry.defaults)
    readme = render_package(spec)["README.md"]
    ours = "path/to/openenv-gen/schemas path/to/openenv-gen/servers"  # the runtime's dependencies, not on PyPI
    install = readme.index(f"pip install {ours} path/to/openenv-gen/runtime\n")
    assert "not on PyPI yet" in readme[:install]
    assert readme.index(f"pip install ./{spec.package}\n") > install  # the runtime first
    assert f"openenv-gen publish {ours} \\\n    path/to/openenv-gen/runtime ./{spec.package}" in readme
    assert readme.index(f"vf-eval {spec.package} -m MODEL --no-push\n") > install


def _clone(destination: Path) -> Path:
    """The repository's files as a clone has them (tracked, plus new files not ignored)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (destination / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / rel)
    return destination


def _with_scripted_model(words: list[str], *, model_url: str, out: Path) -> list[str]:
    """A documented `vf-eval ... -m MODEL ...` pointed at the scripted model, its output in `out`."""
    assert "MODEL" in words, words
    words = ["scripted-model" if w == "MODEL" else w for w in words]
    return [
        *words,
        "--client.base-url",
        f"{model_url}/v1",
        "--client.api-key-var",
        "SCRIPTED_API_KEY",
        "--output-dir",
        str(out),
        "--no-rich",
    ]


def _with_loopback_servers(line: str, *, model_url: str, env_url: str, out: Path) -> str:
    """The README's `vf-eval ... -m MODEL --no-push` pointed at the scripted model and a local env."""
    words = _with_scripted_model(shlex.split(line, comments=True), model_url=model_url, out=out)
    words += ["--env.taskset.base-url", env_url, "--env.taskset.resets", json.dumps([{"secret": "crane"}])]
    return shlex.join(words)


@dataclass(frozen=True)
class Clone:
    """A fresh clone (in which `make demo` may have run), and how to run commands there."""

    clone: Path
    env: dict[str, str]
    """The machine's environment without this test's venv (its tools, not ours), the network
    cut to the package registries."""

    def activated(self, **cut: str) -> dict[str, str]:
        """`env` as `. .venv/bin/activate` leaves it, with `cut` over it."""
        venv = self.clone / ".venv"
        path = os.pathsep.join([str(venv / "bin"), self.env["PATH"]])
        return {**self.env, "VIRTUAL_ENV": str(venv), "PATH": path, **cut}


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A loopback port bound and never listened on: every connection to it is refused."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield closed.getsockname()[1]


def _cut_network(closed_port: int, *, reachable: Iterable[str] = ()) -> dict[str, str]:
    """Every proxy-honouring client (pip, httpx, huggingface_hub, websockets) sent to a closed
    port but for loopback and `reachable`; Hugging Face's hub offline as well."""
    proxy = f"http://127.0.0.1:{closed_port}"
    bypass = ",".join(["127.0.0.1", "localhost", *reachable])
    return {
        **{
            name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
        },
        "NO_PROXY": bypass,
        "no_proxy": bypass,
        "HF_HUB_OFFLINE": "1",
    }


def _registry_hosts() -> set[str]:
    """The hosts pip installs from here: PyPI's, and those of the indexes and find-links pip's
    configuration names (a CI runner's mirror)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    urls = " ".join(re.findall(r"(?:index-url|find-links)='([^']*)'", listed)).split()
    return {"pypi.org", "files.pythonhosted.org"} | {host for url in urls if (host := urlsplit(url).hostname)}


def _newcomer(workdir: Path, closed_port: int) -> Clone:
    """A fresh clone in `workdir` and a newcomer's environment for it: the machine's tools
    without this test's venv (everything else, uv too, must come from the commands run), the
    network cut to the package registries."""
    clone = _clone(workdir / "openenv-gen")
    ours = Path(sys.prefix).resolve()
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not Path(d).resolve().is_relative_to(ours)]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX"}
    }
    env.update(PATH=os.pathsep.join(path), NO_COLOR="1", **_cut_network(closed_port, reachable=_registry_hosts()))
    return Clone(clone, env)


@pytest.fixture(scope="module")
def demo(closed_port: int) -> Iterator[Clone]:
    """A fresh clone where `make demo` ran with nothing but the registries reachable."""
    # A directory of its own, not pytest's tmp_path: another pytest session on the machine
    # may prune old numbered tmp_path directories during this long module.
    with tempfile.TemporaryDirectory(prefix="openenvgen-newcomer-") as workdir:
        newcomer = _newcomer(Path(workdir), closed_port)
        made = subprocess.run(
            ["make", "demo"], cwd=newcomer.clone, env=newcomer.env, capture_output=True, text=True, timeout=1500
        )
        assert made.returncode == 0, (made.stdout + made.stderr)[-6000:]
        assert "ready: . .venv/bin/activate && vf-eval wordle-openenv -m MODEL --no-push" in made.stdout
        yield newcomer


# ---------------------------------------------------------------------------
# Offline: the replayed catalog envs, each command as the docs write it
# ---------------------------------------------------------------------------

EXPLORING = ROOT / "docs" / "guides" / "exploring.md"
DOCTOR = ROOT / "docs" / "guides" / "doctor.md"
DOCS_URL = "http://127.0.0.1:8001"
"""The replay's URL as the docs write it (`openenv-gen replay`'s default port)."""


def _documented(page: Path, start: str) -> str:
    """The one line of `page`'s code blocks that starts with `start` (a `$ ` prompt aside)."""
    blocks = CODE_BLOCK.finditer(page.read_text("utf-8"))
    lines = [line.removeprefix("$ ") for block in blocks for line in block["code"].splitlines()]
    found = [line for line in lines if line.startswith(start)]
    assert len(found) == 1, f"{page.name}: {found or 'no'} code line starting {start!r}"
    return found[0]


def _at(line: str, url: str, *, written: str = DOCS_URL) -> list[str]:
    """A documented command line's words, the URL it is `written` with made `url`."""
    assert written in line, line
    return shlex.split(line.replace(written, url), comments=True)


@contextmanager
def _replaying(demo: Clone, page: Path, name: str, env: dict[str, str]) -> Iterator[str]:
    """`page`'s `openenv-gen replay NAME &`, on a free port (`--port 0`); its URL."""
    command = shlex.split(_documented(page, f"openenv-gen replay {name} &"), comments=True)
    assert command[-1] == "&", command
    log = demo.clone.parent / f"replay-{name}.log"
    with replay_server([*command[:-1], "--port", "0"], log, cwd=demo.clone, env=env) as url:
        yield url


@pytest.mark.rollout
@pytest.mark.timeout(1800)
@needs_tmux
def test_the_first_hour_runs_offline_on_replayed_envs(demo: Clone, closed_port: int) -> None:
    offline = demo.activated(**_cut_network(closed_port))
    work = demo.clone.parent

    def run(command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=demo.clone, env=offline, capture_output=True, text=True, timeout=600)

    # The cut holds: the env's own server, its Hugging Face Space, is out of reach.
    launched = run(["openenv-gen", "play", "wordle", "--script", os.devnull])
    assert launched.returncode == 69, launched.stderr
    assert "could not clone https://huggingface.co/spaces/openenv/wordle" in launched.stderr, launched.stderr

    # `list` says which envs play offline: the two the docs replay do.
    listed = run(["openenv-gen", "list"])
    assert listed.returncode == 0, listed.stderr
    episode = {row.split()[0]: row.split()[4] for row in listed.stdout.splitlines()[1:] if not row.startswith("#")}
    assert (episode["wordle"], episode["connect4"]) == ("replay", "replay"), listed.stdout

    with (
        _replaying(demo, EXPLORING, "wordle", offline) as wordle,
        _replaying(demo, DOCTOR, "connect4", offline) as connect4,
    ):
        # play, typed at in a terminal: each recorded guess gets the recorded feedback.
        played = shlex.join(_at(_documented(EXPLORING, "openenv-gen play wordle --base-url"), wordle))
        with Terminal(played, env=offline, cwd=demo.clone) as terminal:
            assert "── turn 1 · user ──" in terminal.wait_for_prompt()
            terminal.type("[crane]")
            answered = terminal.wait_for("── turn 2 · user · reward 0 ──")
            assert "You submitted [crane]" in answered, answered
            terminal.wait_for_prompt()
            terminal.type("[slate]")
            assert "── done · reward 0" in terminal.wait_for("total reward 0")
            assert terminal.exit_status() == 0, terminal.screen()

        # doctor on the checked-in Connect Four package, with its HTML page.
        doctored = run(_at(_documented(DOCTOR, "openenv-gen doctor generated/connect4-openenv --base-url"), connect4))
        assert doctored.returncode == 0, doctored.stdout + doctored.stderr
        assert "doctor: 0 failed" in doctored.stdout, doctored.stdout
        assert (demo.clone / "doctor.html").read_text("utf-8").startswith("<!DOCTYPE html>")

        # The typed client's example, as the page prints it: a reset and a step.
        example = next(
            b["code"] for b in CODE_BLOCK.finditer(EXPLORING.read_text("utf-8")) if b["language"] == "python"
        )
        assert "from wordle_openenv import connect" in example, example
        script = work / "connect_example.py"
        script.write_text(example.replace(DOCS_URL, wordle))
        connected = run(["python", str(script)])
        assert connected.returncode == 0, connected.stderr
        assert connected.stdout.split()[-2:] == ["0.0", "False"], connected.stdout

        # vf-eval on a running server, as README.md writes it; the model plays the recorded guesses.
        model = ScriptedChatModel(Script(["[crane]", "[slate]"]))
        with serve_app(model) as model_url:
            line = _documented(README, "vf-eval wordle-openenv -m MODEL --no-push --env.taskset.base-url")
            words = _at(line, wordle, written="http://127.0.0.1:8000")
            evaluated = run(_with_scripted_model(words, model_url=str(model_url), out=work / "offline-outputs"))
        log = (evaluated.stdout + evaluated.stderr)[-6000:]
        assert evaluated.returncode == 0, log
        ended = EvalRun(evaluated.returncode, evaluated.stdout, evaluated.stderr, []).printed
        assert ended and all(stop == "env_done" for _, stop in ended), log
        assert model.requests, "the scripted model was never asked"


# ---------------------------------------------------------------------------
# README.md's "By hand" block
# ---------------------------------------------------------------------------


@pytest.mark.rollout
@pytest.mark.timeout(1800)
def test_readme_commands_work_in_a_fresh_clone(closed_port: int) -> None:
    """The block in a clone of its own (not `make demo`'s: it makes its own venv), as written."""
    with tempfile.TemporaryDirectory(prefix="openenvgen-readme-") as workdir:
        _follow_the_readme(_newcomer(Path(workdir), closed_port))


def _follow_the_readme(newcomer: Clone) -> None:
    lines = readme_first_block()
    env = {**newcomer.env, "SCRIPTED_API_KEY": "scripted"}
    clone, workdir = newcomer.clone, newcomer.clone.parent
    model = ScriptedChatModel(Script(["[crane]"]))
    with serve_app(make_wordle_app(), ready_path="/health") as env_url, serve_app(model) as model_url:
        script = "\n".join(
            _with_loopback_servers(line, model_url=str(model_url), env_url=str(env_url), out=workdir / "outputs")
            if line.startswith("vf-eval ")
            else line
            for line in lines
        )
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=1700,
        )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]

    venv = clone / ".venv"
    # Everything ran from the fresh venv: its own openenv-gen, runtime, package, uv and vf-eval.
    assert all((venv / "bin" / tool).is_file() for tool in ("openenv-gen", "vf-eval", "uv"))
    assert (clone / "wordle-openenv" / "openenv-gen.lock").is_file()
    next_steps = "next: install it, then evaluate a model on it:\n  pip install -c constraints.txt ./wordle-openenv\n"
    assert next_steps in run.stdout
    installed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('openenvgen-runtime'), m.version('wordle-openenv'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert installed == ["0.1.0", "0.1.0"]
    # vf-eval found the package and played one episode: the scripted model guessed the word.
    assert re.search(r"rollout done: .*?reward=1\.0", output), output[-6000:]
    assert model.requests, "the scripted model was never asked"

    # Without the runtime installed (and openenv-gen not run from a checkout), the install
    # hint says where the runtime comes from instead of a command pip cannot resolve.
    subprocess.run([str(venv / "bin" / "pip"), "uninstall", "-q", "-y", "openenvgen-runtime"], check=True, env=env)
    hint = subprocess.run(
        [str(venv / "bin" / "openenv-gen"), "echo", "--no-scaffold"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert hint.returncode == 0, hint.stderr
    assert hint.stdout.splitlines()[-3:] == [
        "  pip install ./echo-openenv",
        "  vf-eval echo-openenv -m MODEL --no-push",
        "  (openenvgen-runtime is not on PyPI yet: install it first from an openenv-gen checkout, "
        "`pip install ./schemas ./servers ./runtime`, or from an index made with "
        "`openenv-gen publish schemas servers runtime`)",
    ]

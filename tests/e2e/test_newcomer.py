"""A newcomer's journey, exactly as README.md's "By hand" block writes it, in a fresh venv.

The block is read from the README (so changing the README changes what this runs) and run
with bash in a copy of the repository, as a clone would be: create a venv, install
openenv-gen and the runtime, generate ./wordle-openenv, install it, and `vf-eval` it. The
only change to the block is on its `vf-eval` line: MODEL becomes the scripted model, and
options point vf-eval at it and at a Wordle server on loopback (the README's command would
launch the env from its Hugging Face Space, which needs the internet). One fresh venv,
installed from PyPI (slow: minutes on a cold pip cache), hence its `rollout` mark.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from openenvgen_testsupport.fixture_envs import make_wordle_app
from openenvgen_testsupport.paths import ROOT
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

README = ROOT / "README.md"
FIRST_BLOCK = re.compile(r"^```(?:bash|sh|console)?\n(.*?)^```", re.MULTILINE | re.DOTALL)
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


def _with_loopback_servers(line: str, *, model_url: str, env_url: str, out: Path) -> str:
    """The README's `vf-eval ... -m MODEL --no-push` pointed at the scripted model and a local env."""
    words = shlex.split(line, comments=True)
    assert "MODEL" in words, line
    words = ["scripted-model" if w == "MODEL" else w for w in words]
    words += [
        "--client.base-url",
        f"{model_url}/v1",
        "--client.api-key-var",
        "SCRIPTED_API_KEY",
        "--env.taskset.base-url",
        env_url,
        "--env.taskset.resets",
        json.dumps([{"secret": "crane"}]),
        "--output-dir",
        str(out),
        "--no-rich",
    ]
    return shlex.join(words)


@pytest.mark.rollout
@pytest.mark.timeout(1800)
def test_readme_commands_work_in_a_fresh_venv() -> None:
    # A directory of its own, not pytest's tmp_path: another pytest session on the machine
    # may prune old numbered tmp_path directories during this long test.
    with tempfile.TemporaryDirectory(prefix="openenvgen-newcomer-") as workdir:
        _follow_the_readme(Path(workdir))


def _follow_the_readme(workdir: Path) -> None:
    clone = _clone(workdir / "openenv-gen")
    lines = readme_first_block()
    # The machine's tools without this test's venv: everything else (uv too) must come from
    # the README's commands.
    ours = Path(sys.prefix).resolve()
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not Path(d).resolve().is_relative_to(ours)]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX"}
    }
    env.update(PATH=os.pathsep.join(path), SCRIPTED_API_KEY="scripted", NO_COLOR="1")

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

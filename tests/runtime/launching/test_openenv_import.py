"""Nothing of OpenEnv is imported with the runtime; its client is imported without its server's
Gradio web UI (seconds of every eval process's start-up), and a server made later in the same
process still gets its UI."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from openenvgen_runtime.launching.openenv_import import WEB_UI_MODULE
from openenvgen_testsupport.rollout import run_eval
from openenvgen_testsupport.scripted_model import Script, ScriptedChatModel
from openenvgen_testsupport.servers import serve_app

UP_FRONT = """
import sys
import openenvgen_runtime, openenvgen_runtime.launching.launch, openenvgen_runtime.fleet.pool
assert not [m for m in sys.modules if m.split(".")[0] == "openenv"], "importing the runtime imported OpenEnv"
print("ok")
"""

SCRIPT = """
import sys
from openenvgen_runtime.fleet.pool import CLIENT_MODULE
from openenvgen_runtime.launching.openenv_import import openenv_module

assert openenv_module(CLIENT_MODULE).GenericEnvClient.__name__ == "GenericEnvClient"
from openenvgen_runtime.launching import uv_provider
assert issubclass(uv_provider.UVServer, openenv_module("openenv.core.containers.runtime").UVProvider)
assert "gradio" not in sys.modules, "the client import pulled in Gradio"
from openenv.core.env_server.web_interface import create_web_interface_app
assert "gradio" in sys.modules and callable(create_web_interface_app)
print("ok")
"""


WEB_UI_OPTIONAL = f"""
import sys
sys.modules[{WEB_UI_MODULE!r}] = None
import openenv.core.env_server as env_server
assert env_server.create_web_interface_app is None, "env_server imported its web UI anyway"
assert "gradio" not in sys.modules, "env_server imported Gradio without its web UI module"
print("ok")
"""


def test_the_web_ui_module_exists_and_is_optional() -> None:
    """`WEB_UI_MODULE`: the module that pulls in Gradio, which `env_server` imports only if it can;
    an OpenEnv upgrade that moves it or makes it required fails here, naming the version."""
    changed = f"openenv {version('openenv')} changed {WEB_UI_MODULE}, which openenv_import skips"
    spec_script = f"import importlib.util; print(importlib.util.find_spec({WEB_UI_MODULE!r}) is not None)"
    found = subprocess.run([sys.executable, "-c", spec_script], capture_output=True, text=True, timeout=300)
    assert found.stdout.strip() == "True", f"{changed}: no such module ({found.stderr.strip()[-500:]})"
    proc = subprocess.run([sys.executable, "-c", WEB_UI_OPTIONAL], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", f"{changed}: it is no longer optional: {proc.stderr.strip()[-1000:]}"


def test_the_runtime_imports_nothing_of_openenv_up_front() -> None:
    proc = subprocess.run([sys.executable, "-c", UP_FRONT], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_client_skips_the_web_ui_and_a_later_server_still_gets_it() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.rollout
def test_a_vf_eval_episode_never_imports_gradio(
    wordle_pkg: str, wordle_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole vf-eval run of a generated package, with Python's import log on."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # vf-eval imports the package
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    with serve_app(ScriptedChatModel(Script(["[slate]", "[crane]"]))) as model_url:
        run = run_eval(wordle_pkg, model_url=str(model_url), out_dir=tmp_path, taskset={"base_url": wordle_server})
    assert run.returncode == 0 and run.printed == [(1.0, "env_done")], run.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "openenv.core.env_client" in imported  # the WebSocket client was imported
    assert "gradio" not in imported

"""The model generator forked as `openenv-gen` starts (`codegen_worker`): it changes nothing
that is written, says what went wrong as the in-process path says it, is replaced by the
in-process path when it is gone, and no process of it outlives the command."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from openenvgen_testsupport.generating import file_tree
from openenvgen_testsupport.paths import OPENENV_GEN

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker is forked: this platform has no fork")


def _run_in_session(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `argv` as the leader of a new session; its result and the processes of that
    session still alive once it has exited (a worker left behind would be one of them)."""
    pipe, environ = subprocess.PIPE, {**os.environ, **env}
    proc = subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True, env=environ, start_new_session=True)
    out, err = proc.communicate(timeout=120)
    time.sleep(0.2)  # a process killed as the command ended is gone by now
    ps = subprocess.run(["ps", "-eo", "pid=,sid=,stat=,args="], capture_output=True, text=True, check=True).stdout
    left = [line for line in ps.splitlines() if line.split()[1] == str(proc.pid) and "Z" not in line.split()[2]]
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), left


def test_a_generation_through_the_worker_writes_what_one_without_it_writes(tmp_path: Path) -> None:
    cold = {"OPENENV_GEN_CACHE": "off"}
    worked, left = _run_in_session([OPENENV_GEN, "wordle", "--out", str(tmp_path / "w")], cold)
    assert worked.returncode == 0 and left == [], (worked.stderr, left)
    serial = {**cold, "OPENENV_GEN_WORKER": "0"}
    alone, _ = _run_in_session([OPENENV_GEN, "wordle", "--out", str(tmp_path / "s")], serial)
    assert alone.returncode == 0, alone.stderr
    assert file_tree(tmp_path / "w") == file_tree(tmp_path / "s")


@pytest.mark.parametrize(
    "args",
    [
        ["wordle", "--help"],  # typed as a generation, generates nothing
        ["no-such-env-anywhere"],  # an error before any model is generated
        ["wordle", "--out", "{tmp}/hit"],  # the model cache answers: the worker is not needed
    ],
    ids=["help", "error", "cache-hit"],
)
def test_a_worker_no_generation_took_is_ended_with_the_command(tmp_path: Path, args: list[str]) -> None:
    cache = {"OPENENV_GEN_CACHE": str(tmp_path / "cache")}
    warmed, _ = _run_in_session([OPENENV_GEN, "wordle", "--out", str(tmp_path / "warm"), "--no-scaffold"], cache)
    assert warmed.returncode == 0, warmed.stderr
    result, left = _run_in_session([OPENENV_GEN, *(a.format(tmp=tmp_path) for a in args)], cache)
    assert left == [], left
    assert result.returncode in (0, 64), result.stderr


_SCRIPT_PREFIX = """
import json, os, signal, sys
from openenvgen.errors import GenError
from openenvgen.generation import codegen, codegen_worker
from openenvgen.generation.package import resolve_spec
"""


def _script(body: str) -> subprocess.CompletedProcess[str]:
    source = _SCRIPT_PREFIX + textwrap.dedent(body)
    env = {**os.environ, "OPENENV_GEN_CACHE": "off"}
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env, timeout=120)


def test_the_workers_error_is_the_in_process_error() -> None:
    result = _script(
        """
        root = {"type": "object", "properties": {"a": {"$ref": "no-such-schema-file.json"}}}
        def message(run):
            try:
                run()
            except GenError as e:
                return type(e).__name__ + ": " + str(e)
            return "no error"
        here = message(lambda: codegen._codegen(root, codegen.HEADER, ()))
        codegen_worker.start()
        worker = codegen_worker.take()
        worker.submit(codegen._codegen, root, codegen.HEADER, ())
        there = message(worker.result)
        print(json.dumps([here, there]))
        """
    )
    assert result.returncode == 0, result.stderr
    here, there = __import__("json").loads(result.stdout)
    assert here.startswith("SchemaError: cannot generate models from the schemas")
    assert there == here


def test_a_worker_that_died_is_replaced_by_the_in_process_generation() -> None:
    result = _script(
        """
        spec = resolve_spec("wordle")
        expected = codegen.generate_models(spec).source
        codegen_worker.start()
        pid = codegen_worker._worker.pid
        os.kill(pid, signal.SIGKILL)
        assert codegen.generate_models(spec).source == expected
        assert codegen_worker.take() is None  # the one worker was taken, and reaped
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            print("no child left")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "no child left"

"""Model generation started before it is asked for: a process forked as `openenv-gen` starts,
importing datamodel-code-generator while this one reads its command line and the env's spec.

Most of a cold `openenv-gen NAME` is two imports that do not depend on each other: the
command tree's (typer, the CLI) and datamodel-code-generator's. On a machine with a second
core the worker pays the second while the main process pays the first, then generates the
models (`codegen._generate`: datamodel-code-generator, then ruff) while the main process
renders the package's templates. What both need is imported before the fork, so it is paid
once: `codegen` (the main process names the models with it, the worker generates them) and
with it pydantic, which the spec's models and datamodel-code-generator are both built on.

The worker is a plain `fork()` taken before any thread exists, talking over two pipes: one
job (a function, by reference, and its arguments, pickled: for a generation,
`codegen.generate_in_process` and the combined schema and class names), one answer (the
function's value, or its exception). It never writes to the terminal. It ends after it answered; one that no
generation took (another command, a model from the cache, an error) is killed when the
command ends, and one whose main process died ends at its job pipe's EOF. Where `fork` is
missing, or `OPENENV_GEN_WORKER=0`, nothing is forked and the models are generated
in-process, as they are for every generation after the first in a process.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

WARM_UP = "openenvgen.generation.codegen:warm_up"
"""What the worker runs before it reads its job (by name: this module imports no generator;
`start` imports its module before it forks)."""

_worker: Worker | None = None


class Worker:
    """The parent's handle on the forked generator: `submit` once, then `result`."""

    def __init__(self, pid: int, jobs: int, answers: int) -> None:
        self.pid = pid
        self._jobs: int | None = jobs
        self._answers = answers

    def submit(self, function: Callable[..., Any], *args: Any) -> None:
        """Send the one job, `function(*args)` (a module-level function): the worker runs it
        as soon as its imports are done."""
        assert self._jobs is not None
        jobs_fd, self._jobs = self._jobs, None
        try:
            with os.fdopen(jobs_fd, "wb") as jobs:
                pickle.dump((function, args), jobs)
        except BrokenPipeError:  # the worker is gone: `result` answers None, the caller does the job
            pass

    def result(self) -> Any:
        """The job's value, its exception raised here, or None when the worker ended without
        answering (the caller then does the job itself)."""
        with os.fdopen(self._answers, "rb") as answers:
            data = answers.read()
        os.waitpid(self.pid, 0)
        if not data:
            return None
        ok, value = pickle.loads(data)
        if ok:
            return value
        raise value

    def close(self) -> None:
        """End an unused worker at once (it may still be importing) and reap it."""
        if self._jobs is not None:
            os.close(self._jobs)
            self._jobs = None
            os.close(self._answers)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


def start() -> None:
    """Fork the worker, once per process, where fork is available and not switched off."""
    global _worker
    if _worker is not None or not hasattr(os, "fork") or os.environ.get("OPENENV_GEN_WORKER") == "0":
        return
    module, _, name = WARM_UP.partition(":")
    warm_up = getattr(importlib.import_module(module), name)  # before the fork: both processes need it
    jobs_read, jobs_write = os.pipe()
    answers_read, answers_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        os.close(jobs_write)
        os.close(answers_read)
        code = 0
        try:
            _serve(jobs_read, answers_write, warm_up)
        except BaseException:  # noqa: BLE001 - the parent sees no answer and generates in-process
            code = 1
        os._exit(code)
    os.close(jobs_read)
    os.close(answers_write)
    _worker = Worker(pid, jobs_write, answers_read)


def take() -> Worker | None:
    """The started worker, for the one generation that uses it (None: generate in-process)."""
    global _worker
    worker, _worker = _worker, None
    return worker


def stop() -> None:
    """End a worker that no generation took."""
    worker = take()
    if worker is not None:
        worker.close()


def _serve(jobs_fd: int, answers_fd: int, warm_up: Callable[[], None]) -> None:
    # Quiet: the parent owns the terminal, and says what went wrong.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # What the worker exists to pay early: datamodel-code-generator's imports, most of which
    # it makes lazily, on its first generation (a small one, thrown away).
    warm_up()

    with os.fdopen(jobs_fd, "rb") as jobs:
        data = jobs.read()
    if not data:
        return  # no job: the command generated nothing
    function, args = pickle.loads(data)
    try:
        answer: tuple[bool, Any] = (True, function(*args))
    except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
        answer = (False, e)
    try:
        payload = pickle.dumps(answer)
    except Exception:  # noqa: BLE001 - an exception that does not pickle
        payload = pickle.dumps((False, RuntimeError(str(answer[1]))))
    with os.fdopen(answers_fd, "wb") as answers:
        answers.write(payload)
    sys.stdout.flush()

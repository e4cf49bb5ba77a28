"""Build, check and upload distributions: `build` and `twine`, each run as a subprocess.

`build` and `twine` run as subprocesses of this interpreter (`python -m build`,
`python -m twine`); the generator never imports build, and imports twine only to read a
`~/.pypirc` section (`index`). twine alone finds the credentials (TWINE_USERNAME/
TWINE_PASSWORD, `~/.pypirc` with `--repository`, keyring, or trusted publishing on CI).
Credentials are never printed: only twine's error record is relayed, with URL user-info and
the TWINE_PASSWORD value masked.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from openenvgen.errors import CredentialsError, GenerationError, PublishError
from openenvgen.lifecycle.index import Target, mask_secrets

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BUILD_TIMEOUT = 900
UPLOAD_TIMEOUT = 900
# What `publish` runs or imports, by import name → distribution name (the `publish` extra).
_TOOLS = {"build": "build", "twine": "twine", "pypi_simple": "pypi-simple"}


def require_tools() -> None:
    """Refuse to start when the `publish` extra is not installed next to openenv-gen."""
    missing = [dist for module, dist in _TOOLS.items() if importlib.util.find_spec(module) is None]
    if missing:
        named = " and ".join(missing) if len(missing) < 3 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        raise PublishError(f"publish needs {named} next to openenv-gen: pip install 'openenvgen[publish]'")


def _run(
    cmd: list[str], *, timeout: int, what: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise PublishError(f"{what} took longer than {timeout} s") from None


def _tool_env() -> dict[str, str]:
    # Plain, unwrapped output: twine's rich console would wrap a file name across lines.
    return {**os.environ, "COLUMNS": "1000", "NO_COLOR": "1", "TERM": "dumb", "PYTHONIOENCODING": "utf-8"}


def _upload_env(target: Target) -> dict[str, str]:
    env = _tool_env()
    if "--repository" in target.twine_args:
        # twine lets $TWINE_REPOSITORY_URL override --repository; the target we listed wins.
        env.pop("TWINE_REPOSITORY_URL", None)
    return env


def _last_error(output: str) -> str:
    """The reason in a tool's output: twine's `ERROR` record (with its continuation lines),
    else the last line of a traceback, else the last non-empty line."""
    lines = [line.rstrip() for line in _ANSI.sub("", output).splitlines()]
    for i, line in enumerate(lines):
        if line.lstrip().startswith("ERROR"):
            block = [line.lstrip().removeprefix("ERROR").strip()]
            block += [nxt.strip() for nxt in lines[i + 1 :] if nxt.startswith(" ") and nxt.strip()]
            return mask_secrets(" ".join(block))
    meaningful = [line.strip() for line in lines if line.strip()]
    for line in reversed(meaningful):
        if re.match(r"^[\w.]+(Error|Exception|Exit)\b", line) or line.startswith("ERROR"):
            return mask_secrets(line)
    return mask_secrets(meaningful[-1]) if meaningful else "no output"


def build_distributions(root: Path, outdir: Path, *, isolation: bool) -> list[Path]:
    """sdist, then a wheel built from that sdist (PEP 517 `build`), into an empty `outdir`."""
    outdir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "build", "--outdir", str(outdir)]
    if not isolation:
        cmd.append("--no-isolation")
    result = _run([*cmd, str(root)], timeout=BUILD_TIMEOUT, what=f"building {root}", env=_tool_env())
    if result.returncode != 0:
        reason = _last_error(result.stdout + result.stderr)
        raise GenerationError(f"building {root} failed: {reason}")
    sdists = sorted(outdir.glob("*.tar.gz"))
    wheels = sorted(outdir.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise GenerationError(f"building {root} made {len(sdists)} sdists and {len(wheels)} wheels, not one each")
    return [sdists[0], wheels[0]]


def twine_check(files: list[Path]) -> None:
    """`twine check --strict` over every built file; GenerationError naming the ones that fail."""
    result = _run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
        timeout=300,
        what="twine check",
        env=_tool_env(),
    )
    if result.returncode != 0:
        output = result.stdout + result.stderr
        failed = [f.name for f in files if re.search(rf"{re.escape(f.name)}\W+(FAILED|PASSED with warnings)", output)]
        raise GenerationError(
            f"twine check failed for {', '.join(failed) or 'the distributions'}: {_last_error(output)}"
        )


def upload(file: Path, target: Target) -> bool:
    """Upload one file; True if the index took it, False if it already had it.

    Not `twine upload --skip-existing`: twine refuses that flag for indexes other than
    PyPI. The index's own answer is read instead: 409, or a 400 whose reason or body says
    the file already exists (PyPI's reason; pypiserver's body, which `--verbose` logs).
    """
    result = _run(
        [
            sys.executable,
            "-m",
            "twine",
            "--no-color",
            "upload",
            "--verbose",
            "--non-interactive",
            "--disable-progress-bar",
            *target.twine_args,
            str(file),
        ],
        timeout=UPLOAD_TIMEOUT,
        what=f"uploading {file.name}",
        env=_upload_env(target),
    )
    if result.returncode == 0:
        return True
    output = html.unescape(_ANSI.sub("", result.stdout + result.stderr))
    reason = _last_error(output)
    status = re.search(r"HTTPError: (\d{3})\b", reason)
    code = status.group(1) if status else None
    if code == "409" or (code == "400" and re.search(r"already exists?\b", output, re.I)):
        return False
    raise _upload_error(file, target, reason)


def _upload_error(file: Path, target: Target, reason: str) -> PublishError:
    where = target.shown
    if re.search(r"NonInteractive|Credential not found|credentials? (are |were )?(not found|missing)", reason, re.I):
        return CredentialsError(
            f"no credentials for {where}: set TWINE_USERNAME and TWINE_PASSWORD, use --repository with a "
            "~/.pypirc entry, or store them in keyring"
        )
    status = re.search(r"HTTPError: (\d{3})", reason)
    if status and status.group(1) in ("401", "403"):
        return CredentialsError(f"{where} refused the credentials for {file.name}: {reason.split(': ', 1)[-1]}")
    if status:
        return PublishError(f"{where} rejected {file.name}: {reason.split(': ', 1)[-1]}")
    unreachable = r"ConnectionError|Max retries|Connection refused|NewConnectionError|Name or service not known"
    if re.search(unreachable, reason):
        return PublishError(f"cannot reach the index at {where}: upload of {file.name} failed")
    return PublishError(f"uploading {file.name} to {where} failed: {reason}")

"""`openenv-gen publish`: check → list → build (PEP 517) → `twine check` → upload what is missing.

Every path is a generated package (it has a lock or `*/snapshot.json`), the runtime
distribution (`runtime/`, which has no snapshot: its files are sanity-checked and its version
must sit inside the range generated packages require) or its dependency `schemas/`
(`openenvgen-schemas`). In order, each step for every
package before the next step starts: all packages are checked (a stale one is refused, as
`check` would report it); the index is asked which files it already has (its simple API,
PEP 691 JSON or PEP 503 HTML), so an unreachable index fails before anything is built; all
are built (sdist, then the wheel from it) and pass `twine check --strict`; then each missing
file is uploaded on its own with `twine upload`. A file that appeared meanwhile (the index
answers 409, or 400 "already exists") is reported as skipped, so a partially published
version gets only its missing files and re-running is safe.

`build` and `twine` run as subprocesses of this interpreter (`python -m build`,
`python -m twine`); the generator never imports build, and imports twine only lazily, to
read the upload URL of a `--repository` section exactly as twine will. twine alone finds
the credentials (TWINE_USERNAME/TWINE_PASSWORD, `~/.pypirc` with `--repository`, keyring,
or trusted publishing on CI). Credentials are never printed: only twine's error record is
relayed, with URL user-info and the TWINE_PASSWORD value masked, and the index listing
sends credentials only when the index demands them.

A line saying `uploaded` is printed only after twine exited 0 for that file.
"""

from __future__ import annotations

import html
import html.parser
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from openenvgen.errors import BuildError, CredentialsError, PublishError, StaleError, UsageError

RUNTIME_DISTRIBUTION = "openenvgen-runtime"
SCHEMAS_DISTRIBUTION = "openenvgen-schemas"
"""The runtime's (and the generator's) one dependency of ours: schema normalisation and diff."""
PYPI_UPLOAD_URL = "https://upload.pypi.org/legacy/"
TESTPYPI_UPLOAD_URL = "https://test.pypi.org/legacy/"
# Upload endpoints whose simple API does not live under them.
_SIMPLE_FOR_UPLOAD = {
    PYPI_UPLOAD_URL: "https://pypi.org/simple/",
    TESTPYPI_UPLOAD_URL: "https://test.pypi.org/simple/",
}
_SIMPLE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BUILD_TIMEOUT = 900
UPLOAD_TIMEOUT = 900


def normalize(name: str) -> str:
    """PEP 503 project name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- what is published -------------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    version: str
    generated: bool

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def load_project(root: Path) -> Project:
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(f"{root}: no pyproject.toml; publish takes generated package directories, runtime/ or schemas/")
    try:
        data = tomllib.loads(pyproject.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BuildError(f"{pyproject}: not valid TOML ({e})") from None
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    name, version = project.get("name"), project.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise BuildError(f"{pyproject}: [project] has no static name and version")
    from openenvgen.checking import is_package

    generated = is_package(root)
    if not generated and normalize(name) not in (RUNTIME_DISTRIBUTION, SCHEMAS_DISTRIBUTION):
        raise UsageError(
            f"{root}: neither a generated package (no */snapshot.json) nor {RUNTIME_DISTRIBUTION} or {SCHEMAS_DISTRIBUTION}"
        )
    return Project(root=root, name=name, version=version, generated=generated)


def stale_files(root: Path) -> list[str]:
    """`check` for one generated package: what differs from a fresh render of its snapshot.

    The only place publish runs the check, through the same function `check` uses.
    """
    from openenvgen.checking import diff_package

    return [f"{d.path} ({d.kind})" for d in diff_package(root)]


def ensure_publishable(project: Project) -> None:
    """Refuse a stale generated package; sanity-check the runtime (it has no snapshot)."""
    if project.generated:
        stale = stale_files(project.root)
        if stale:
            shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
            raise StaleError(
                f"{project.root} is stale: {shown}; see `openenv-gen check {project.root}` and regenerate it"
            )
        return
    if normalize(project.name) == SCHEMAS_DISTRIBUTION:
        if not (project.root / "openenvgen_schemas" / "__init__.py").is_file() or not (project.root / "README.md").is_file():
            raise BuildError(f"{project.root}: no openenvgen_schemas/__init__.py or README.md; is this schemas/?")
        return
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    from openenvgen.render import RUNTIME_REQUIREMENT

    module = project.root / "openenvgen_runtime" / "__init__.py"
    if not module.is_file() or not (project.root / "README.md").is_file():
        raise BuildError(f"{project.root}: no openenvgen_runtime/__init__.py or README.md; is this runtime/?")
    try:
        version = Version(project.version)
    except InvalidVersion:
        raise BuildError(f"{project.root}: version {project.version!r} is not a valid version") from None
    if not Requirement(RUNTIME_REQUIREMENT).specifier.contains(version, prereleases=True):
        raise BuildError(
            f"{project.root}: {RUNTIME_DISTRIBUTION} {version} is outside the range generated packages "
            f"require ({RUNTIME_REQUIREMENT}); move that range with the version"
        )


# --- where it goes -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """An index: how twine is told to upload there, and where its simple API is."""

    twine_args: tuple[str, ...]
    upload_url: str
    simple_url: str

    @property
    def shown(self) -> str:
        return redact_url(self.upload_url)


def redact_url(url: str) -> str:
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1***@", url)


def _check_url(url: str, option: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} must be an http(s) URL, got {redact_url(url)!r}")
    return url if url.endswith("/") else url + "/"


def simple_url_for(upload_url: str) -> str:
    """The simple API of an upload endpoint: PyPI's and TestPyPI's by name, else `<url>/simple/`
    (pypiserver and most self-hosted indexes), with a trailing `legacy/` dropped."""
    url = upload_url if upload_url.endswith("/") else upload_url + "/"
    if url in _SIMPLE_FOR_UPLOAD:
        return _SIMPLE_FOR_UPLOAD[url]
    url = url.removesuffix("legacy/")
    return url if url.endswith("/simple/") else url + "simple/"


def _pypirc_url(name: str) -> str:
    """The upload URL twine will use for `--repository NAME`, read by twine itself (so a
    section missing from `[distutils] index-servers` fails here exactly as it would there).
    Only the URL is kept; the credentials stay twine's business."""
    from twine import exceptions, utils

    try:
        config = utils.get_repository_from_config(utils.DEFAULT_CONFIG_FILE, name)
    except exceptions.TwineException as e:
        # twine masks anything in the file that could be a secret.
        raise UsageError(f"--repository {name}: {str(e).splitlines()[0]}") from None
    return str(config["repository"])


def resolve_target(repository_url: str | None, repository: str | None, index_url: str | None) -> Target:
    if repository_url and repository:
        raise UsageError("pass --repository-url or --repository, not both")
    if not repository_url and not repository:
        repository_url = os.environ.get("TWINE_REPOSITORY_URL") or None
        repository = None if repository_url else (os.environ.get("TWINE_REPOSITORY") or "pypi")
    if repository_url:
        upload_url = _check_url(repository_url, "--repository-url")
        args: tuple[str, ...] = ("--repository-url", upload_url)
    else:
        assert repository is not None
        upload_url = _check_url(_pypirc_url(repository), f"[{repository}] repository")
        args = ("--repository", repository)
    simple = _check_url(index_url, "--index-url") if index_url else simple_url_for(upload_url)
    return Target(twine_args=args, upload_url=upload_url, simple_url=simple)


# --- subprocesses ------------------------------------------------------------------------


def require_tools() -> None:
    missing = [m for m in ("build", "twine") if importlib.util.find_spec(m) is None]
    if missing:
        raise PublishError(
            f"publish needs {' and '.join(missing)} next to openenv-gen: pip install 'openenvgen[publish]'"
        )


def _mask(text: str) -> str:
    text = redact_url(text)
    password = os.environ.get("TWINE_PASSWORD")
    if password:
        text = text.replace(password, "***")
    return text


def _run(cmd: list[str], *, timeout: int, what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
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
            return _mask(" ".join(block))
    meaningful = [line.strip() for line in lines if line.strip()]
    for line in reversed(meaningful):
        if re.match(r"^[\w.]+(Error|Exception|Exit)\b", line) or line.startswith("ERROR"):
            return _mask(line)
    return _mask(meaningful[-1]) if meaningful else "no output"


def build(project: Project, outdir: Path, *, isolation: bool) -> list[Path]:
    """sdist, then a wheel built from that sdist (PEP 517 `build`), into an empty `outdir`."""
    outdir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "build", "--outdir", str(outdir)]
    if not isolation:
        cmd.append("--no-isolation")
    result = _run([*cmd, str(project.root)], timeout=BUILD_TIMEOUT, what=f"building {project.root}", env=_tool_env())
    if result.returncode != 0:
        reason = _last_error(result.stdout + result.stderr)
        raise BuildError(f"building {project.root} failed: {reason}")
    sdists = sorted(outdir.glob("*.tar.gz"))
    wheels = sorted(outdir.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise BuildError(f"building {project.root} made {len(sdists)} sdists and {len(wheels)} wheels, not one each")
    return [sdists[0], wheels[0]]


def twine_check(files: list[Path]) -> None:
    result = _run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
        timeout=300,
        what="twine check",
        env=_tool_env(),
    )
    if result.returncode != 0:
        output = result.stdout + result.stderr
        failed = [f.name for f in files if re.search(rf"{re.escape(f.name)}\W+(FAILED|PASSED with warnings)", output)]
        raise BuildError(f"twine check failed for {', '.join(failed) or 'the distributions'}: {_last_error(output)}")


# --- the index ---------------------------------------------------------------------------


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.files.add(unquote(urlsplit(href).path.rsplit("/", 1)[-1]))


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.netloc) == (pb.scheme, pb.netloc)


def index_files(target: Target, name: str) -> set[str] | None:
    """File names the index holds for a project (lowercased); None if it will not say (401/403).

    A redirect off the index (pypiserver's fallback to PyPI for a project it lacks) means
    the index itself has none.
    """
    import httpx

    url = f"{target.simple_url}{normalize(name)}/"
    shown = redact_url(target.simple_url)
    user, password = os.environ.get("TWINE_USERNAME"), os.environ.get("TWINE_PASSWORD")
    try:
        with httpx.Client(timeout=30.0, follow_redirects=False) as client:
            response = client.get(url, headers={"Accept": _SIMPLE_ACCEPT})
            for _ in range(5):
                if not response.is_redirect:
                    break
                location = urljoin(url, response.headers.get("location", ""))
                if not _same_origin(location, url):
                    return set()
                url = location
                response = client.get(url, headers={"Accept": _SIMPLE_ACCEPT})
            if response.status_code == 401 and user and password:
                # Indexes that protect reads: the same credentials twine will upload with.
                response = client.get(url, headers={"Accept": _SIMPLE_ACCEPT}, auth=(user, password))
    except httpx.HTTPError as e:
        reason = _mask(str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise PublishError(f"cannot reach the index at {shown}: {reason}") from None
    if response.status_code == 404:
        return set()
    if response.status_code in (401, 403):
        return None
    if response.status_code != 200:
        raise PublishError(f"the index at {shown} answered HTTP {response.status_code} for {normalize(name)}")
    if "json" in response.headers.get("content-type", ""):
        try:
            data = response.json()
            return {f["filename"].lower() for f in data.get("files", []) if isinstance(f.get("filename"), str)}
        except (ValueError, AttributeError, TypeError):
            raise PublishError(f"the index at {shown} sent an unreadable JSON listing for {normalize(name)}") from None
    links = _Links()
    links.feed(response.text)
    return {f.lower() for f in links.files if f}


def upload(file: Path, target: Target) -> bool:
    """Upload one file; True if the index took it, False if it already had it.

    Not `twine upload --skip-existing`: twine refuses that flag for indexes other than
    PyPI. The index's own answer is read instead: 409, or a 400 whose reason or body says
    the file already exists (PyPI's reason; pypiserver's body, which `--verbose` logs).
    """
    result = _run(
        [
            sys.executable, "-m", "twine", "--no-color", "upload",
            "--verbose", "--non-interactive", "--disable-progress-bar",
            *target.twine_args, str(file),
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
    if status and (status.group(1) == "409" or (status.group(1) == "400" and re.search(r"already exists?\b", output, re.I))):
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
    if re.search(r"ConnectionError|Max retries|Connection refused|NewConnectionError|Name or service not known", reason):
        return PublishError(f"cannot reach the index at {where}: upload of {file.name} failed")
    return PublishError(f"uploading {file.name} to {where} failed: {reason}")


# --- the command -------------------------------------------------------------------------


@dataclass
class Outcome:
    uploaded: list[str]
    skipped: list[str]
    would_upload: list[str]


def publish_packages(
    paths: Iterable[Path],
    *,
    repository_url: str | None = None,
    repository: str | None = None,
    index_url: str | None = None,
    dry_run: bool = False,
    dist_dir: Path | None = None,
    build_isolation: bool = True,
    echo: Callable[[str], None] = print,
) -> Outcome:
    roots = list(dict.fromkeys(Path(p) for p in paths))
    if not roots:
        raise UsageError("publish needs at least one package directory")
    require_tools()
    target = resolve_target(repository_url, repository, index_url)
    projects = [load_project(root) for root in roots]
    # Dependencies first: schemas, then the runtime, then the generated packages.
    projects.sort(key=lambda p: (p.generated, normalize(p.name) != SCHEMAS_DISTRIBUTION))
    for project in projects:
        ensure_publishable(project)
        echo(f"{project.root}: up to date ({project.label})")
    # Ask the index about every project before building or uploading anything: an
    # unreachable index fails fast, and nothing is uploaded without a listing.
    present = {project.name: index_files(target, project.name) for project in projects}

    outcome = Outcome([], [], [])
    with tempfile.TemporaryDirectory(prefix="openenv-gen-publish-") as tmp:
        built: list[tuple[Project, list[Path]]] = []
        for i, project in enumerate(projects):
            files = build(project, Path(tmp) / str(i), isolation=build_isolation)
            echo(f"built {', '.join(f.name for f in files)}")
            built.append((project, files))
        twine_check([f for _, files in built for f in files])
        echo("twine check passed")
        if dist_dir is not None:
            dist_dir.mkdir(parents=True, exist_ok=True)
            for _, files in built:
                for f in files:
                    shutil.copy2(f, dist_dir / f.name)

        for project, files in built:
            listing = present[project.name]
            if listing is None:
                echo(f"{target.shown} does not list {project.name}; the upload itself will detect existing files")
            for f in files:
                if listing is not None and f.name.lower() in listing:
                    echo(f"skipped {f.name}: already on the index")
                    outcome.skipped.append(f.name)
                elif dry_run:
                    echo(f"would upload {f.name} to {target.shown}")
                    outcome.would_upload.append(f.name)
                elif upload(f, target):
                    echo(f"uploaded {f.name} to {target.shown}")
                    outcome.uploaded.append(f.name)
                else:
                    echo(f"skipped {f.name}: the index already has it")
                    outcome.skipped.append(f.name)
    if dry_run:
        echo(f"dry run: {len(outcome.would_upload)} to upload, {len(outcome.skipped)} already on the index")
    else:
        echo(f"done: {len(outcome.uploaded)} uploaded, {len(outcome.skipped)} already on the index")
    return outcome

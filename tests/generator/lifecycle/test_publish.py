"""`openenv-gen publish` against a real index: pypiserver, started by the tests on 127.0.0.1.

The index requires credentials for uploads (`-a update` with an htpasswd file made with
passlib), serves only what is uploaded to it (`--disable-fallback`: no redirects to PyPI) and
reads its directory on every request (`--backend simple-dir`), so a test can remove a file
behind its back. `publish` runs as the real CLI in a subprocess with HOME set to an empty
directory and keyring's null backend, so the only credentials are the ones a test passes.

The fresh-venv install proves that the two packages install *from the local index* and
resolve their own metadata, without downloading anything: the venv is made with no packages;
a `.pth` file adds a directory of symlinks to the project venv's third-party packages
(verifiers, openenv, pydantic, ...) with every distribution of ours left out (the generator,
the runtime, generated packages, editable-install hooks); then pip, with every config file
and PIP_* variable removed and `--index-url` pointing only at the local index, installs
`wordle-openenv`. pip must find `openenvgen-runtime` on the local index through
wordle-openenv's `Requires-Dist` range, and sees the runtime's own dependencies as already
installed; anything missing would fail the install, because the local index is the only
source. verifiers' loader then loads the taskset from the fresh venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.parser import Parser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from openenvgen import catalog
from openenvgen.generation.render import RUNTIME_REQUIREMENT, render_package
from openenvgen.spec import build_spec
from openenvgen_servers.ports import free_port
from openenvgen_testsupport.paths import OPENENV_GEN, ROOT
from openenvgen_testsupport.servers import wait_until_serving

USER = "publisher"
PASSWORD = "pw-5b1e-never-printed"
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".pytest_cache")


# --- a real index --------------------------------------------------------------------------


@dataclass
class Index:
    url: str
    packages: Path

    @property
    def simple(self) -> str:
        return f"{self.url}simple/"

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.packages.iterdir())}


@contextmanager
def pypiserver(root: Path) -> Iterator[Index]:
    from passlib.apache import HtpasswdFile

    packages = root / "packages"
    packages.mkdir(parents=True)
    htpasswd = HtpasswdFile(str(root / "htpasswd"), new=True)
    htpasswd.set_password(USER, PASSWORD)
    htpasswd.save()
    port = free_port()
    log = (root / "pypiserver.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pypiserver",
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-P",
            str(root / "htpasswd"),
            "-a",
            "update",
            "--disable-fallback",
            "--backend",
            "simple-dir",
            str(packages),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_serving(url.rstrip("/"), path="/health", timeout=30, alive=lambda: proc.poll() is None)
        yield Index(url, packages)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    with pypiserver(tmp_path / "index") as served:
        yield served


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Copies of schemas/, servers/ and runtime/ and a freshly generated wordle-openenv (builds never
    touch the work tree)."""
    root = tmp_path_factory.mktemp("sources")
    generated = subprocess.run(
        [OPENENV_GEN, "wordle", "--out", str(root / "wordle-openenv")], capture_output=True, text=True, timeout=120
    )
    assert generated.returncode == 0, generated.stderr
    return {
        "runtime": Path(shutil.copytree(ROOT / "runtime", root / "runtime", ignore=_COPY_IGNORE)),
        "schemas": Path(shutil.copytree(ROOT / "schemas", root / "schemas", ignore=_COPY_IGNORE)),
        "servers": Path(shutil.copytree(ROOT / "servers", root / "servers", ignore=_COPY_IGNORE)),
        "wordle": root / "wordle-openenv",
    }


def publish(*args: str, home: Path, credentials: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TWINE_", "PIP_")) and k != "PYTHONPATH"}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    if credentials:
        env.update(TWINE_USERNAME=USER, TWINE_PASSWORD=PASSWORD)
    result = subprocess.run(
        [OPENENV_GEN, "publish", *args, "--no-build-isolation"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert PASSWORD not in result.stdout + result.stderr
    return result


def assert_failed(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    """One line on stderr, the documented code, and no success message of any kind."""
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr.startswith("openenv-gen: error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert "uploaded " not in result.stdout and "done:" not in result.stdout, result.stdout


def lines(result: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(prefix)]


RUNTIME_FILES = {"openenvgen_runtime-0.1.0.tar.gz", "openenvgen_runtime-0.1.0-py3-none-any.whl"}
SCHEMAS_FILES = {"openenvgen_schemas-0.1.0.tar.gz", "openenvgen_schemas-0.1.0-py3-none-any.whl"}
SERVERS_FILES = {"openenvgen_servers-0.1.0.tar.gz", "openenvgen_servers-0.1.0-py3-none-any.whl"}
WORDLE_FILES = {"wordle_openenv-0.1.0.tar.gz", "wordle_openenv-0.1.0-py3-none-any.whl"}


# --- the fresh venv ------------------------------------------------------------------------


def _ours(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered.endswith(".pth")
        or lowered.startswith(("openenvgen", "_openenvgen", "__editable__"))
        or "_openenv" in lowered  # generated packages and their dist-info: wordle_openenv-0.1.0.dist-info
    )


def fresh_venv(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = root / "project-deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _ours(entry.name):
            (deps / entry.name).symlink_to(entry)
    (Path(purelib) / "project_deps.pth").write_text(f"{deps}\n")
    return python


def pip_isolated_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", NO_PROXY="127.0.0.1,localhost")
    return env


PROBE = """
import importlib.metadata as md, json, sys
from verifiers.v1.utils.loaders import environment_class, load_taskset, taskset_config_type
config = taskset_config_type("wordle-openenv")(id="wordle-openenv", base_url="http://127.0.0.1:1")
taskset = load_taskset(config)
tasks = list(taskset.load())
import openenvgen_runtime, wordle_openenv
meta = md.metadata("wordle-openenv")
print(json.dumps({
    "taskset": type(taskset).__name__,
    "env": environment_class("wordle-openenv").__name__,
    "tasks": len(tasks),
    "prefix": sys.prefix,
    "module": wordle_openenv.__file__,
    "runtime": openenvgen_runtime.__file__,
    "runtime_version": md.version("openenvgen-runtime"),
    "requires": md.requires("wordle-openenv"),
    "summary": meta["Summary"],
}))
"""


# --- the tests -----------------------------------------------------------------------------


def test_publish_install_from_the_index_and_republish(index: Index, sources: dict[str, Path], tmp_path: Path) -> None:
    everything = SCHEMAS_FILES | SERVERS_FILES | RUNTIME_FILES | WORDLE_FILES
    first = publish(
        str(sources["wordle"]),
        str(sources["runtime"]),
        str(sources["servers"]),
        str(sources["schemas"]),
        "--repository-url",
        index.url,
        home=tmp_path / "home",
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert set(index.files()) == everything
    assert sorted(lines(first, "uploaded ")) == sorted(f"uploaded {f} to {index.url}" for f in everything)
    # Dependencies go first whatever the argument order: schemas, servers, then the runtime.
    uploaded = [line.split()[1] for line in lines(first, "uploaded ")]
    ours = ["openenvgen_schemas"] * 2 + ["openenvgen_servers"] * 2 + ["openenvgen_runtime"] * 2
    assert [name.split("-")[0] for name in uploaded[:6]] == ours
    assert first.stdout.rstrip().endswith("done: 8 uploaded, 0 already on the index")

    # A fresh venv installs wordle-openenv from the local index and pulls the runtime through its metadata.
    python = fresh_venv(tmp_path / "fresh")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-cache-dir",
            "--index-url",
            index.simple,
            "wordle-openenv",
        ],
        capture_output=True,
        text=True,
        env=pip_isolated_env(),
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert (
        "Successfully installed openenvgen-runtime-0.1.0 openenvgen-schemas-0.1.0 openenvgen-servers-0.1.0 "
        "wordle-openenv-0.1.0" in install.stdout
    ), install.stdout
    probe = subprocess.run(
        [str(python), "-c", PROBE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout.splitlines()[-1])
    venv = str((tmp_path / "fresh" / "venv").resolve())
    assert seen["prefix"] == str(tmp_path / "fresh" / "venv")
    assert Path(seen["module"]).resolve().as_posix().startswith(venv)
    assert Path(seen["runtime"]).resolve().as_posix().startswith(venv)
    assert (seen["taskset"], seen["env"], seen["tasks"]) == ("WordleTaskset", "WordleEnv", 1)
    assert seen["runtime_version"] == "0.1.0"
    assert seen["requires"] == [
        "openenvgen-runtime<0.2,>=0.1.0",
        "verifiers<0.5,>=0.4",
        "trl<2,>=1.16; extra == 'trl'",
    ]
    assert seen["summary"].startswith("verifiers taskset for the OpenEnv environment openenv/wordle")

    # Again: every file is already there, nothing is uploaded, and that is a success.
    before = index.files()
    again = publish(
        str(sources["schemas"]),
        str(sources["servers"]),
        str(sources["runtime"]),
        str(sources["wordle"]),
        "--repository-url",
        index.url,
        home=tmp_path / "home",
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert lines(again, "uploaded ") == []
    assert sorted(lines(again, "skipped ")) == sorted(f"skipped {f}: already on the index" for f in everything)
    assert again.stdout.rstrip().endswith("done: 0 uploaded, 8 already on the index")
    assert index.files() == before


def test_pypirc_credentials_and_a_partial_version(index: Index, sources: dict[str, Path], tmp_path: Path) -> None:
    """~/.pypirc with --repository; then a version with its sdist but not its wheel gets only the wheel."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pypirc").write_text(
        f"[distutils]\nindex-servers = local\n\n[local]\nrepository = {index.url}\n"
        f"username = {USER}\npassword = {PASSWORD}\n"
    )
    first = publish(str(sources["runtime"]), "--repository", "local", home=home, credentials=False)
    assert first.returncode == 0, first.stdout + first.stderr
    assert set(index.files()) == RUNTIME_FILES

    (index.packages / "openenvgen_runtime-0.1.0-py3-none-any.whl").unlink()
    sdist = index.files()["openenvgen_runtime-0.1.0.tar.gz"]
    second = publish(str(sources["runtime"]), "--repository-url", index.url, home=tmp_path / "home2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert lines(second, "skipped ") == ["skipped openenvgen_runtime-0.1.0.tar.gz: already on the index"]
    assert lines(second, "uploaded ") == [f"uploaded openenvgen_runtime-0.1.0-py3-none-any.whl to {index.url}"]
    assert set(index.files()) == RUNTIME_FILES
    assert index.files()["openenvgen_runtime-0.1.0.tar.gz"] == sdist


def test_a_conflict_on_upload_is_a_skip(sources: dict[str, Path], tmp_path: Path) -> None:
    """The listing says missing (a second, empty index), the upload target answers "already exists"."""
    with pypiserver(tmp_path / "a") as full, pypiserver(tmp_path / "b") as empty:
        assert publish(str(sources["runtime"]), "--repository-url", full.url, home=tmp_path / "h").returncode == 0
        before = full.files()
        again = publish(
            str(sources["runtime"]), "--repository-url", full.url, "--index-url", empty.simple, home=tmp_path / "h"
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert lines(again, "uploaded ") == []
        assert sorted(lines(again, "skipped ")) == sorted(
            f"skipped {f}: the index already has it" for f in RUNTIME_FILES
        )
        assert full.files() == before


def test_dry_run_uploads_nothing_and_needs_no_credentials(
    index: Index, sources: dict[str, Path], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    result = publish(
        str(sources["runtime"]),
        "--repository-url",
        index.url,
        "--dry-run",
        "--dist-dir",
        str(dist),
        home=tmp_path / "home",
        credentials=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(lines(result, "would upload ")) == sorted(f"would upload {f} to {index.url}" for f in RUNTIME_FILES)
    assert lines(result, "uploaded ") == []
    assert index.files() == {}
    assert {p.name for p in dist.iterdir()} == RUNTIME_FILES


def test_missing_credentials(index: Index, sources: dict[str, Path], tmp_path: Path) -> None:
    result = publish(str(sources["runtime"]), "--repository-url", index.url, home=tmp_path / "home", credentials=False)
    assert_failed(result, 77, "no credentials for", "TWINE_USERNAME")
    assert index.files() == {}


def test_wrong_credentials(index: Index, sources: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pypirc").write_text(
        f"[distutils]\nindex-servers = local\n\n[local]\nrepository = {index.url}\n"
        f"username = {USER}\npassword = not-{PASSWORD}\n"
    )
    result = publish(str(sources["runtime"]), "--repository", "local", home=home, credentials=False)
    assert_failed(result, 77, "refused the credentials")
    assert f"not-{PASSWORD}" not in result.stdout + result.stderr
    assert index.files() == {}


def test_a_repository_twine_does_not_know(sources: dict[str, Path], tmp_path: Path) -> None:
    """A ~/.pypirc section missing from `[distutils] index-servers` is unknown to twine, so to us."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pypirc").write_text(
        f"[local]\nrepository = http://127.0.0.1:9/\nusername = {USER}\npassword = {PASSWORD}\n"
    )
    result = publish(str(sources["runtime"]), "--repository", "local", home=home, credentials=False)
    assert_failed(result, 64, "--repository local", "Missing 'local' section")
    assert "built " not in result.stdout


def test_unreachable_index(sources: dict[str, Path], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    result = publish(str(sources["runtime"]), "--repository-url", url, home=tmp_path / "home")
    assert_failed(result, 69, "cannot reach the index")


def test_credentials_in_the_url_are_never_printed(sources: dict[str, Path], tmp_path: Path) -> None:
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:{free_port()}/"
    result = publish(
        str(sources["runtime"]), "--repository-url", url, home=tmp_path / "home"
    )  # asserts PASSWORD absent
    assert_failed(result, 69, "***@127.0.0.1")


class _Rejecting(BaseHTTPRequestHandler):
    """An index that lists nothing and rejects every upload, as PyPI does bad metadata."""

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"Invalid value for classifiers."
        self.send_response(400, "Invalid value for classifiers")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_rejected_upload(sources: dict[str, Path], tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rejecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        result = publish(str(sources["runtime"]), "--repository-url", url, home=tmp_path / "home")
    finally:
        server.shutdown()
        server.server_close()
    assert_failed(result, 69, "rejected openenvgen_runtime-0.1.0.tar.gz", "400", "Invalid value for classifiers")


def test_a_stale_package_is_refused_before_anything_is_built(
    index: Index, sources: dict[str, Path], tmp_path: Path
) -> None:
    stale = Path(shutil.copytree(sources["wordle"], tmp_path / "wordle-openenv"))
    models = stale / "wordle_openenv" / "models.py"
    models.write_text(models.read_text() + "\n# a hand edit\n")
    result = publish(str(sources["runtime"]), str(stale), "--repository-url", index.url, home=tmp_path / "home")
    assert_failed(result, 1, "is stale", "wordle_openenv/models.py")
    assert "built " not in result.stdout
    assert index.files() == {}


def test_no_paths_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run([OPENENV_GEN, "publish"], capture_output=True, text=True, timeout=60)
    assert_failed(result, 64, "Missing argument")


def test_not_a_publishable_directory(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "1.0"\n')
    result = publish(str(tmp_path / "other"), "--repository-url", "http://127.0.0.1:9/", home=tmp_path / "home")
    assert_failed(result, 64, "neither a generated package")


def test_a_runtime_outside_the_generated_range_is_refused(sources: dict[str, Path], tmp_path: Path) -> None:
    runtime = Path(shutil.copytree(sources["runtime"], tmp_path / "runtime"))
    pyproject = runtime / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"', 1))
    result = publish(str(runtime), "--repository-url", "http://127.0.0.1:9/", home=tmp_path / "home")
    assert_failed(result, 65, "outside the range", RUNTIME_REQUIREMENT)


# --- generated metadata --------------------------------------------------------------------


def _wheel_metadata(wheel: Path) -> tuple[dict[str, list[str]], str]:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(z.read(name).decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return fields, message.get_payload()


def test_generated_wheel_metadata_is_complete(index: Index, sources: dict[str, Path], tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    result = publish(
        str(sources["wordle"]),
        "--repository-url",
        index.url,
        "--dry-run",
        "--dist-dir",
        str(dist),
        home=tmp_path / "home",
        credentials=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    fields, body = _wheel_metadata(dist / "wordle_openenv-0.1.0-py3-none-any.whl")
    assert fields["Name"] == ["wordle-openenv"]
    assert fields["Summary"] == [
        "verifiers taskset for the OpenEnv environment openenv/wordle: TextArenaEnvironment environment"
    ]
    assert fields["License-Expression"] == ["Apache-2.0"]
    assert fields["Requires-Python"] == [">=3.11"]
    assert fields["Requires-Dist"] == [
        "openenvgen-runtime<0.2,>=0.1.0",
        "verifiers<0.5,>=0.4",
        "trl<2,>=1.16; extra == 'trl'",
    ]
    assert fields["Provides-Extra"] == ["trl"]
    assert fields["Description-Content-Type"] == ["text/markdown"]
    assert fields["Project-URL"] == ["Environment, https://huggingface.co/spaces/openenv/wordle"]
    assert "Programming Language :: Python :: 3.11" in fields["Classifier"]
    assert "Typing :: Typed" in fields["Classifier"]
    assert body == (sources["wordle"] / "README.md").read_text()
    # The runtime's own version sits inside the range every generated package requires.
    from packaging.requirements import Requirement

    runtime_version = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())["project"]["version"]
    assert Requirement(RUNTIME_REQUIREMENT).specifier.contains(runtime_version)


def _hostile_package(root: Path, metadata: dict[str, str]) -> Path:
    capture = catalog.entries()["wordle"].interface()
    capture = capture.model_copy(update={"metadata": metadata})
    spec = build_spec(capture, name="hostile", env_id="openenv/hostile")
    package = root / spec.package
    for rel, text in render_package(spec).items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text, "utf-8")
    return package


def test_untrusted_metadata_cannot_break_the_distribution(index: Index, tmp_path: Path) -> None:
    """/metadata text is one capped line in Summary and inert in TOML; a bad docs URL is dropped."""
    description = 'First line\nsecond = "line" \\ with\ttabs\x00\x1b[31m and [project]\n' + "word " * 200
    package = _hostile_package(
        tmp_path, {"description": description, "documentation_url": 'https://example.com/x"\nEvil = "1'}
    )
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    summary = project["description"]
    assert "\n" not in summary and "\x00" not in summary and "\x1b" not in summary and "\t" not in summary
    assert len(summary) <= 200 and summary.endswith("...")
    assert summary.startswith(
        'verifiers taskset for the OpenEnv environment openenv/hostile: First line second = "line" \\ with tabs'
    )
    assert project["urls"] == {"Environment": "https://huggingface.co/spaces/openenv/hostile"}
    assert set(project) == {
        "name",
        "version",
        "description",
        "readme",
        "requires-python",
        "license",
        "keywords",
        "classifiers",
        "dependencies",
        "urls",
        "optional-dependencies",
    }
    # And it builds and passes `twine check --strict`.
    dist = tmp_path / "dist"
    result = publish(
        str(package),
        "--repository-url",
        index.url,
        "--dry-run",
        "--dist-dir",
        str(dist),
        home=tmp_path / "home",
        credentials=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    fields, _ = _wheel_metadata(dist / "hostile_openenv-0.1.0-py3-none-any.whl")
    assert fields["Summary"] == [summary]

    good = _hostile_package(tmp_path / "good", {"documentation_url": "https://example.com/docs"})
    urls = tomllib.loads((good / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Documentation"] == "https://example.com/docs"


# --- the index listing, in process ----------------------------------------------------------


class _Listing(BaseHTTPRequestHandler):
    """PEP 691 JSON for one project, PEP 503 HTML for another, an off-site redirect for a third."""

    def do_GET(self) -> None:
        if self.path == "/simple/json-project/":
            body = json.dumps(
                {
                    "meta": {"api-version": "1.0"},
                    "name": "json-project",
                    "files": [
                        {"filename": "json_project-1.0.tar.gz", "url": "x", "hashes": {}},
                        {"filename": "Json_Project-1.0-py3-none-any.whl", "url": "y", "hashes": {}},
                    ],
                }
            ).encode()
            ctype = "application/vnd.pypi.simple.v1+json"
        elif self.path == "/simple/html-project/":
            body = b'<a href="../../packages/html_project-2.0.tar.gz#sha256=00">html_project-2.0.tar.gz</a>'
            ctype = "text/html"
        elif self.path == "/simple/moved-project/":
            self.send_response(301)
            self.send_header("Location", "/simple/html-project/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif self.path == "/simple/elsewhere/":
            self.send_response(303)
            self.send_header("Location", "https://pypi.org/simple/elsewhere/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif self.path == "/simple/private/":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_index_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenvgen.lifecycle.index import Target, index_files

    monkeypatch.delenv("TWINE_USERNAME", raising=False)
    monkeypatch.delenv("TWINE_PASSWORD", raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Listing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        target = Target(twine_args=(), upload_url=base, simple_url=f"{base}simple/")
        assert index_files(target, "JSON.Project") == {"json_project-1.0.tar.gz", "json_project-1.0-py3-none-any.whl"}
        assert index_files(target, "html_project") == {"html_project-2.0.tar.gz"}
        assert index_files(target, "moved-project") == {"html_project-2.0.tar.gz"}  # same-origin redirect followed
        assert index_files(target, "elsewhere") == set()  # a fallback to another index is not this index
        assert index_files(target, "private") is None  # cannot tell: the upload decides
        assert index_files(target, "absent") == set()
    finally:
        server.shutdown()
        server.server_close()

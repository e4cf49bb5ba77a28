"""Docker images and daemon state for the `docker` and `swarm` tests, built locally.

No image registry is needed: the base image is a minimal Debian bookworm root file
system made with `debootstrap --variant=minbase` (from the machine's own apt mirror) and
imported with `docker import`; the env image adds a wheelhouse of OpenEnv's server side
built on the host with `pip download`, and the test env project `tests/fixtures/uv_env`
(guess-the-number). Both are tagged by a hash of what went into them, so a machine
builds each once and every later run reuses it.

Everything the tests start carries the label `openenvgen.test=1`, so leftovers can be
listed precisely (`docker ps -a --filter label=...`) without touching anyone else's.
`host_state` is what a test module must leave as it found it (swarm membership, labelled
containers and services); a test that needs a daemon in another state (e.g. outside any
swarm) gets a `throwaway_daemon` of its own instead of changing the machine's.

Run `python -m openenvgen_testsupport.docker_images` to build (or find) the env image ahead of a
test run; it prints the image tag.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

from openenvgen_testsupport.paths import (
    UV_CODE_FIXTURE_APP,
    UV_CODE_FIXTURE_PROJECT,
    UV_FIXTURE_APP,
    UV_FIXTURE_PROJECT,
)

SUITE = "bookworm"
BASE_REPOSITORY = "openenvgen-test-base"
ENV_REPOSITORY = "openenvgen-test-guess"
CODE_ENV_REPOSITORY = "openenvgen-test-code"
TEST_LABEL = "openenvgen.test"
RUN_LABEL = "openenvgen.test.run"
"""Carried next to TEST_LABEL by everything one test module starts: its leftovers, if any."""
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "openenvgen-tests"
# Debian packages of the base image: an interpreter that matches the host's (3.11), so
# the host-built wheelhouse installs as is, and pip to install it.
BASE_PACKAGES = ("python3", "python3-pip", "ca-certificates")
_DEFAULT_MIRROR = "http://deb.debian.org/debian"


class DockerUnavailable(RuntimeError):
    """No Docker daemon answers, or an image could not be built; the message says why."""


def docker(
    *args: str, timeout: float = 120, check: bool = True, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check, input=input)


def daemon_problem() -> str | None:
    """Why Docker cannot be used here, or None when a daemon answers."""
    if shutil.which("docker") is None:
        return "no `docker` command on this machine (apt-get install docker.io)"
    try:
        docker("info", timeout=20)
    except subprocess.CalledProcessError as e:
        return f"no Docker daemon answers `docker info`: {e.stderr.strip().splitlines()[-1] if e.stderr.strip() else e}"
    except subprocess.TimeoutExpired:
        return "`docker info` timed out"
    return None


def image_exists(tag: str) -> bool:
    return docker("image", "inspect", tag, check=False).returncode == 0


def debian_mirror() -> str:
    """The Debian mirror apt uses on this machine (one-line or deb822 sources)."""
    candidates: list[str] = []
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file() or not path.name.endswith((".list", ".sources")):
            continue
        text = path.read_text(errors="replace")
        candidates += re.findall(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+" + SUITE + r"\s", text, flags=re.M)
        for stanza in re.split(r"\n\s*\n", text):
            if re.search(r"^Suites:.*\b" + SUITE + r"\b", stanza, flags=re.M):
                candidates += re.findall(r"^URIs:\s*(\S+)", stanza, flags=re.M)
    for url in candidates:
        if "security" not in url:
            return url.rstrip("/")
    return _DEFAULT_MIRROR


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()[:16]


def base_image() -> str:
    """The minbase bookworm image with Python, built once per machine."""
    tag = f"{BASE_REPOSITORY}:{SUITE}-" + _digest(SUITE.encode(), " ".join(BASE_PACKAGES).encode())
    if image_exists(tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise DockerUnavailable("building the test base image needs `debootstrap` (apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="openenvgen-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        command = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            SUITE,
            str(rootfs),
            debian_mirror(),
        ]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise DockerUnavailable(f"debootstrap failed: {(proc.stdout + proc.stderr)[-2000:]}")
        # Apt caches are dead weight in an image.
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        try:
            imported = subprocess.run(
                ["docker", "import", "--change", f"LABEL {TEST_LABEL}=1", "-", tag],
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                timeout=900,
            )
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar.wait()
        if imported.returncode != 0:
            raise DockerUnavailable(f"docker import failed: {imported.stderr.strip()}")
    return tag


def _server_requirements() -> list[str]:
    # The same OpenEnv release as the client side, so both speak one protocol version.
    return [f"openenv=={version('openenv')}", f"uvicorn=={version('uvicorn')}"]


def _wheelhouse(requirements: list[str]) -> Path:
    """`pip download` of the server side for this interpreter, cached by requirement set."""
    house = CACHE / ("wheelhouse-" + _digest(" ".join(requirements).encode(), sys.version.encode()))
    if (house / ".complete").exists():
        return house
    house.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(house), *requirements],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise DockerUnavailable(f"pip download of the env server's wheels failed: {proc.stderr.strip()[-2000:]}")
    (house / ".complete").write_text("")
    return house


def _project_files(project: Path) -> list[Path]:
    return sorted(p for p in project.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def env_image() -> str:
    """The guess-env image (OpenEnv server + the test env project), built once per content."""
    return _project_image(ENV_REPOSITORY, UV_FIXTURE_PROJECT, "guess_env", UV_FIXTURE_APP)


def code_env_image() -> str:
    """The code-env image (an env that runs the action's Python, `tests/fixtures/uv_code_env`),
    built once per content, like `env_image`."""
    return _project_image(CODE_ENV_REPOSITORY, UV_CODE_FIXTURE_PROJECT, "code_env", UV_CODE_FIXTURE_APP)


def _project_image(repository: str, project: Path, package: str, app: str) -> str:
    """An image of OpenEnv's server side and one fixture env project's `package`, serving `app`."""
    base = base_image()
    requirements = _server_requirements()
    files = _project_files(project)
    tag = f"{repository}:" + _digest(
        base.encode(),
        " ".join(requirements).encode(),
        *(str(p.relative_to(project)).encode() + b"\0" + p.read_bytes() for p in files),
    )
    if image_exists(tag):
        return tag
    house = _wheelhouse(requirements)
    with tempfile.TemporaryDirectory(prefix="openenvgen-image-") as tmp:
        context = Path(tmp)
        shutil.copytree(house, context / "wheels", ignore=shutil.ignore_patterns(".complete"))
        no_bytecode = shutil.ignore_patterns("__pycache__")
        shutil.copytree(project / package, context / package, ignore=no_bytecode)
        (context / "Dockerfile").write_text(
            f"FROM {base}\n"
            "COPY wheels /tmp/wheels\n"
            "RUN python3 -m pip install --no-cache-dir --no-index --find-links /tmp/wheels --break-system-packages "
            + " ".join(requirements)
            + " && rm -rf /tmp/wheels\n"
            f"COPY {package} /app/{package}\n"
            "WORKDIR /app\n"
            "ENV PYTHONPATH=/app PYTHONUNBUFFERED=1\n"
            f"LABEL {TEST_LABEL}=1\n"
            "EXPOSE 8000\n"
            f'CMD ["python3", "-m", "uvicorn", "{app}", "--host", "0.0.0.0", "--port", "8000"]\n'
        )
        proc = subprocess.run(
            ["docker", "build", "-q", "-t", tag, str(context)], capture_output=True, text=True, timeout=1800
        )
        if proc.returncode != 0:
            raise DockerUnavailable(f"docker build of the test env image failed: {proc.stderr.strip()[-2000:]}")
    # Intermediate containers of the legacy builder are removed by `docker build` itself.
    return tag


def ours(kind: str, label: str) -> list[str]:
    """IDs of containers (`kind="container"`), services (`"service"`), Swarm secrets
    (`"secret"`), Swarm configs (`"config"`) or networks (`"network"`) carrying `label`
    (no secret or config outside a swarm)."""
    if kind == "container":
        out = docker("ps", "-a", "-q", "--filter", f"label={label}", check=False).stdout
    else:
        out = docker(kind, "ls", "-q", "--filter", f"label={label}", check=False).stdout
    return out.split()


def labelled(token: str) -> list[str]:
    """IDs of the services, containers, secrets, configs and networks carrying one test's label value (TEST_LABEL)."""
    selector = f"{TEST_LABEL}={token}"
    return [item for kind in ("service", "container", "secret", "config", "network") for item in ours(kind, selector)]


def remove_labelled(token: str) -> None:
    """Remove whatever carries one test's label value: services first (their tasks'
    containers go with them), then any container left."""
    selector = f"{TEST_LABEL}={token}"
    services = ours("service", selector)
    if services:
        docker("service", "rm", *services, check=False)
    containers = ours("container", selector)
    if containers:
        docker("rm", "-f", *containers, check=False)
    for kind in ("secret", "config", "network"):  # once no service uses them
        items = ours(kind, selector)
        if items:
            docker(kind, "rm", *items, check=False)


def swarm_state() -> str:
    return docker("info", "--format", "{{.Swarm.LocalNodeState}}", check=False).stdout.strip()


@contextmanager
def single_node_swarm() -> Iterator[None]:
    """An active swarm for the block: the machine's own when it is in one (left as it is),
    else a one-node swarm on loopback that is left again at the end."""
    if swarm_state() == "active":
        yield
        return
    proc = docker("swarm", "init", "--advertise-addr", "127.0.0.1", check=False, timeout=60)
    if proc.returncode != 0:
        raise DockerUnavailable(f"`docker swarm init` failed: {proc.stderr.strip()}")
    try:
        yield
    finally:
        docker("swarm", "leave", "--force", check=False, timeout=60)


def host_state(label: str) -> dict[str, object]:
    """What a test module must leave as it found it: the daemon's swarm membership (state,
    node and cluster ids) and the containers and services carrying `label` (key=value; the
    module's own run label, as other runs may be starting theirs meanwhile)."""
    info = json.loads(docker("info", "--format", "{{json .Swarm}}").stdout)
    return {
        "swarm": {key: info.get(key) for key in ("LocalNodeState", "NodeID", "NodeAddr", "ControlAvailable")},
        "cluster": (info.get("Cluster") or {}).get("ID"),
        # The daemon's own networks (others' tests may add theirs meanwhile): a swarm left or
        # re-made has another ingress.
        "networks": sorted(
            line
            for line in docker("network", "ls", "--format", "{{.Name}} {{.ID}}").stdout.splitlines()
            if line.split()[0] in ("bridge", "host", "none", "ingress", "docker_gwbridge")
        ),
        # The daemon's bridges (docker0, docker_gwbridge): another daemon on this network
        # namespace could delete them (`dockerd --bridge=none` deletes docker0).
        "interfaces": sorted(n for n in os.listdir("/sys/class/net") if n.startswith("docker")),
        "containers": sorted(ours("container", label)),
        "services": sorted(ours("service", label)),
        "secrets": sorted(ours("secret", label)),
        "configs": sorted(ours("config", label)),
        "labelled networks": sorted(ours("network", label)),
    }


@contextmanager
def host_left_as_found(run: str) -> Iterator[None]:
    """Assert that the block leaves the daemon as it found it (host_state, with the module's
    run label value `run`)."""
    label = f"{RUN_LABEL}={run}"
    before = host_state(label)
    yield
    assert host_state(label) == before


@contextmanager
def throwaway_daemon(*, timeout: float = 60, runtimes: dict[str, list[str]] | None = None) -> Iterator[str]:
    """A Docker daemon of its own for the block, sharing nothing with the machine's: its own
    network namespace (`unshare --net`: its network set-up, e.g. `--bridge=none` deleting
    any docker0, cannot reach the machine's interfaces), socket, data root, exec root (with
    its own containerd) and pid file under a temporary directory, no bridge and no iptables
    rules. `runtimes` registers OCI runtimes with it, by the name of their program on PATH,
    with their arguments (`{"runsc": ["--platform=ptrace", ...]}`): the machine's daemon is
    never told of them. Yields its DOCKER_HOST; stops it and removes everything at the end.
    Needs root, `dockerd` and `unshare`; DockerUnavailable says why not."""
    for tool in ("dockerd", "unshare"):
        if shutil.which(tool) is None:
            raise DockerUnavailable(f"a throwaway Docker daemon needs `{tool}` (apt-get install docker.io util-linux)")
    if os.geteuid() != 0:
        raise DockerUnavailable("a throwaway Docker daemon needs root")
    registered = {}
    for name, args in (runtimes or {}).items():
        program = shutil.which(name)
        if program is None:
            raise DockerUnavailable(f"the OCI runtime `{name}` is not installed")
        registered[name] = {"path": program, "runtimeArgs": args}
    # Short path: a unix socket's path is limited to about 100 bytes.
    root = Path(tempfile.mkdtemp(prefix="oeg-dockerd-", dir="/tmp"))
    host = f"unix://{root}/docker.sock"
    command = [
        "unshare",
        "--net",
        "dockerd",
        "-H",
        host,
        "--data-root",
        str(root / "data"),
        "--exec-root",
        str(root / "exec"),
        "--pidfile",
        str(root / "dockerd.pid"),
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
    ]
    if registered:
        (root / "daemon.json").write_text(json.dumps({"runtimes": registered}))
        command += ["--config-file", str(root / "daemon.json")]
    log = (root / "dockerd.log").open("wb")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        env = {**os.environ, "DOCKER_HOST": host}
        while subprocess.run(["docker", "info"], env=env, capture_output=True, timeout=20).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (root / "dockerd.log").read_text(errors="replace").strip().splitlines()[-5:]
                raise DockerUnavailable(f"the throwaway Docker daemon did not start: {' | '.join(tail)}")
            time.sleep(0.2)
        yield host
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        log.close()
        # Its containerd shims and mounts are gone with it; the data root is ours alone.
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    problem = daemon_problem()
    if problem:
        sys.exit(problem)
    print(env_image())

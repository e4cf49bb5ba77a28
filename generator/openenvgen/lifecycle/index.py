"""The package index `publish` uploads to: where it is, and which files it already holds.

The upload URL comes from `--repository-url`, a `~/.pypirc` section (`--repository`, read
by twine itself) or twine's environment variables; the listing comes from the index's
simple API (PEP 691 JSON or PEP 503 HTML, parsed by pypi-simple), fetched with httpx so
that a redirect off the index counts as "not on this index". The listing sends credentials
only when the index demands them, and nothing here ever prints one: URLs are shown with
their user-info masked, and the TWINE_PASSWORD value is masked in any message.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from openenvgen.errors import PublishError, UsageError

PYPI_UPLOAD_URL = "https://upload.pypi.org/legacy/"
TESTPYPI_UPLOAD_URL = "https://test.pypi.org/legacy/"
# Upload endpoints whose simple API does not live under them.
_SIMPLE_FOR_UPLOAD = {
    PYPI_UPLOAD_URL: "https://pypi.org/simple/",
    TESTPYPI_UPLOAD_URL: "https://test.pypi.org/simple/",
}


def normalize(name: str) -> str:
    """PEP 503 project name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Target:
    """An index: how twine is told to upload there, and where its simple API is."""

    twine_args: tuple[str, ...]
    upload_url: str
    simple_url: str

    @property
    def shown(self) -> str:
        """The upload URL as it may be printed (user-info masked)."""
        return redact_url(self.upload_url)


def redact_url(url: str) -> str:
    """`url` (or every URL in a text) with its user-info replaced by `***`."""
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1***@", url)


def mask_secrets(text: str) -> str:
    """`text` with URL user-info and the TWINE_PASSWORD value masked, safe to print."""
    text = redact_url(text)
    password = os.environ.get("TWINE_PASSWORD")
    if password:
        text = text.replace(password, "***")
    return text


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
    """The index from the command line, else twine's environment variables, else PyPI."""
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


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.netloc) == (pb.scheme, pb.netloc)


def index_files(target: Target, name: str) -> set[str] | None:
    """File names the index holds for a project (lowercased); None if it will not say (401/403).

    A redirect off the index (pypiserver's fallback to PyPI for a project it lacks) means
    the index itself has none.
    """
    import httpx
    import pypi_simple

    project = normalize(name)
    url = f"{target.simple_url}{project}/"
    shown = redact_url(target.simple_url)
    headers = {"Accept": pypi_simple.ACCEPT_JSON_PREFERRED}
    user, password = os.environ.get("TWINE_USERNAME"), os.environ.get("TWINE_PASSWORD")
    try:
        with httpx.Client(timeout=30.0, follow_redirects=False) as client:
            response = client.get(url, headers=headers)
            for _ in range(5):
                if not response.is_redirect:
                    break
                location = urljoin(url, response.headers.get("location", ""))
                if not _same_origin(location, url):
                    return set()
                url = location
                response = client.get(url, headers=headers)
            if response.status_code == 401 and user and password:
                # Indexes that protect reads: the same credentials twine will upload with.
                response = client.get(url, headers=headers, auth=(user, password))
    except httpx.HTTPError as e:
        reason = mask_secrets(str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise PublishError(f"cannot reach the index at {shown}: {reason}") from None
    if response.status_code == 404:
        return set()
    if response.status_code in (401, 403):
        return None
    if response.status_code != 200:
        raise PublishError(f"the index at {shown} answered HTTP {response.status_code} for {project}")
    content_type = response.headers.get("content-type", "text/html").split(";")[0].strip().lower()
    try:
        if "json" in content_type:  # PEP 691 (or an index that calls it application/json)
            page = pypi_simple.ProjectPage.from_json_data(response.json(), url)
        else:  # PEP 503 HTML, whatever an older index calls it
            page = pypi_simple.ProjectPage.from_html(project, response.content, url, response.encoding)
    except (ValueError, pypi_simple.UnsupportedRepoVersionError) as e:
        reason = mask_secrets(str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise PublishError(f"the index at {shown} sent an unreadable listing for {project}: {reason}") from None
    return {package.filename.lower() for package in page.packages if package.filename}

"""`doctor`: whether a package's env is fit to train on, measured and reported.

The generator never imports the runtime, so `doctor` runs the runtime's doctor
(`python -m openenvgen_runtime.doctor`) in this interpreter, where the package and the
runtime are installed, as `play` runs its player. That process launches the env (or reaches
`--base-url`), measures it, shows a progress bar on stderr and writes the report (JSON,
`openenvgen_schemas.doctor_report`) to a temporary file; this one reads it back and shows it:
the verdicts on the terminal, `--json` on stdout, `--html FILE` as one page.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from openenvgen.cli.base import CaBundle, HeaderOptions, console, credential_settings, credentials
from openenvgen.cli.packages import located
from openenvgen.errors import OutputError, SourceError, UsageError
from openenvgen_schemas.doctor_thresholds import Thresholds

RUNTIME_DOCTOR = "openenvgen_runtime.doctor"
THRESHOLD_NAMES = tuple(Thresholds.model_fields)
RUNTIME_DOCTOR_ERRORS = (64, 69)
"""The runtime doctor's exit statuses after it wrote its one error line (bad arguments, the
env not started or reached): `doctor` exits with them and adds no line of its own."""


def doctor(
    package: Annotated[
        str, typer.Argument(metavar="PACKAGE", help="Package directory, installed package, or catalog name.")
    ],
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", metavar="URL", help="Measure this running server (default: launch one)."),
    ] = None,
    episodes: Annotated[int, typer.Option("--episodes", min=1, metavar="N", help="Episodes to play.")] = 8,
    group_size: Annotated[
        int, typer.Option("--group-size", min=1, metavar="N", help="Episodes per task (a reward group).")
    ] = 4,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, metavar="N", help="Steps per episode at most.")] = 16,
    capacity_bound: Annotated[
        int, typer.Option("--capacity-bound", min=1, metavar="N", help="Most sessions opened at once.")
    ] = 16,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds any one request may take.")
    ] = 30.0,
    headers: HeaderOptions = None,
    ca_bundle: CaBundle = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON (schema version 1).")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", help="Write the report as one self-contained page.")
    ] = None,
    thresholds: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            metavar="NAME=VALUE",
            help=f"Change a verdict's threshold (repeatable): {', '.join(THRESHOLD_NAMES)}.",
        ),
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=JSON", help="A taskset config key, as `play --set` (repeatable)."),
    ] = None,
) -> None:
    """Measure whether a package's env is fit to train on: latency, session capacity and release,
    determinism, reward sanity, schema fidelity, episode lengths.

    The env is launched as the package's taskset would launch it (or `--base-url` is used), a
    policy plays `--episodes` episodes with actions the package's models accept (the catalog's
    example action first), and each check gets a verdict: pass, warn or fail. Exit status 1
    when a check failed, 0 otherwise (warnings included); 69 when the env could not be started.
    """
    limits = _thresholds(thresholds or [])
    access = credentials(headers, ca_bundle, base_url=base_url)
    if html is not None and html.is_dir():
        raise UsageError(f"--html {html}: is a directory")
    if importlib.util.find_spec("openenvgen_runtime") is None:
        raise UsageError("doctor needs the runtime in this environment: pip install openenvgen-runtime")
    with located(package) as (package_id, folder), tempfile.TemporaryDirectory(prefix="openenv-gen-doctor-") as tmp:
        out = Path(tmp) / "report.json"
        command = [sys.executable, "-m", RUNTIME_DOCTOR, package_id, "--out", str(out)]
        command += ["--path", str(folder)] if folder is not None else []
        command += ["--base-url", base_url] if base_url else []
        command += ["--episodes", str(episodes), "--group-size", str(group_size), "--max-steps", str(max_steps)]
        command += ["--capacity-bound", str(capacity_bound), "--timeout", str(timeout)]
        command += ["--thresholds", limits.model_dump_json()]
        command += credential_settings(access)
        for setting in settings or []:
            command += ["--set", setting]
        code = subprocess.run(command, check=False).returncode
        if code != 0 or not out.is_file():
            if code in (130, *RUNTIME_DOCTOR_ERRORS):
                raise typer.Exit(code)  # interrupted, or its one error line is already on stderr
            raise SourceError(f"doctor: {package} could not be measured (the runtime's doctor exited {code})")
        # The renderer (the report's models, Jinja, the plots) only once there is a report:
        # importing it with the command tree would slow every other command.
        from openenvgen.reporting.report import exit_status, load_report, render_html, report_json, terminal_summary

        report = load_report(out.read_bytes())
    if html is not None:
        _write(html, render_html(report))
    if as_json:
        sys.stdout.write(report_json(report))
    else:
        console().print(terminal_summary(report))
    raise typer.Exit(exit_status(report))


def _thresholds(pairs: list[str]) -> Thresholds:
    values: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in THRESHOLD_NAMES:
            raise UsageError(f"--threshold {pair!r}: expected NAME=VALUE, NAME one of {', '.join(THRESHOLD_NAMES)}")
        try:
            values[name] = json.loads(value)
        except json.JSONDecodeError:
            raise UsageError(f"--threshold {pair!r}: {value!r} is not a number") from None
    try:
        return Thresholds.model_validate(values)
    except ValueError as e:
        raise UsageError(f"--threshold: {str(e).splitlines()[-1].strip()}") from None


def _write(path: Path, text: str) -> None:
    """Write the page whole or not at all (a temporary file beside it, renamed over it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as f:
            f.write(text)
        Path(f.name).replace(path)
    except OSError as e:
        raise OutputError(f"--html {path}: {e.strerror or e}") from None

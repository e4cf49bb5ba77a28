"""The doctor's report rendered three ways, all pure and deterministic: a terminal summary
(a verdict line per check), `--json` text, and one self-contained HTML page; plus the exit
status a report calls for.

Text that came from the env is untrusted. The HTML page escapes it (Jinja's autoescape, no
`|safe` anywhere), allows nothing to load (a `default-src 'none'` content security policy,
no URL in the page), and draws its plots as inline SVG. The terminal gets it as plain
`rich.text.Text` (never markup) on one line, with control characters shown as escapes, so a
server message cannot restyle or move the cursor. Lone surrogates become U+FFFD so every
output encodes as UTF-8.
"""

from __future__ import annotations

import json
import re
import statistics

import jinja2
import pydantic
from rich.console import Group, RenderableType
from rich.text import Text

from openenvgen import __version__
from openenvgen.errors import SchemaError
from openenvgen.generation.layout import templates_dir
from openenvgen.reporting.plots import Plot, capacity_plot, histogram_plot, number
from openenvgen_schemas.doctor_report import SCHEMA_VERSION, Check, DoctorReport, EpisodeData, RewardData, Verdict

__all__ = [
    "FAILED_EXIT_CODE",
    "TITLES",
    "exit_status",
    "load_report",
    "render_html",
    "report_json",
    "terminal_summary",
]

FAILED_EXIT_CODE = 1
"""`doctor`'s exit status when any check failed (as `check` exits 1 for a stale package)."""
TITLES = {
    "latency": "Latency",
    "capacity": "Session capacity",
    "session_release": "Session release",
    "determinism": "Determinism",
    "rewards": "Reward sanity",
    "schema_fidelity": "Schema fidelity",
    "episodes": "Episodes",
}
"""Each check's title, in the order the page lists them."""
STYLES: dict[Verdict, str] = {"pass": "bold green", "warn": "bold yellow", "fail": "bold red"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def exit_status(report: DoctorReport) -> int:
    """0 unless a check failed (a warning never fails a run): then `FAILED_EXIT_CODE`."""
    return FAILED_EXIT_CODE if any(check.verdict == "fail" for check in report.checks) else 0


def report_json(report: DoctorReport) -> str:
    """`--json`: the report's fields in the model's order, two-space indented, ASCII only."""
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=True) + "\n"


def load_report(text: str | bytes) -> DoctorReport:
    """A report read back from `--json` text; anything else is a one-line `SchemaError`."""
    try:
        return DoctorReport.model_validate_json(text)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        raise SchemaError(f"not a doctor report of schema version {SCHEMA_VERSION}: {where}: {first['msg']}") from None


def one_line(text: str, limit: int = 200) -> str:
    """Untrusted text for a terminal: one line, control characters as `\\xNN`, at most `limit`
    characters (an ellipsis marks a cut)."""
    text = _SURROGATE.sub("\ufffd", text)
    text = _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _counts(report: DoctorReport) -> dict[Verdict, int]:
    return {verdict: sum(check.verdict == verdict for check in report.checks) for verdict in STYLES}


def terminal_summary(report: DoctorReport) -> RenderableType:
    """A header line, a verdict line per check (`PASS  Latency  <summary>`), and the outcome."""
    width = max(map(len, TITLES.values()))
    lines = [
        Text.assemble(
            (check.verdict.upper().ljust(4), STYLES[check.verdict]),
            "  ",
            (TITLES[check.name].ljust(width), "bold"),
            "  ",
            one_line(check.summary),
            no_wrap=True,
            overflow="ellipsis",
        )
        for check in report.checks
    ]
    counts = _counts(report)
    outcome = Text.assemble(
        ("doctor: ", "bold"),
        (f"{counts['fail']} failed", STYLES["fail"] if counts["fail"] else ""),
        f", {counts['warn']} warned, {counts['pass']} passed",
        f" (exit {exit_status(report)})",
    )
    header = Text.assemble(
        ("env ", "dim"),
        (one_line(report.env_id, 80), "bold"),
        (f"  launch {report.launch}  episodes {report.episodes}", "dim"),
        no_wrap=True,
        overflow="ellipsis",
    )
    return Group(header, *lines, outcome)


def _reward_stats(data: RewardData) -> list[tuple[str, str]]:
    values = data.values
    flat = sum(group.variance == 0 for group in data.groups)
    rows = [("rewards", str(len(values))), ("non-finite", str(data.non_finite))]
    if values:
        rows += [
            ("min", number(min(values))),
            ("mean", number(statistics.fmean(values))),
            ("max", number(max(values))),
            ("distinct values", str(len(set(values)))),
        ]
    if data.groups:
        rows.append(("groups with zero variance", f"{flat} of {len(data.groups)}"))
    return rows


def _episode_stats(data: EpisodeData, episodes: int) -> list[tuple[str, str]]:
    lengths = data.lengths
    played = len(lengths) or episodes
    rows = [("episodes", str(played)), ("errors", str(data.errors))]
    if played:
        rows.append(("done rate", f"{100 * data.done / played:.0f}% ({data.done} of {played})"))
    if lengths:
        rows += [
            ("length min", str(min(lengths))),
            ("length median", number(statistics.median(lengths))),
            ("length max", str(max(lengths))),
        ]
    return rows


def _plots(check: Check) -> list[Plot]:
    match check.name:
        case "latency":
            return [
                histogram_plot("latency", "Step latency", check.data.step.samples_ms, "ms"),
                histogram_plot("latency", "Reset latency", check.data.reset.samples_ms, "ms"),
            ]
        case "capacity":
            return [capacity_plot(check.data.points)]
        case "rewards":
            return [histogram_plot("rewards", "Reward distribution", check.data.values, "reward")]
        case "episodes":
            return [histogram_plot("episodes", "Episode length", [float(n) for n in check.data.lengths], "steps")]
    return []


def _stats(check: Check, report: DoctorReport) -> list[tuple[str, str]]:
    match check.name:
        case "rewards":
            return _reward_stats(check.data)
        case "episodes":
            return _episode_stats(check.data, report.episodes)
    return []


_ENVIRONMENT: jinja2.Environment | None = None


def _environment() -> jinja2.Environment:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        _ENVIRONMENT = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(templates_dir() / "doctor")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        _ENVIRONMENT.filters["num"] = lambda value: "–" if value is None else number(value)
        _ENVIRONMENT.filters["clean"] = lambda value: _SURROGATE.sub("\ufffd", str(value))
    return _ENVIRONMENT


def render_html(report: DoctorReport) -> str:
    """The `--html` page: one file, inline CSS and SVG, nothing to fetch; the same report
    always gives the same text."""
    sections = [
        {"check": check, "title": TITLES[check.name], "plots": _plots(check), "stats": _stats(check, report)}
        for check in report.checks
    ]
    page = (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            sections=sections,
            counts=_counts(report),
            exit_status=exit_status(report),
            version=__version__,
        )
    )
    return _SURROGATE.sub("\ufffd", page)

"""The doctor's report: its JSON round trip and versioning, the terminal's verdict lines, the
exit status, and an HTML page that is self-contained, deterministic and escapes the env's text."""

from __future__ import annotations

import io
import json
import math
import re
from html.parser import HTMLParser

import pytest
from pydantic import ValidationError
from rich.console import Console

from openenvgen.cli.base import console
from openenvgen.errors import SchemaError
from openenvgen.reporting.plots import capacity_plot, histogram, histogram_plot
from openenvgen.reporting.report import (
    FAILED_EXIT_CODE,
    TITLES,
    exit_status,
    load_report,
    render_html,
    report_json,
    terminal_summary,
)
from openenvgen_schemas.doctor_report import DoctorReport, Latency, RewardData, RewardGroup
from openenvgen_testsupport.doctor_reports import sample_report


def terminal(report: DoctorReport, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system="truecolor", force_terminal=True, file=io.StringIO())
    console.print(terminal_summary(report))
    return console.export_text(styles=False)


def test_one_verdict_line_per_check_and_the_outcome() -> None:
    lines = terminal(sample_report()).splitlines()
    assert len(lines) == 1 + len(TITLES) + 1
    verdicts = [re.match(r"(PASS|WARN|FAIL)\s+(.+?)\s{2,}", line) for line in lines[1:-1]]
    assert [(m.group(1), m.group(2)) for m in verdicts if m] == [
        ("PASS", "Latency"),
        ("WARN", "Session capacity"),
        ("PASS", "Session release"),
        ("FAIL", "Determinism"),
        ("PASS", "Reward sanity"),
        ("FAIL", "Schema fidelity"),
        ("PASS", "Episodes"),
    ]
    assert lines[0].startswith("env wordle  launch uv  episodes 24")
    assert lines[-1] == "doctor: 2 failed, 1 warned, 4 passed (exit 1)"


def test_the_terminal_shows_env_text_inert_on_one_line_each() -> None:
    out = io.StringIO()
    console = Console(width=400, record=True, color_system="truecolor", force_terminal=True, file=out)
    console.print(terminal_summary(sample_report(hostile=True)))
    raw = out.getvalue()
    assert "\x1b[2J" not in raw and "\x1b]0;" not in raw and "\x07" not in raw and "\ud800" not in raw
    text = console.export_text(styles=False)
    assert len(text.splitlines()) == 1 + len(TITLES) + 1  # the hostile \n\r broke no line
    assert "[bold red]markup[/bold red]" in text and "\\x1b[2J\\x1b]0;owned\\x07" in text  # shown, not obeyed


def test_piped_or_redirected_the_summary_keeps_full_lines() -> None:
    """Not on a terminal (a CI log), rich would cut each line at 80 columns ("reset p95 2.2 …")."""
    out = io.StringIO()
    console(file=out).print(terminal_summary(sample_report()))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 + len(TITLES) + 1
    assert max(map(len, lines)) > 80 and not any(line.rstrip().endswith("…") for line in lines), lines
    assert "\x1b[" not in out.getvalue()  # no colour codes in a file


def test_exit_status_is_non_zero_only_when_a_check_fails() -> None:
    assert exit_status(sample_report(fail=True)) == FAILED_EXIT_CODE != 0
    passing = sample_report(fail=False)
    assert any(check.verdict == "warn" for check in passing.checks) and exit_status(passing) == 0


@pytest.mark.parametrize("hostile", [False, True])
def test_json_round_trips_with_a_stable_key_order(hostile: bool) -> None:
    report = sample_report(hostile=hostile)
    text = report_json(report)
    assert text.isascii() and text == report_json(load_report(text))
    assert load_report(text) == report
    assert list(json.loads(text)) == ["schema_version", "env_id", "launch", "episodes", "thresholds", "checks"]
    assert [check["name"] for check in json.loads(text)["checks"]] == list(TITLES)
    if hostile:  # the lone surrogate became U+FFFD on the way in, so JSON and UTF-8 take it
        assert "\ud800" not in report.env_id and "\ufffd" in report.env_id


def test_a_document_of_another_version_or_shape_is_one_clear_error() -> None:
    document = json.loads(report_json(sample_report()))
    with pytest.raises(SchemaError, match=r"^not a doctor report of schema version 1: schema_version: "):
        load_report(json.dumps({**document, "schema_version": 2}))
    with pytest.raises(SchemaError, match="checks.0.latency.data.step.p50_ms"):
        document["checks"][0]["data"]["step"]["p50_ms"] = "fast"
        load_report(json.dumps(document))
    with pytest.raises(SchemaError, match="Invalid JSON"):
        load_report("{")


def test_the_model_refuses_non_finite_numbers_and_computes_its_statistics() -> None:
    with pytest.raises(ValidationError):
        RewardData(values=(1.0, math.nan))
    with pytest.raises(ValidationError):
        RewardData(values=(math.inf,))
    latency = Latency.of([float(n) for n in range(1, 101)])
    assert (latency.p50_ms, latency.p95_ms, round(latency.p99_ms, 2)) == (50.5, 95.05, 99.01)
    assert Latency.of([]).p99_ms == 0.0
    assert RewardGroup.of("t", [1.0, 1.0]).variance == 0.0 and RewardGroup.of("t", [0.0, 1.0]).variance == 0.25


def test_histograms_and_the_capacity_curve() -> None:
    assert histogram([]) == [] and histogram([2.0, 2.0]) == [(1.5, 2.5, 2)]
    assert [n for _, _, n in histogram([0.0, 1.0, 2.0, 3.0], bins=2)] == [2, 2]
    assert sum(n for _, _, n in histogram([float(n) for n in range(1000)])) == 1000
    assert histogram_plot("rewards", "R", [], "reward").empty
    plot = histogram_plot("rewards", "R", [0.0, 0.0, 1.0], "reward")
    assert [bar.height for bar in plot.bars] == [184.0, 92.0] and not plot.empty
    report = sample_report()
    points = report.checks[1].data.points  # type: ignore[union-attr]
    curve = capacity_plot(points)
    assert [m.refused for m in curve.markers] == [False, False, False, False, True]
    assert len(curve.line.split()) == len(points)


class Page(HTMLParser):
    """Every tag and attribute of a page, and the text of its <script> and <style> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.scripts += tag == "script"


def parsed(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


LINKS = ("src", "href", "xlink:href", "action", "srcset", "poster", "data", "formaction")


@pytest.mark.parametrize("hostile", [False, True])
def test_the_page_references_nothing_outside_itself(hostile: bool) -> None:
    html = render_html(sample_report(hostile=hostile))
    page = parsed(html)
    references = [(tag, name, value) for tag, attrs in page.tags for name, value in attrs.items() if name in LINKS]
    assert all(tag == "a" and name == "href" and (value or "").startswith("#") for tag, name, value in references)
    assert not any(tag in ("link", "img", "iframe", "object", "embed", "base") for tag, _ in page.tags)
    assert "url(" not in html and "@import" not in html
    csp = [attrs for tag, attrs in page.tags if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")
    if not hostile:
        assert "http://" not in html and "https://" not in html and "//" not in html.replace("<!--", "")


def test_the_envs_text_is_escaped_everywhere_it_lands() -> None:
    html = render_html(sample_report(hostile=True))
    page = parsed(html)
    assert page.scripts == 0
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    assert "<script>" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert html.count("&lt;/td&gt;&lt;/table&gt;") >= 8  # env id, summaries, tables: every place
    assert "\ud800" not in html and "\ufffd" in html
    html.encode("utf-8")


def test_the_page_is_the_same_for_the_same_report() -> None:
    first = render_html(sample_report())
    assert first == render_html(load_report(report_json(sample_report())))
    assert first.count("<svg") == 5  # step and reset latency, capacity, rewards, episode length
    assert first.count('class="bar"') > 10 and "<polyline" in first

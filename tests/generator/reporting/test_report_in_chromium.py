"""The doctor's HTML page opened offline in headless Chromium: it loads from a file with
nothing else, runs no script, and its plots are drawn (the screenshot's pixels inside each
plot are the plot's colours, not a blank frame).

Skipped, with one summary line, when no chromium is installed (.ci/run installs it).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from openenvgen.reporting.report import render_html
from openenvgen_testsupport.browser import FLAGS, Chromium, chromium_executable
from openenvgen_testsupport.doctor_reports import sample_report
from openenvgen_testsupport.skips import skip_loudly

WIDTH = 1100
PLOTS = """
(() => {
  const box = (element) => { const r = element.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; };
  return {
    height: document.documentElement.scrollHeight,
    scripts: document.scripts.length,
    resources: performance.getEntriesByType("resource").length,
    title: document.title,
    plots: [...document.querySelectorAll("figure.plot")].map((figure) => ({
      kind: figure.className, caption: figure.querySelector("figcaption").textContent,
      chart: figure.querySelector("svg.chart") ? box(figure.querySelector("svg.chart")) : null,
      marks: [...figure.querySelectorAll("rect.bar, circle, polyline")]
        .filter((mark) => { const r = mark.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length,
    })),
  };
})()
"""


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Iterator[Chromium]:
    if chromium_executable() is None:
        skip_loudly(
            request.config, "doctor report in a browser", "no chromium on PATH (Debian: apt-get install chromium)"
        )
    with Chromium(WIDTH, 900) as opened:
        yield opened


def screenshot(page: Path, height: int, out: Path) -> Image.Image:
    """The page at WIDTH x `height`, as Chromium's own `--screenshot` takes it."""
    executable = chromium_executable()
    assert executable is not None
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        flags = [flag for flag in FLAGS if not flag.startswith("--remote-debugging")]
        subprocess.run(
            [
                executable,
                *flags,
                f"--user-data-dir={profile}",
                "--force-device-scale-factor=1",
                f"--window-size={WIDTH},{height}",
                f"--screenshot={out}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return Image.open(out).convert("RGB")


def coloured(image: Image.Image, box: dict[str, float]) -> tuple[int, int]:
    """Pixels inside `box` that are a plot's colour (saturated), and of them the red ones."""
    region = image.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]), int(box["y"] + box["height"])))
    raw = region.tobytes()
    pixels = [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3)]
    saturated = [p for p in pixels if max(p) - min(p) > 80]
    return len(saturated), sum(1 for r, g, b in saturated if r > 150 and g < 90 and b < 90)


@pytest.mark.parametrize("hostile", [False, True])
def test_the_page_opens_offline_runs_nothing_and_draws_its_plots(
    browser: Chromium, tmp_path: Path, hostile: bool
) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(sample_report(hostile=hostile)), "utf-8")
    found: dict[str, Any] = browser.evaluate(page.as_uri(), PLOTS)
    assert found["scripts"] == 0 and found["resources"] == 0
    assert found["title"].startswith("Doctor: ")
    captions = [plot["caption"] for plot in found["plots"]]
    assert captions == ["Step latency", "Reset latency", "Capacity curve", "Reward distribution", "Episode length"]
    assert all(plot["chart"] and plot["chart"]["width"] >= 400 and plot["marks"] >= 2 for plot in found["plots"])
    image = screenshot(page, int(found["height"]), tmp_path / "report.png")
    assert image.size == (WIDTH, int(found["height"]))
    for plot in found["plots"]:
        drawn, red = coloured(image, plot["chart"])
        assert drawn > 500, f"{plot['caption']}: {drawn} coloured pixels; the plot did not render"
        if plot["caption"] == "Capacity curve":
            assert red > 20, "the refused point's red marker is missing"
    blank = {"x": 0, "y": found["height"] - 40, "width": 40, "height": 40}
    assert coloured(image, blank) == (0, 0)  # and the measure can tell a blank region

"""The documentation site's tables, measured in headless Chromium at a 1,400 x 900 window.

Material lets inline code break anywhere, and its content column beside two sidebars is
688 px at that width, so generated tables used to split identifiers (`system_promp` + `t`,
`openenv/w` + `ordle`) and run past their column. docs/stylesheets/tables.css keeps code in
a table cell on one line, and the generated pages are laid out to fit (docs/reference.py).
Here the site is built, served on loopback and every page with a table is opened in
Chromium over the DevTools protocol; a script in the page reports each code span in a cell
that takes more than one line box, each cell whose content overflows it, and each table
wider than its column. Only raw data tables of many columns (the benchmark runs) may be
wider: they scroll sideways in their wrapper, and nothing of them may be clipped.
Skipped, with one summary line, when no chromium is installed (.ci/run installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from openenvgen_testsupport.browser import Chromium, chromium_executable, page_url, serve_directory
from openenvgen_testsupport.paths import ROOT
from openenvgen_testsupport.skips import skip_loudly

WINDOW = (1400, 900)
GENERATED_PAGES = [
    "catalog.md",
    "reference/options.md",
    "reference/cli.md",
    "reference/exit-codes.md",
    "reference/modules.md",
    "benchmarks.md",
]
"""The pages docs/gen_pages.py writes, each with at least one table."""
DATA_TABLE_COLUMNS = 8
"""A table of more columns than this is raw data: it may scroll sideways, never clip."""

LAYOUT_PROBLEMS = """
(() => {
  const problems = [];
  document.querySelectorAll("article table").forEach((table, index) => {
    const headers = [...table.querySelectorAll("th")].map((th) => th.textContent.trim());
    const where = `table ${index + 1} (${headers.slice(0, 6).join(" | ")})`;
    for (const code of table.querySelectorAll("td code, th code")) {
      const lines = code.getClientRects().length;
      if (lines !== 1) problems.push(`${where}: \\`${code.textContent}\\` takes ${lines} lines`);
    }
    for (const cell of table.querySelectorAll("td, th")) {
      if (cell.scrollWidth > cell.clientWidth + 1)
        problems.push(`${where}: "${cell.textContent.trim().slice(0, 40)}" overflows its cell ` +
                      `(${cell.scrollWidth} > ${cell.clientWidth} px)`);
    }
    const wrapper = table.closest(".md-typeset__scrollwrap") || table.parentElement;
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(wrapper).overflowX);
    if (table.scrollWidth > table.clientWidth + 1)
      problems.push(`${where}: clips its content (${table.scrollWidth} > ${table.clientWidth} px)`);
    if (wrapper.scrollWidth > wrapper.clientWidth + 1) {
      const size = `${wrapper.scrollWidth} px wide in a ${wrapper.clientWidth} px column`;
      if (headers.length <= DATA_TABLE_COLUMNS) problems.push(`${where}: ${size}`);
      else if (!scrolls) problems.push(`${where}: ${size}, clipped (its wrapper does not scroll)`);
    }
  });
  return problems;
})()
""".replace("DATA_TABLE_COLUMNS", str(DATA_TABLE_COLUMNS))
"""A page's layout problems, as sentences (none: an empty list)."""


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Iterator[Chromium]:
    if chromium_executable() is None:
        skip_loudly(request.config, "docs layout tests", "no chromium on PATH (Debian: apt-get install chromium)")
    with Chromium(*WINDOW) as opened:
        yield opened


class Site(NamedTuple):
    folder: Path
    url: str


@pytest.fixture(scope="module")
def site(browser: Chromium, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The site built from this checkout, served on loopback."""
    folder = tmp_path_factory.mktemp("docs") / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=560,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    with serve_directory(folder) as url:
        yield Site(folder, url)


def pages_with_tables(site_folder: Path) -> list[str]:
    """Every page of a built site that holds a table, as its source path (`catalog.md`)."""
    pages = []
    for html in sorted(site_folder.rglob("index.html")):
        if "<table" in html.read_text("utf-8"):
            relative = html.parent.relative_to(site_folder)
            pages.append("index.md" if relative == Path(".") else f"{relative.as_posix()}.md")
    return pages


@pytest.mark.timeout(900)
def test_no_table_breaks_an_identifier_or_runs_past_its_column(site: Site, browser: Chromium) -> None:
    pages = pages_with_tables(site.folder)
    assert set(GENERATED_PAGES) <= set(pages), f"generated pages without a table: {set(GENERATED_PAGES) - set(pages)}"
    problems = {page: browser.evaluate(page_url(site.url, page), LAYOUT_PROBLEMS) for page in pages}
    found = {page: lines for page, lines in problems.items() if lines}
    assert not found, "tables laid out badly at 1,400 px:\n" + "\n".join(
        f"{page}: {line}" for page, lines in found.items() for line in lines
    )


@pytest.mark.timeout(900)
def test_the_check_fails_on_material_s_own_table_styles(site: Site, browser: Chromium) -> None:
    """Without docs/stylesheets/tables.css, Material breaks the options page's identifiers
    mid-word: the check above sees it."""
    without_fix = "document.querySelector('link[href$=\"stylesheets/tables.css\"]').remove();\n" + LAYOUT_PROBLEMS
    problems = browser.evaluate(page_url(site.url, "reference/options.md"), without_fix)
    assert any("`--env.taskset.system-prompt` takes" in line for line in problems), problems
    # And a table wider than its column is caught: the catalog's, squeezed to 500 px.
    squeezed = "document.querySelector('article').style.maxWidth = '500px';\n" + LAYOUT_PROBLEMS
    problems = browser.evaluate(page_url(site.url, "catalog.md"), squeezed)
    assert any("px column" in line for line in problems), problems

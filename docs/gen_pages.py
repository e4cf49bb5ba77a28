"""mkdocs-gen-files script: writes the pages rendered from the code into the site at build time.

The reference pages (CLI, taskset options, exit codes, modules), the catalog and the
benchmarks page exist only in the built site, never in docs/, so they cannot go stale there;
How it works gets its package tree drawn from the code the same way.
"""

import sys
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs import reference  # noqa: E402  (needs the repository root on sys.path)

for path, render in reference.PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())

with mkdocs_gen_files.open("reference/modules.md", "w") as page:
    page.write(reference.modules_reference(ROOT))

# How it works is written by hand but for its package tree, drawn here from the code.
with mkdocs_gen_files.open("reference/how-it-works.md", "r") as page:
    written = page.read()
with mkdocs_gen_files.open("reference/how-it-works.md", "w") as page:
    page.write(reference.how_it_works_page(written, ROOT))

with mkdocs_gen_files.open("benchmarks.md", "w") as page:
    page.write(reference.benchmarks_page((ROOT / "bench" / "RESULTS.md").read_text("utf-8")))

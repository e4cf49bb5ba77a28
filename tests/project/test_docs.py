"""The documentation site: its reference pages come from the code, and it builds strictly.

The CLI, taskset-options and exit-code pages are rendered by docs/reference.py from the
typer app, the config classes and the error classes, so a new option or field shows up by
itself; these tests fail when one has no help text or docstring to show, and build the site
with `mkdocs build --strict` (a broken link or anchor, a page missing from the nav, or a
reference page that cannot be rendered fails it). The README stays short and its links
into the docs resolve.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
import typer
import yaml
from pydantic import Field

from docs import reference
from openenvgen_runtime.config import AdapterConfig
from openenvgen_runtime.episodes.seat import InProcessHarnessConfig
from openenvgen_testsupport.paths import ROOT

README = ROOT / "README.md"


# ------------------------------------------------------------------ every entry has its text


def test_every_command_and_option_of_the_cli_has_help() -> None:
    missing = reference.missing_cli_help(reference.cli_command())
    assert not missing, f"give these a help= text (they appear on the CLI reference page): {missing}"


def test_every_taskset_and_seat_field_has_a_docstring() -> None:
    missing = reference.missing_option_docs([AdapterConfig, InProcessHarnessConfig])
    assert not missing, f"give these fields a one-line docstring below them (the options page shows it): {missing}"


def test_every_error_class_has_a_docstring() -> None:
    assert reference.error_classes(), "no error classes found in openenvgen.errors"
    assert not reference.missing_error_docs()


def test_a_missing_help_or_docstring_is_caught() -> None:
    """The checks above can fail: an option without help, a field without a docstring."""
    app = typer.Typer()

    @app.command()
    def documented(flag: Annotated[bool, typer.Option("--flag", help="Says something.")] = False) -> None:
        """A command."""

    @app.command()
    def bare(quiet: Annotated[str | None, typer.Option("--quiet")] = None) -> None:
        pass

    assert reference.missing_cli_help(typer.main.get_command(app), prog="toy") == [
        "toy",
        "toy bare",
        "toy bare --quiet",
    ]

    class Extended(AdapterConfig):
        knob: int = Field(5, ge=1)
        """A knob."""
        bare_knob: str = "x"

    found = {option.name: option for option in reference.options(Extended)}
    assert found["knob"].doc == "A knob." and found["knob"].default == "`5`" and found["knob"].constraint == "≥ 1"
    assert reference.missing_option_docs([Extended], own=__name__) == [f"{__name__}.{Extended.__qualname__}.bare_knob"]


# ------------------------------------------------------------------ pages reflect the code


def test_the_options_page_lists_every_field_as_a_flag_and_a_toml_key() -> None:
    page = reference.options_reference()
    for name in AdapterConfig.model_fields:
        assert f"`--env.taskset.{name.replace('_', '-')}`" in page, name
        assert f"| `{name}`<br>" in page, name
    max_servers = next(line for line in page.splitlines() if line.startswith("| `max_servers`"))
    assert "`int`" in max_servers and "`4` (≥ 1)" in max_servers
    on_drift = next(line for line in page.splitlines() if line.startswith("| `on_drift`"))
    assert '`"warn" | "error" | "ignore"`' in on_drift


def test_the_cli_page_lists_every_command_and_option() -> None:
    root = reference.cli_command()
    page = reference.cli_reference(root)
    for name, command in root.commands.items():
        assert f"## `{name}`" in page
        for param in command.params:
            if param.name != "help" and param.param_type_name == "option":
                assert f"`{param.opts[0]}`" in page, (name, param.opts)


def test_the_exit_codes_page_has_every_error_class_and_code() -> None:
    page = reference.exit_codes_reference()
    for cls in reference.error_classes():
        row = next(line for line in page.splitlines() if line.startswith(f"| {cls.exit_code} |"))
        assert f"`{cls.__name__}`" in row
    # The codes `play` and `doctor` pass on from the runtime are the runtime's own constants.
    from openenvgen_runtime.launching import errors as runtime

    assert set(reference.RUNTIME_OUTCOMES) == {runtime.USAGE_EXIT, runtime.UNAVAILABLE_EXIT, runtime.SOFTWARE_EXIT}


def test_the_catalog_page_has_every_catalog_env() -> None:
    from openenvgen import catalog

    page = reference.catalog_reference()
    for name, entry in catalog.entries().items():
        assert f"| {name} | `{entry.env_id}` |" in page
    for env_dir in reference.catalog_data().get("unavailable", {}):
        assert f"| {env_dir} |" in page


def test_how_it_works_draws_every_module_of_the_generator() -> None:
    page = reference.how_it_works_page((ROOT / "docs" / "reference" / "how-it-works.md").read_text("utf-8"), ROOT)
    assert reference.TREE_MARKER not in page
    tree = page.split("```text\n")[2].split("```")[0]  # the flow diagram is the first block
    folder = ROOT / reference.PACKAGES["openenvgen"]
    for path in folder.rglob("*.py"):
        if path.stem != "__init__":
            assert re.search(rf"── {re.escape(path.name)} +\d", tree), path.relative_to(folder)
    for init in folder.glob("*/__init__.py"):
        assert re.search(rf"── {init.parent.name}/ +\d ", tree), init.parent.name


def test_the_package_tree_follows_the_layers_lines(tmp_path: Path) -> None:
    """Bottom layer first at every level, sublayers numbered inside their layer, rails drawn."""
    folder = tmp_path / "toy"
    (folder / "inner").mkdir(parents=True)
    (folder / "__init__.py").write_text('"""Toy: the top.\n\nLayers: low < inner < top\n"""\n')
    (folder / "top.py").write_text('"""The top module.\n\nMore text.\n"""\n')
    (folder / "low.py").write_text('"""The low module."""\n')
    (folder / "stray.py").write_text("x = 1\n")
    (folder / "inner" / "__init__.py").write_text('"""Inside.\n\nLayers: b < a\n"""\n')
    (folder / "inner" / "a.py").write_text('"""A."""\n')
    (folder / "inner" / "b.py").write_text('"""B."""\n')
    assert reference.package_tree(tmp_path, "toy").splitlines() == [
        "```text",
        "toy/          layer  Toy: the top.",
        "├── low.py    0      The low module.",
        "├── inner/    1      Inside.",
        "│   ├── b.py  1.0    B.",
        "│   └── a.py  1.1    A.",
        "├── top.py    2      The top module.",
        "└── stray.py",
        "```",
    ]
    with pytest.raises(ValueError):
        reference.how_it_works_page("# no marker\n", tmp_path)


def test_the_benchmarks_page_is_bench_results_one_level_down() -> None:
    page = reference.benchmarks_page(
        "# Benchmark results\n\n## Headline\n\nSee [the runner](run.py).\n\n```\n# not a heading\n```\n"
    )
    assert "### Headline" in page and "# Benchmark results" not in page
    assert "the runner (`bench/run.py`)" in page
    assert "# not a heading" in page and "## not a heading" not in page


# ------------------------------------------------------------------ the FAQ quotes the code

# FAQ entries this check cannot trace to one string of the code.
NOT_ONE_STRING = {
    "No matching distribution found for openenvgen-runtime",  # pip's
    "PKG: edited: MODULE/models.py",  # a line of `check`'s report, not an error message
    "http://HOST:PORT/health: ConnectError: [Errno 111] Connection refused",  # the URL, then httpx's error
    "custom.py: reward fragile raised ZeroDivisionError: ...",  # the hook's label, then its exception
}


def _message_patterns() -> list[re.Pattern[str]]:
    """Every string the generator, runtime, schemas and servers hold with at least 10 fixed characters,
    as a pattern in which each f-string placeholder matches anything."""
    patterns = []
    for folder in ("generator", "runtime", "schemas", "servers"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.JoinedStr):
                    values = node.values
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    values = [node]
                else:
                    continue
                fixed = [v.value for v in values if isinstance(v, ast.Constant)]
                if sum(map(len, fixed)) >= 10:
                    parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in values]
                    patterns.append(re.compile("".join(parts), re.DOTALL))
    return patterns


def test_every_faq_message_is_one_the_code_prints() -> None:
    """Each error the FAQ quotes (in bold code) is a message the code can print, with its
    variable parts in capitals or as examples: a reworded message fails here until the FAQ
    follows."""
    patterns = _message_patterns()
    quoted = re.findall(r"\*\*``? ?(.+?) ?``?\*\*", (ROOT / "docs" / "faq.md").read_text("utf-8"))
    assert len(quoted) >= 30
    stale = []
    for message in quoted:
        if message in NOT_ONE_STRING:
            continue
        if any(p.fullmatch(message) for p in patterns):
            continue
        covered = max((len(m.group(0)) for p in patterns if (m := p.search(message))), default=0)
        if covered < 0.6 * len(message):
            stale.append(message)
    assert not stale, f"the FAQ quotes messages the code no longer prints: {stale}"


# ------------------------------------------------------------------ the site


def _missing_docs_tools() -> str | None:
    missing = [m for m in ("mkdocs", "material", "mkdocs_gen_files") if importlib.util.find_spec(m) is None]
    return (
        f"the docs extra is not installed ({', '.join(missing)}): pip install -c constraints.txt -e '.[docs]'"
        if missing
        else None
    )


@pytest.mark.timeout(600)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    reason = _missing_docs_tools()
    if reason:
        pytest.skip(reason)
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=560,
        env=env,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = list(_nav_pages(nav))
    for page in pages:
        assert (site / page.removesuffix(".md") / "index.html").is_file() or page == "index.md", page
    # The generated pages made it into the site, with what the code holds today.
    options = html.unescape((site / "reference" / "options" / "index.html").read_text())
    assert all(f"--env.taskset.{name.replace('_', '-')}" in options for name in AdapterConfig.model_fields)
    cli = html.unescape((site / "reference" / "cli" / "index.html").read_text())
    assert all(name in cli for name in reference.cli_command().commands)
    how = html.unescape((site / "reference" / "how-it-works" / "index.html").read_text())
    assert reference.TREE_MARKER not in how and "── lifecycle/" in how


def test_the_site_build_can_fail(tmp_path: Path) -> None:
    """Strict really is strict: a link to a page that does not exist fails the build."""
    reason = _missing_docs_tools()
    if reason:
        pytest.skip(reason)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Toy\n\n[gone](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: toy\nstrict: true\nnav:\n  - index.md\n")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
    )
    assert build.returncode != 0
    assert "missing.md" in build.stdout + build.stderr


def _nav_pages(nav: object):
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


def test_every_page_in_docs_is_in_the_nav() -> None:
    nav = set(_nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    generated = set(reference.PAGES) | {"benchmarks.md", "reference/modules.md"}
    assert written - nav == set(), "pages in docs/ but not in mkdocs.yml's nav"
    assert nav - written - generated == set(), "nav entries with no page"


# ------------------------------------------------------------------ the README and the workflow


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 150, f"README.md has {len(text.splitlines())} lines; the rest belongs in docs/"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in local), "the README links into the docs"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_the_readme_training_block_is_the_training_page_s() -> None:
    """The README's prime-rl block is copied from docs/training.md, line for line, so the two
    never disagree: every line of it appears, in order, in a block of that page."""
    section = README.read_text("utf-8").split("\n## Training\n", 1)
    assert len(section) == 2, "README.md has no Training section"
    body = section[1].split("\n## ", 1)[0]
    assert len(body.strip().splitlines()) <= 20, "the README's Training section is at most 20 lines"
    blocks = re.findall(r"^```toml\n(.*?)^```", body, re.MULTILINE | re.DOTALL)
    assert blocks, "the README's Training section has no prime-rl (toml) block"
    page = (ROOT / "docs" / "training.md").read_text("utf-8")
    page_blocks = [b.splitlines() for b in re.findall(r"^```toml\n(.*?)^```", page, re.MULTILINE | re.DOTALL)]

    def within(lines: list[str], block: list[str]) -> bool:
        found = iter(block)
        return all(line in found for line in lines)

    assert any(within(blocks[0].splitlines(), block) for block in page_blocks), (
        "the README's block differs from docs/training.md's"
    )


def test_the_docs_workflow_publishes_main_to_pages() -> None:
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "docs.yml").read_text())
    on = flow.pop(True, flow.get("on"))  # YAML 1.1 reads a bare `on` as true
    assert on["push"]["branches"] == ["main"]
    assert flow["permissions"] == {"contents": "read"}
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]
    runs = " ".join(step.get("run", "") for step in build["steps"])
    assert "mkdocs build --strict" in runs and ".[docs]" in runs and "-c constraints.txt" in runs
    uses = [step.get("uses", "").split("@")[0] for step in build["steps"] + deploy["steps"]]
    assert {"actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"} <= set(uses)
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["needs"] == "build" and "refs/heads/main" in deploy["if"]


def test_make_demo_leaves_nothing_untracked_in_the_clone() -> None:
    """What the README's `make demo` writes into a clone (the venv, the package it generates,
    its build/ log) is ignored by git, so `git status` stays clean after it."""
    recipe = (ROOT / "Makefile").read_text("utf-8").split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    generated = re.findall(r"openenv-gen (\w+)\s*$", recipe, re.MULTILINE)
    assert generated == ["wordle"], recipe
    written = [f"{name}-openenv/pyproject.toml" for name in generated] + [".venv/bin/python", "build/demo.log"]
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *written], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    assert sorted(ignored) == sorted(written)


def test_the_typed_client_snippet_runs_as_pasted_into_a_file(tmp_path: Path) -> None:
    """Exploring's `connect` snippet, saved as a file and run with `python`, against a real
    Wordle server (its URL in place of the page's)."""
    from openenvgen_testsupport.fixture_envs import make_wordle_app
    from openenvgen_testsupport.servers import serve_app

    page = (ROOT / "docs" / "guides" / "exploring.md").read_text("utf-8")
    (snippet,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.DOTALL) if "connect(" in b]
    with serve_app(make_wordle_app(), ready_path="/health") as url:
        script = tmp_path / "snippet.py"
        script.write_text(snippet.replace("http://127.0.0.1:8001", str(url).rstrip("/")), "utf-8")
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    *prompt, reward, done = run.stdout.split()
    assert "Guess the secret" in " ".join(prompt) and float(reward) >= 0 and done in ("True", "False"), run.stdout

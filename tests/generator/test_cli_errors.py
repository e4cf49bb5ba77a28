"""Bad input: one line on stderr, a documented exit code, nothing already written lost."""

from __future__ import annotations

import json
import os
import socket
import tomllib
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from openenvgen_testsupport.generating import assert_one_line_error, file_tree, gen
from openenvgen_testsupport.paths import BROKEN_SPECS, ROOT
from openenvgen_testsupport.servers import serve_app

EXPECTED = tomllib.loads((BROKEN_SPECS / "expected.toml").read_text())


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_broken_specs(case: str, tmp_path: Path) -> None:
    expect = EXPECTED[case]
    result = gen("broken", "--schema-file", str(BROKEN_SPECS / f"{case}.json"), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, expect["exit"], expect["message"])
    assert not (tmp_path / "out").exists()


def test_every_broken_spec_has_an_expectation() -> None:
    assert {p.stem for p in BROKEN_SPECS.glob("*.json")} == set(EXPECTED)


def test_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    from openenvgen import catalog

    result = gen("wordel", cwd=tmp_path)
    known = sorted(catalog.entries())
    assert {"chess", "coding", "connect4", "echo", "maze", "reasoning_gym", "wordle"} <= set(known)
    assert_one_line_error(result, 64, f"unknown env 'wordel'; did you mean wordle? known: {', '.join(known)}")
    assert list(tmp_path.iterdir()) == []


def test_a_catalog_name_is_matched_whatever_its_case(tmp_path: Path) -> None:
    result = gen("Wordle", "--no-scaffold", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["wordle-openenv"]


def test_an_env_the_catalog_cannot_run_is_refused_with_its_reason(tmp_path: Path) -> None:
    from openenvgen import catalog

    reason = catalog.unavailable()["calendar_env"]
    for name in ("calendar_env", "calendar"):
        result = gen(name, cwd=tmp_path)
        assert_one_line_error(result, 64, f"{name}: upstream's calendar_env cannot run here, so the catalog has no")
        assert reason.split(":")[0] in result.stderr
    assert list(tmp_path.iterdir()) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_url(tmp_path: Path) -> None:
    result = gen("x", "--base-url", f"http://127.0.0.1:{_closed_port()}", "--out", str(tmp_path / "o"))
    assert_one_line_error(result, 69, "ConnectError")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("routes", "fragment"),
    [
        ([], "HTTP 404"),
        ([Route("/health", lambda r: HTMLResponse("<html>hi</html>"))], "not JSON"),
        ([Route("/health", lambda r: JSONResponse({"ok": 1}))], "no 'status' field"),
        (
            [
                Route("/health", lambda r: JSONResponse({"status": "healthy"})),
                Route("/schema", lambda r: JSONResponse({"a": 1})),
            ],
            "no action/observation schemas",
        ),
        ([Route("/health", lambda r: JSONResponse({"status": "x"}, status_code=500))], "HTTP 500"),
    ],
    ids=["404", "html", "no-status", "no-schemas", "500"],
)
def test_not_an_openenv_server(routes, fragment: str, tmp_path: Path) -> None:
    with serve_app(Starlette(routes=routes), ready_path="/nonexistent-ok") as url:
        result = gen("x", "--base-url", str(url), "--out", str(tmp_path / "o"))
    assert_one_line_error(result, 69, fragment)
    assert not (tmp_path / "o").exists()


def test_nan_in_a_reply_is_bad_data_not_a_bad_source(tmp_path: Path) -> None:
    """NaN is not JSON: a server that sends it gives bad data (65), not a failed source (69)."""
    health = Route("/health", lambda r: Response('{"status": NaN}', media_type="application/json"))
    with serve_app(Starlette(routes=[health]), ready_path="/nonexistent-ok") as url:
        result = gen("x", "--base-url", str(url), "--out", str(tmp_path / "o"))
    assert_one_line_error(result, 65, f"{url}/health: not valid JSON (NaN is not a JSON number)")
    assert not (tmp_path / "o").exists()


def test_out_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("keep me")
    assert_one_line_error(gen("wordle", "--out", str(target)), 73, "is not a directory")
    assert target.read_text() == "keep me"


def test_out_is_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert_one_line_error(gen("wordle", "--out", str(tmp_path / "mine")), 73, "not a generated package")
    assert file_tree(tmp_path / "mine") == {"notes.txt": b"keep me"}


def test_failed_regeneration_leaves_the_package_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert gen("wordle", "--out", str(out)).returncode == 0
    (out / "NOTES.md").write_text("user file")
    before = file_tree(out)
    result = gen("wordle", "--schema-file", str(BROKEN_SPECS / "action_not_object.json"), "--out", str(out))
    assert result.returncode == 65
    assert file_tree(out) == before
    # A successful regeneration keeps the user's file.
    assert gen("wordle", "--out", str(out)).returncode == 0
    assert (out / "NOTES.md").read_text() == "user file"


def test_conflicting_sources(tmp_path: Path) -> None:
    result = gen("x", "--base-url", "http://127.0.0.1:1", "--schema-file", "f.json", cwd=tmp_path)
    assert_one_line_error(result, 64, "not both")


SUBCOMMAND_HELP = {
    "check": ("Re-render packages from their snapshots", "--upstream"),
    "list": ("Show the embedded catalog", "--json"),
}
"""Each subcommand's own help: its summary line and an option only it has."""


@pytest.mark.parametrize("name", sorted(SUBCOMMAND_HELP))
def test_subcommand_names_are_not_env_names(name: str, tmp_path: Path) -> None:
    # `openenv-gen list --help` is list's help; it never generates a package called "list"
    # (the default `generate` would also exit 0 on --help, with its own text).
    result = gen(name, "--help", cwd=tmp_path, env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    assert result.returncode == 0, result.stderr
    summary, option = SUBCOMMAND_HELP[name]
    assert f"Usage: openenv-gen {name} [OPTIONS]" in result.stdout
    assert summary in result.stdout and option in result.stdout
    assert "--no-scaffold" not in result.stdout  # an option of generate only
    assert list(tmp_path.iterdir()) == []


def test_reserved_package_names(tmp_path: Path) -> None:
    result = gen("wordle", "--package", "openenv-wordle", "--out", str(tmp_path / "o"))
    assert_one_line_error(result, 64, "reserved")
    result = gen("wordle", "--package", "textarena", "--out", str(tmp_path / "o"))
    assert_one_line_error(result, 64, "reserved")


def test_package_directory_gets_the_usual_mode(tmp_path: Path) -> None:
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    assert gen("wordle", "--out", str(tmp_path / "p")).returncode == 0
    assert stat.S_IMODE((tmp_path / "p").stat().st_mode) == 0o777 & ~umask


# --- help text and what `openenv-gen NAME` prints ----------------------------------------------

COMMANDS = ("generate", "list", "check", "regen", "publish", "capture")


def _help(*args: str, columns: int) -> str:
    result = gen(*args, "--help", env={"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"})
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("command", [(), *((c,) for c in COMMANDS)], ids=["openenv-gen", *COMMANDS])
def test_help_shows_no_python_type_labels(command: tuple[str, ...]) -> None:
    text = _help(*command, columns=120)
    for label in ("<bool>", "<str>", "<path>", "<float", "<list[", "<int>"):
        assert label not in text, (label, text)


def test_help_names_option_values() -> None:
    text = _help("check", columns=120)
    assert "[NAME=]URL" in text and "[NAME=]FILE" in text and "SECONDS" in text
    generate = _help("generate", columns=120)
    for metavar in ("URL", "FILE", "DIR", "ENV_ID", "DIST", "MODULE:ATTR"):
        assert f" {metavar} " in generate, metavar
    assert "./<package>" in generate  # placeholders survive the Markdown rendering


def test_help_reflows_docstrings_to_the_terminal() -> None:
    # Wide: each command's summary is one line, whatever its docstring's line breaks.
    wide = _help(columns=250)
    check_line = next(line for line in wide.splitlines() if " check " in line)
    assert "exit 1 with diffs if a generated file is stale" in check_line
    assert "entry. User-owned files are kept" in next(line for line in wide.splitlines() if " regen " in line)
    # Narrow: wrapped to the width, never past it.
    for command in ((), ("check",), ("generate",)):
        assert max(len(line) for line in _help(*command, columns=70).splitlines()) <= 70


def test_generate_ends_with_the_next_two_commands(tmp_path: Path) -> None:
    result = gen("wordle", "--no-scaffold", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # openenvgen-runtime is installed here, so the install needs only the package, with the
    # pins of the checkout openenv-gen runs from (as the README installs it).
    pins = os.path.relpath(ROOT / "constraints.txt", tmp_path)
    assert result.stdout.splitlines() == [
        "wrote wordle-openenv",
        "next: install it, then evaluate a model on it:",
        f"  pip install -c {pins} ./wordle-openenv",
        "  vf-eval wordle-openenv -m MODEL --no-push",
    ]
    elsewhere = gen("echo", "--no-scaffold", "--out", str(tmp_path / "my pkgs" / "echo"), cwd=tmp_path)
    assert elsewhere.stdout.splitlines()[-2:] == [
        f"  pip install -c {pins} '{tmp_path / 'my pkgs' / 'echo'}'",
        "  vf-eval echo-openenv -m MODEL --no-push",
    ]


def test_version() -> None:
    from openenvgen import __version__

    result = gen("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"openenv-gen {__version__}\n", "")


def test_bare_command_prints_the_help_and_nothing_else() -> None:
    result = gen(env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == gen("--help", env={"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}).stdout
    assert "Usage: openenv-gen [OPTIONS] COMMAND [ARGS]..." in result.stdout


def test_every_subcommand_of_the_tree_is_refused_as_an_env_name(tmp_path: Path) -> None:
    import typer.main

    from openenvgen.cli import app

    names = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]  # a group
    assert {"generate", "list", "check", "regen", "publish", "capture", "play", "doctor", "replay"} == set(names)
    for name in names:
        result = gen("generate", name, "--out", str(tmp_path / name))
        assert_one_line_error(result, 64, f"{name!r} is a subcommand, not an env name")
    assert list(tmp_path.iterdir()) == []


def test_check_of_a_file_outside_every_package_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# notes\n")
    result = gen("check", "README.md", cwd=tmp_path)
    assert_one_line_error(result, 64, "README.md: not in a generated package")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(gen("check", "empty", cwd=tmp_path), 64, "empty: not a generated package")
    # A hook that passes every changed file says so; a file outside every package is then skipped.
    skipped = gen("check", "--skip-outside", "README.md", cwd=tmp_path)
    assert (skipped.returncode, skipped.stderr) == (0, ""), skipped.stderr


def test_another_packages_folder_is_refused_then_replaced_only_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert gen("wordle", "--out", str(out)).returncode == 0
    (out / "wordle_openenv" / "custom.py").write_text("# my wordle hooks\n")
    before = file_tree(out)
    refused = gen("echo", "--out", str(out))
    assert_one_line_error(refused, 73, "holds another package, wordle-openenv; pass --replace")
    assert file_tree(out) == before
    replaced = gen("echo", "--out", str(out), "--replace")
    assert replaced.returncode == 0, replaced.stderr
    aside = tmp_path / "pkg.wordle-openenv.old"
    assert f"moved wordle-openenv (with your files in it) from {out} to {aside}" in replaced.stdout
    assert file_tree(aside) == before  # nothing of the user's is lost
    assert json.loads((out / "openenv-gen.lock").read_text())["package"] == "echo-openenv"
    assert not any("wordle" in rel for rel in file_tree(out))  # and nothing of wordle's lingers
    assert "wordle" not in (out / "CHANGELOG.md").read_text().lower()
    # A folder already set aside is never overwritten: refused, nothing moved.
    assert gen("wordle", "--out", str(out)).returncode == 73
    (tmp_path / "pkg.echo-openenv.old").mkdir()
    again = gen("maze", "--out", str(out), "--replace")
    assert_one_line_error(again, 73, "exists (an earlier replaced package?)")
    assert json.loads((out / "openenv-gen.lock").read_text())["package"] == "echo-openenv"
    assert file_tree(aside) == before

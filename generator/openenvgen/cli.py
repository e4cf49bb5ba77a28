"""The `openenv-gen` command's entry point: `--version` at once; `openenv-gen NAME` for a
catalog env (with `--out`, `--env-id`, `--package`, `--app`, `--no-scaffold`) on a fast path;
everything else through the typer app of `commands.py`, `maintainer_commands.py` and
`play_command.py`, imported only then (typer, its pydantic coercion and click take longer to
import than the interpreter takes to start).

The fast path reads exactly what typer would make of those arguments (any other form, `-h`
included, goes to typer), answers from the generation memo when it can (`generation.memo`: no
pydantic, Jinja or typer imported) and else runs the same generation as the `generate`
command; it prints what that command prints.

Errors print one line to stderr and exit with the code their class documents (see
errors.py and the exit-codes reference in docs/).
"""

from __future__ import annotations

import sys

from openenvgen import __version__
from openenvgen.errors import GenError, UsageError


def __getattr__(name: str) -> object:  # no `typing` import: it alone costs ~10 ms
    """`openenvgen.cli.app`, the typer app (docs/reference.py reads its command tree), on first use."""
    if name == "app":
        import openenvgen.maintainer_commands  # noqa: F401  (registers publish and capture)
        import openenvgen.play_command  # noqa: F401  (registers play)
        from openenvgen.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SUBCOMMANDS = frozenset({"generate", "list", "check", "regen", "publish", "capture", "play"})
"""The typer app's commands (a test keeps this in step): never an env name on the fast path."""
_FAST_OPTIONS = {"--out": "out", "-o": "out", "--env-id": "env_id", "--package": "package", "--app": "app"}
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def fast_generate_args(args: list[str]) -> dict[str, str | bool | None] | None:
    """`openenv-gen NAME [--out DIR] [--env-id ID] [--package DIST] [--app APP]
    [--no-scaffold]` as the `generate` command's arguments (`--opt=value` too, the last of a
    repeated option winning, as click does); None for anything else, which typer parses."""
    if not args or args[0] in SUBCOMMANDS or not _env_name(args[0]):
        return None
    parsed: dict[str, str | bool | None] = {"name": args[0], "no_scaffold": False}
    rest = args[1:]
    while rest:
        token = rest.pop(0)
        if token == "--no-scaffold":
            parsed["no_scaffold"] = True
            continue
        option, eq, value = token.partition("=")
        if option not in _FAST_OPTIONS or (eq and option == "-o"):
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        # A value typer could read otherwise (another option, nothing) is left to typer.
        if not value or value.startswith("-"):
            return None
        parsed[_FAST_OPTIONS[option]] = value
    return parsed


def _env_name(text: str) -> bool:
    """Whether `text` is a valid env name (`spec.validate_name` without its import): a
    lowercase letter, then up to 63 lowercase letters, digits and underscores."""
    return 0 < len(text) <= 64 and "a" <= text[0] <= "z" and set(text) <= _NAME_CHARS


def _echo(text: str, err: bool = False) -> None:
    """`typer.echo`, for the fast path's plain text: ANSI codes stripped off a terminal, as click does."""
    import re

    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", text)
    stream.write(f"{text}\n")
    stream.flush()


def _generate(args: dict[str, str | bool | None]) -> None:
    """`openenv-gen NAME ...` from the catalog: the memo's answer, else the `generate` command's run."""
    from pathlib import Path

    from openenvgen.generation.memo import Memo

    def text(key: str) -> str | None:
        value = args.get(key)
        return value if isinstance(value, str) else None

    given = text("out")
    name, out, scaffold = str(args["name"]), Path(given) if given else None, not args["no_scaffold"]
    env_id, package, app = text("env_id"), text("package"), text("app")
    try:
        memo = Memo.open(name, env_id=env_id, package=package, app=app, scaffold=scaffold)
        written = memo.replay(out) if memo is not None else None
        if written is None:
            from openenvgen.generation.package import generate_package

            written = generate_package(
                name, out=out, env_id=env_id, package=package, app=app, scaffold=scaffold, memo=memo
            )
        from openenvgen.generation.report import next_steps

        _echo(f"wrote {written}")
        _echo(next_steps(written))
    except GenError as e:
        _echo(f"openenv-gen: error: {e}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)  # as typer exits on Ctrl-C
    sys.exit(0)


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"openenv-gen {__version__}")
        sys.exit(0)
    fast = fast_generate_args(sys.argv[1:])
    if fast is not None:
        _generate(fast)
    import typer

    import openenvgen.maintainer_commands  # noqa: F401  (registers publish and capture)
    import openenvgen.play_command  # noqa: F401  (registers play)
    from openenvgen.commands import TyperClickException, app

    try:
        # Without standalone mode click *returns* a typer.Exit's code instead of exiting.
        code = app(standalone_mode=False)
    except GenError as e:
        typer.echo(f"openenv-gen: error: {e}", err=True)
        sys.exit(e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("openenv-gen: aborted", err=True)
        sys.exit(130)
    except TyperClickException as e:
        typer.echo(f"openenv-gen: error: {e.format_message()}", err=True)
        sys.exit(UsageError.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()

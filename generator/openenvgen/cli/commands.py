"""The subcommands, each named once: the name typed → the function (`module:function`) of the
module that declares it. `tree` builds the typer app from this table, and `main` reads it
before any of those modules (or typer) is imported, to tell `openenv-gen NAME` apart."""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "generate": "generate:generate",
    "list": "listing:list_envs",
    "check": "check:check",
    "regen": "regen:regen",
    "publish": "publish:publish",
    "capture": "capture:capture",
    "play": "play:play",
    "doctor": "doctor:doctor",
}
"""Every subcommand, in the order help lists them. These names are never env names:
`openenv-gen NAME` is `generate NAME` for any other first word, and `generate` refuses them."""


def generates(args: list[str]) -> bool:
    """Whether a command line may generate a package: `generate …` or `openenv-gen NAME …`
    (any first word that is not another subcommand or an option)."""
    return bool(args) and (args[0] == "generate" or (args[0] not in COMMANDS and not args[0].startswith("-")))

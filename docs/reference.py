"""The site's reference pages, rendered from the code so they cannot drift from it.

Pure functions, each returning one page's Markdown: the CLI (from the typer app), the
taskset and seat options (from the config classes' fields and their docstrings), the exit
codes (from the error classes), the catalog (from the embedded catalog.toml), the modules
(from their docstrings and each package's `Layers:` line) and the generator's tree on How it
works. `docs/gen_pages.py` writes them into the site at build time (mkdocs-gen-files);
tests/project/test_docs.py checks that nothing they list lacks its help text or docstring.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import textwrap
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- the CLI


def cli_command() -> Any:
    """The click command tree typer builds from `openenvgen.cli.main`'s app."""
    import typer.main

    from openenvgen.cli import app

    return typer.main.get_command(app)


def _params(command: Any) -> list[Any]:
    return [p for p in command.params if p.name != "help"]


def _subcommands(group: Any) -> list[tuple[str, Any]]:
    commands = getattr(group, "commands", {})
    return [(name, commands[name]) for name in sorted(commands)]


def missing_cli_help(root: Any, prog: str = "openenv-gen") -> list[str]:
    """Every command or parameter without help, named as it is typed (`openenv-gen check --json`)."""
    missing = [prog] if not (root.help or "").strip() else []
    missing += [f"{prog} {p.opts[0]}" for p in _params(root) if not (getattr(p, "help", None) or "").strip()]
    for name, command in _subcommands(root):
        if not (command.help or "").strip():
            missing.append(f"{prog} {name}")
        for param in _params(command):
            if not (getattr(param, "help", None) or "").strip():
                missing.append(f"{prog} {name} {param.opts[0] if param.param_type_name == 'option' else param.name}")
    return missing


def _cell(text: str) -> str:
    """One Markdown table cell: a single line, pipes escaped outside code spans (inside
    one, a pipe never splits the cell and an escape would show)."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    return "".join(part if i % 2 else part.replace("|", "\\|") for i, part in enumerate(parts))


def _param_row(param: Any) -> str:
    if param.param_type_name == "argument":
        metavar = param.metavar or param.name.upper()
        name = f"`{metavar}`" + (" ..." if param.nargs == -1 else "")
        default = "required" if param.required else "optional"
    else:
        names = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
        metavar = "" if param.is_flag else f" `{param.metavar}`" if param.metavar else ""
        repeatable = param.multiple and "repeatable" not in (param.help or "").lower()
        name = names + metavar + (" (repeatable)" if repeatable else "")
        if param.required:
            default = "required"
        elif param.is_flag or param.default in (None, (), []):
            default = ""
        else:
            default = f"`{param.default}`"
    return f"| {name} | {_cell(param.help or '')} | {default} |"


def _usage(command: Any, path: str) -> str:
    parts = [path]
    if any(p.param_type_name == "option" for p in _params(command)):
        parts.append("[OPTIONS]")
    for param in command.params:
        if param.param_type_name == "argument":
            metavar = param.metavar or param.name.upper()
            metavar += " ..." if param.nargs == -1 else ""
            parts.append(metavar if param.required else f"[{metavar}]")
    return " ".join(parts)


def cli_reference(root: Any | None = None, prog: str = "openenv-gen") -> str:
    """The CLI page: every command, argument and option with its help and default."""
    root = root if root is not None else cli_command()
    out = [
        "# CLI reference",
        "",
        "Generated from the typer app in `generator/openenvgen/cli/` at every build; "
        f"`{prog} COMMAND --help` prints the same text. `{prog} NAME` (no command) means "
        f"`{prog} generate NAME`. Exit codes: see [Exit codes](exit-codes.md).",
        "",
        "```text",
        f"{prog} [--version] COMMAND ...",
        "```",
        "",
        _cell(root.help or ""),
        "",
        "| option | meaning | default |",
        "|---|---|---|",
        *(_param_row(p) for p in _params(root)),
        "| `-h`, `--help` | Show the help and exit. | |",
        "",
    ]
    for name, command in _subcommands(root):
        out += [f"## `{name}`", "", "```text", _usage(command, f"{prog} {name}"), "```", ""]
        out += [textwrap.dedent(command.help or "").strip(), ""]
        rows = [_param_row(p) for p in _params(command)]
        if rows:
            out += ["| argument or option | meaning | default |", "|---|---|---|", *rows, ""]
    return "\n".join(out)


# ---------------------------------------------------------------- config options


@dataclass(frozen=True)
class Option:
    name: str
    type: str
    default: str
    constraint: str
    doc: str
    owner: str  # the class that declares the field, as module.Class


def field_docstrings(cls: type) -> dict[str, str]:
    """The attribute docstrings of one class's own fields (the string after `name: T = ...`)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(json.dumps(value) for value in typing.get_args(annotation))
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    if text is None:
        text = repr(annotation)
    text = re.sub(r"\b(typing|pathlib|collections\.abc|verifiers(\.\w+)*)\.", "", text)
    return text.replace("NoneType", "None").replace("<class '", "").replace("'>", "")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.is_required():
        return "required"
    else:
        value = field.default
    if hasattr(value, "model_dump"):
        return f"`{type(value).__name__}()`"
    return (
        f"`{json.dumps(value)}`"
        if isinstance(value, (str, int, float, bool, list, dict, type(None)))
        else f"`{value!r}`"
    )


def _constraint(field: Any) -> str:
    bounds = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    parts = []
    for item in field.metadata:
        for attr, symbol in bounds.items():
            value = getattr(item, attr, None)
            if value is not None:
                parts.append(f"{symbol} {value}")
    return ", ".join(parts)


def options(cls: type, *, own_only: bool = False) -> list[Option]:
    """The fields of a pydantic config class in declaration order, with their docstrings
    (found on whichever class of its MRO declares each one)."""
    docs: dict[str, tuple[str, str]] = {}
    for base in reversed(cls.__mro__):
        for name, doc in field_docstrings(base).items():
            docs[name] = (doc, f"{base.__module__}.{base.__qualname__}")
    base_fields = set()
    if own_only:
        for base in cls.__mro__[1:]:
            base_fields |= set(getattr(base, "model_fields", {}))
    found = []
    for name, field in cls.model_fields.items():
        if name in base_fields:
            continue
        doc, owner = docs.get(name, ("", _declared_in(cls, name)))
        found.append(
            Option(
                name=name,
                type=_type_name(field.annotation),
                default=_default(field),
                constraint=_constraint(field),
                doc=doc,
                owner=owner,
            )
        )
    return found


def _declared_in(cls: type, name: str) -> str:
    for base in cls.__mro__:
        if name in getattr(base, "__annotations__", {}):
            return f"{base.__module__}.{base.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def missing_option_docs(classes: list[type], own: str = "openenvgen_runtime") -> list[str]:
    """Each field declared in the modules under `own` (this project's) without a docstring."""
    return [
        f"{option.owner}.{option.name}"
        for cls in classes
        for option in options(cls)
        if option.owner.startswith(own) and not option.doc.strip()
    ]


WIDE_PAGE = ["---", "hide:", "  - toc", "---", ""]
"""Front matter of a page of wide tables: no table of contents beside them, so that they fit a
1,400 px window (tests/project/test_docs_layout.py measures them in Chromium)."""


def _flag(prefix: str, name: str) -> str:
    return f"--{prefix}.{name.replace('_', '-')}"


def _options_table(found: list[Option], prefix: str) -> list[str]:
    # Three columns, the name over its flag and the type over its default, so that the
    # meaning has room beside them.
    rows = ["| option | type, default | meaning |", "|---|---|---|"]
    for option in found:
        default = option.default + (f" ({option.constraint})" if option.constraint else "")
        source = "" if option.owner.startswith("openenvgen_runtime") else " *(verifiers)*"
        rows.append(
            f"| `{option.name}`<br>`{_flag(prefix, option.name)}` | {_cell('`' + option.type + '`')}<br>"
            f"default {_cell(default)} | {_cell(option.doc)}{source} |"
        )
    return rows


def options_reference() -> str:
    """The taskset (and player seat) options page."""
    from verifiers.v1 import HarnessConfig

    from openenvgen_runtime.config import AdapterConfig
    from openenvgen_runtime.episodes.seat import InProcessHarnessConfig

    taskset = options(AdapterConfig)
    seat = options(InProcessHarnessConfig, own_only=True)
    example = next(o for o in taskset if o.name == "max_servers")
    out = [
        *WIDE_PAGE,
        "# Taskset options",
        "",
        "Every option of a generated package's taskset: the fields of "
        "`openenvgen_runtime.AdapterConfig`, generated from the class and its docstrings at every "
        "build. A generated package subclasses it, with its own default `env` and UV "
        "`app` (`PROVIDER_DEFAULTS`).",
        "",
        "Set one on the command line as `--env.taskset.NAME VALUE` (dashes for underscores), or in a "
        "config file passed with `@` (`vf-eval wordle-openenv -m MODEL --no-push @ eval.toml`), under "
        "`[env.taskset]` with the field's own name:",
        "",
        "```bash",
        f"vf-eval wordle-openenv -m MODEL --no-push {_flag('env.taskset', example.name)} 8",
        "```",
        "",
        "```toml",
        "[env.taskset]",
        f"{example.name} = 8",
        "```",
        "",
        "Lists and dictionaries take JSON on the command line (`--env.taskset.base-url "
        '\'["http://10.0.0.5:8000", "http://10.0.0.6:8000"]\'`), and a dictionary\'s keys can be '
        "set one by one (`--env.taskset.provider-kwargs.image wordle-env:latest`).",
        "",
        "## `[env.taskset]`",
        "",
        *_options_table(taskset, "env.taskset"),
        "",
        "## `[env.player.harness]`: the in-process seat",
        "",
        "The seat every generated package bundles (`openenvgen_runtime.InProcessHarness`) is "
        "verifiers' default player; `--env.player.harness.id null` (or another id) picks another.",
        "",
    ]
    if seat:
        out += [
            "Its own options, beside verifiers' harness options:",
            "",
            *_options_table(seat, "env.player.harness"),
            "",
        ]
    else:
        shared = ", ".join(f"`{name}`" for name in HarnessConfig.model_fields)
        out += [
            f"It adds no options of its own to verifiers' harness options ({shared}).",
            "",
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- exit codes

# Codes the CLI returns itself, not through an error class (generator/openenvgen/cli/).
CLI_OUTCOMES = {
    0: "success (`check`: everything up to date; bare `openenv-gen` prints the help)",
    1: "`check`: a generated file is stale, missing, extra or hand-edited, or the hooks in `custom.py` do not "
    "type-check against the package's models; "
    "`capture`: an env named with `--only` failed, or none could be captured",
    2: "`check --upstream`: the environment's live schema (or the `--schema-file` schema) differs from the package's "
    "snapshot; a model-level diff is printed",
    130: "interrupted (Ctrl-C)",
}
# Codes `play`, `doctor` and `replay` pass on from the runtime's process (openenvgen_runtime.launching.errors).
RUNTIME_OUTCOMES = {
    64: "`play`, `doctor`: a bad argument (a package not found, a bad `--set`)",
    69: "`play`, `doctor`: the env could not be started or reached, or its server failed; `replay`: the port is in use",
    70: "`play`: any other failure",
}


def error_classes() -> list[type]:
    from openenvgen import errors

    return sorted(
        (obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, errors.GenError)),
        key=lambda cls: (cls.exit_code, cls.__name__),
    )


def _sysexits_name(cls: type) -> str:
    match = re.search(r"exit_code\s*=\s*\d+\s*#\s*(EX_[A-Z]+)", inspect.getsource(cls))
    return match.group(1) if match else ""


def exit_codes_reference() -> str:
    rows: dict[int, list[str]] = {code: [meaning] for code, meaning in CLI_OUTCOMES.items()}
    for cls in error_classes():
        name = _sysexits_name(cls)
        doc = inspect.cleandoc(cls.__doc__ or "")
        rows.setdefault(cls.exit_code, []).append(f"`{cls.__name__}`{f' ({name})' if name else ''}: {doc}")
    for code, meaning in RUNTIME_OUTCOMES.items():
        rows.setdefault(code, []).append(meaning)
    out = [
        "# Exit codes",
        "",
        "Generated from `generator/openenvgen/errors.py` (one class per kind of failure, each with "
        "its code; sysexits(3) numbers, so they never collide with `check`'s 1 and 2). Every error "
        "is one line on stderr, `openenv-gen: error: ...`, and nothing already written is lost. "
        "The [FAQ](../faq.md) lists the messages themselves.",
        "",
        "| code | meaning |",
        "|---|---|",
    ]
    out += [f"| {code} | {'<br>'.join(_cell(text) for text in rows[code])} |" for code in sorted(rows)]
    return "\n".join(out) + "\n"


def missing_error_docs() -> list[str]:
    return [cls.__name__ for cls in error_classes() if not (cls.__doc__ or "").strip()]


# ---------------------------------------------------------------- the catalog


def catalog_data() -> dict[str, Any]:
    from openenvgen.catalog.reader import read_catalog

    return read_catalog()


def _reason(why: Any) -> str:
    """An `[unavailable]` entry: its reason, as a string or a table with a `reason` (and the
    `command` tried)."""
    if not isinstance(why, dict):
        return str(why)
    command = f" (tried: `{why['command']}`)" if why.get("command") else ""
    return f"{why.get('reason', '')}{command}"


def catalog_reference() -> str:
    """The catalog page: every env of the embedded catalog, and the upstream envs left out."""
    from openenvgen import catalog
    from openenvgen.catalog.listing import catalog_json

    entries = catalog.entries()
    raw = catalog_data()
    source = raw.get("source", {})
    commit = source.get("commit", "")
    listed = catalog_json()["envs"]
    out = [
        *WIDE_PAGE,
        "# The catalog",
        "",
        f"Generated from `generator/openenvgen/catalog/data/catalog.toml` at every build: {len(listed)} envs of "
        f"[{source.get('repo', 'huggingface/OpenEnv')}]"
        f"(https://github.com/{source.get('repo', 'huggingface/OpenEnv')}) "
        f"(commit `{commit[:8]}`), each captured by the project itself "
        "(see [Regeneration and CI](guides/regeneration.md#recapturing-the-catalog)). "
        "`openenv-gen NAME` generates the package of any of them; `openenv-gen list` (or `--json`) "
        "prints the same list, and `generated/` holds a checked-in package for each.",
        "",
        "Env ids are the Hugging Face Spaces upstream deploys to (`openenv/<env dir>`; TextArena "
        "is published per game, so Wordle is `openenv/wordle`), apps are the installed "
        "`<env dir>.server.app:app`, and each entry carries an action hint, an example action and "
        "the episode the capture plays. After a template or catalog change, regenerate the "
        "packages with `openenv-gen NAME --out generated/PACKAGE --no-scaffold`.",
        "",
        "`seed` is whether the env honours a reset's `seed`, as the capture measured it: "
        "*reproducible* (the seed decides the episode), *deterministic* (no randomness seen), "
        "*not_reproducible* (rollouts of one task start from different states), *unmeasured*.",
        "",
        "*code* says `runs` for an env whose server runs the code its model writes: its package "
        "refuses the UV launch unless `allow_host_execution` is set ([Security](guides/security.md)).",
        "",
        # Short cells only: the long texts (actions, hints, why no episode) get tables of their
        # own below, so that every column fits a 1,400 px window.
        "| name | env id | package | seed | plays an episode here | code |",
        "|---|---|---|---|---|---|",
    ]
    about = {env["name"]: raw["envs"].get(env["name"], {}) for env in listed}
    no_episode = {name: entry["no_episode"] for name, entry in about.items() if "no_episode" in entry}
    for env in listed:
        episode = f"no ([why](#{NO_EPISODE_ANCHOR}))" if env["name"] in no_episode else "yes"
        known = entries.get(env["name"])
        seed = (getattr(known.defaults, "seed_verdict", None) if known else None) or "not measured"
        runs = "runs" if known is not None and known.defaults.executes_code else ""
        out.append(f"| {env['name']} | `{env['env_id']}` | `{env['package']}` | {seed} | {episode} | {runs} |")
    needs = {name: entry.defaults.server_env for name, entry in entries.items() if entry.defaults.server_env}
    out += [
        "",
        "## Envs whose server needs your variables",
        "",
        "Their packages pass these variables of yours to every server they launch (which gets "
        "nothing else of your environment), and a run where one is not set says so in one "
        "warning line ([Security](guides/security.md)):",
        "",
        "| name | variables |",
        "|---|---|",
        *(f"| {name} | {', '.join(f'`{v}`' for v in names)} |" for name, names in needs.items()),
    ]
    out += [
        "",
        f"## Envs that play no episode here {{#{NO_EPISODE_ANCHOR}}}",
        "",
        "Each has its package, but no episode of it could be played where the catalog was captured:",
        "",
        "| name | why |",
        "|---|---|",
        *(f"| {name} | {_cell(why)} |" for name, why in no_episode.items()),
        "",
        "## Actions",
        "",
        "How each package's model acts (*typed*: the fields of its action model; *MCP*: the tools it calls) "
        "and what its system prompt tells the model about acting:",
        "",
        "| name | action | action hint |",
        "|---|---|---|",
        *(
            f"| {env['name']} | {_cell(_action(env))} | {_cell(about[env['name']].get('action_hint', ''))} |"
            for env in listed
        ),
    ]
    unavailable = raw.get("unavailable", {})
    if unavailable:
        out += [
            "",
            "## Not in the catalog",
            "",
            "Upstream env folders that cannot be captured here (`[unavailable]` in `catalog.toml`):",
            "",
            "| env folder | why |",
            "|---|---|",
            *(f"| {name} | {_cell(_reason(why))} |" for name, why in unavailable.items()),
        ]
    return "\n".join(out) + "\n"


NO_EPISODE_ANCHOR = "no-episode-here"
"""The catalog page's section on the envs that play no episode here."""


def _action(env: dict[str, Any]) -> str:
    """A listed env's action: its MCP tools or its action model's fields, each in code."""
    if env["action"] == "mcp":
        return "MCP: " + ", ".join(f"`{tool['name']}`" for tool in env["tools"] or [])
    return "typed: " + (", ".join(f"`{field['name']}`" for field in env["fields"] or []) or "(no fields)")


# ---------------------------------------------------------------- modules

PACKAGES = {
    "openenvgen_schemas": "schemas/openenvgen_schemas",
    "openenvgen_servers": "servers/openenvgen_servers",
    "openenvgen": "generator/openenvgen",
    "openenvgen_runtime": "runtime/openenvgen_runtime",
}
"""Import name → folder in the repository, bottom package first."""


@dataclass(frozen=True)
class Module:
    """One module or subpackage of a distribution, where its package's `Layers:` line puts it."""

    name: str
    """Dotted, relative to the distribution: `cli`, `generation`, `generation.render`."""
    layer: str
    """`4` (a layer of the distribution), `4.1` (a layer inside subpackage 4), "" when no line places it."""
    doc: str
    """The module's docstring (a subpackage's: its `__init__`'s)."""
    is_package: bool
    depth: int
    """0 for the distribution's own modules and subpackages, 1 inside a subpackage, ..."""

    @property
    def first_line(self) -> str:
        """The docstring's first line: its summary."""
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else ""


def _summary(doc: str) -> str:
    """A docstring's first paragraph, on one line."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _doc(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""


def layers_line(doc: str) -> list[list[str]]:
    """A docstring's `Layers:` (or `Layers (...):`) line, bottom up: `a, b < c` → [[a, b], [c]].
    The line may wrap after a `,` or a `<`."""
    found = re.search(r"^Layers\b(?:.*[,<]\n)*.*", doc, re.MULTILINE)
    line = " ".join(found.group().split()) if found else ""
    return [[name.strip() for name in part.split(",")] for part in line.split(":", 1)[-1].split(" < ")] if line else []


def module_tree(folder: Path, prefix: str = "", layer: str = "", depth: int = 0) -> list[Module]:
    """Every module and subpackage under a package folder, depth first, each level in the order
    of its package's `Layers:` line (bottom layer first; modules it leaves out last)."""
    children: dict[str, Path] = {path.stem: path for path in folder.glob("*.py") if path.stem != "__init__"}
    children |= {path.name: path for path in folder.iterdir() if (path / "__init__.py").is_file()}
    level = {name: i for i, names in enumerate(layers_line(_doc(folder / "__init__.py"))) for name in names}
    found: list[Module] = []
    for name in sorted(children, key=lambda name: (level.get(name, len(level)), name)):
        path = children[name]
        is_package = path.is_dir()
        here = f"{layer}.{level[name]}" if layer and name in level else str(level[name]) if name in level else layer
        doc = _doc(path / "__init__.py" if is_package else path)
        found.append(Module(f"{prefix}{name}", here, doc, is_package, depth))
        if is_package:
            found += module_tree(path, f"{prefix}{name}.", here, depth + 1)
    return found


def modules_reference(root: Path) -> str:
    """Every module of our four packages, layer by layer as each `__init__.py` states them."""
    out = [
        "# Modules",
        "",
        "Generated from the modules' own docstrings, in the layers each package's `__init__.py` "
        "states (a module imports only modules of lower layers; `tests/project/test_layering.py` holds "
        "the code to it). Bottom layer first; `4.1` is layer 1 of the subpackage in layer 4. "
        "[How it works](how-it-works.md) draws the generator's tree.",
        "",
    ]
    for package, folder in PACKAGES.items():
        out += [f"## `{package}`", "", _summary(_doc(root / folder / "__init__.py")), ""]
        out += ["| layer | module | what it does |", "|---|---|---|"]
        for module in module_tree(root / folder):
            name = f"`{module.name}`" + (" (subpackage)" if module.is_package else "")
            out.append(f"| {module.layer or '(none yet)'} | {name} | {_cell(_summary(module.doc))} |")
        out.append("")
    return "\n".join(out)


def package_tree(root: Path, folder: str = PACKAGES["openenvgen"]) -> str:
    """A package drawn as a tree: each subpackage and module with its layer and the first line of
    its docstring, each level bottom layer first."""
    modules = module_tree(root / folder)
    rows = [(f"{folder}/", "layer", _doc(root / folder / "__init__.py").strip().splitlines()[0])]
    for i, module in enumerate(modules):
        # Whether a later module sits at each depth decides the rails: `├──`/`└──` and `│`.
        later = [any(m.depth == d for m in _until_shallower(modules[i + 1 :], d)) for d in range(module.depth + 1)]
        rails = "".join("│   " if later[d] else "    " for d in range(module.depth))
        leaf = module.name.rsplit(".", 1)[-1] + ("/" if module.is_package else ".py")
        branch = "├── " if later[module.depth] else "└── "
        rows.append((f"{rails}{branch}{leaf}", module.layer, module.first_line))
    width = max(len(name) for name, _, _ in rows)
    layer_width = max(len(layer) for _, layer, _ in rows)
    lines = [f"{name:<{width}}  {layer:<{layer_width}}  {doc}".rstrip() for name, layer, doc in rows]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _until_shallower(modules: list[Module], depth: int) -> list[Module]:
    """The modules that follow, up to the first one shallower than `depth` (the subtree's end)."""
    out = []
    for module in modules:
        if module.depth < depth:
            break
        out.append(module)
    return out


TREE_MARKER = "<!-- the package tree: drawn from the code by docs/gen_pages.py -->"
"""Where How it works gets the generator's tree at build time."""


def how_it_works_page(page: str, root: Path) -> str:
    """docs/reference/how-it-works.md with the generator's tree drawn at its marker."""
    if page.count(TREE_MARKER) != 1:
        raise ValueError(f"how-it-works.md must hold {TREE_MARKER!r} once")
    return page.replace(TREE_MARKER, package_tree(root).rstrip("\n"))


# ---------------------------------------------------------------- benchmarks


def benchmarks_page(results: str) -> str:
    """The benchmarks page: how to run them, then bench/RESULTS.md as it stands (its own
    title dropped, its headings one level down, links into the repository shown as paths)."""
    lines = results.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    body, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        body.append(line)
    text = "\n".join(body)
    # A relative link in RESULTS.md points at a repository file, not at a page of the site.
    text = re.sub(r"(?<!!)\[([^\]]+)\]\((?!https?:|#|mailto:)([^)]+)\)", r"\1 (`bench/\2`)", text)
    return "\n".join(
        [
            *WIDE_PAGE,
            "# Benchmarks",
            "",
            "Speed claims live here, never in timed tests: every ratio is measured side by side in "
            "one run. `make bench` runs them all and writes `bench/out/results.json` and "
            "`bench/out/run.json`; `make bench QUICK=1` is the short run. The figures below are "
            "`bench/RESULTS.md` as of this build: each benchmark's latest kept run, where and when it ran.",
            "",
            "## Results",
            "",
            text,
            "",
        ]
    )


PAGES = {
    "reference/cli.md": cli_reference,
    "reference/options.md": options_reference,
    "reference/exit-codes.md": exit_codes_reference,
    "catalog.md": catalog_reference,
}
"""Site path → the function that renders it."""

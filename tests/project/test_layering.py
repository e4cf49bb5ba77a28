"""The tree is the architecture: no import cycles in generator/, runtime/, schemas/ or servers/, every
import goes down the layers each distribution's `__init__.py` states in its `Layers:` line (and
a subpackage's in its own, for its modules), and no module is over 400 lines.

Each order is stated there once: the docs draw it from those lines (docs/reference.py, the
Modules page), and no other docstring repeats it.

Modules are found recursively. A top-level module (`openenvgen.cli`) is its own layer; a
module inside a subpackage (`openenvgen.generation.render`) is in its subpackage's layer
(`generation`), as is the subpackage's `__init__`. An import between two layers must go to a
lower one; modules of one subpackage may import each other, as long as that makes no cycle.

Imports are read from the source (ast), function-level ones included: a lazy import that
closes a cycle is still a cycle, it only fails later. `from pkg import name` counts as an
import of the submodule `pkg.name` when there is one, else of the package itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from openenvgen_testsupport.paths import ROOT

PACKAGES = {
    "openenvgen_schemas": ROOT / "schemas" / "openenvgen_schemas",
    "openenvgen_servers": ROOT / "servers" / "openenvgen_servers",
    "openenvgen": ROOT / "generator" / "openenvgen",
    "openenvgen_runtime": ROOT / "runtime" / "openenvgen_runtime",
}
# Which of our distributions each may import: the schemas and the server helpers are shared
# (the servers' helpers read replies with the schemas' interface), and the generator and the
# runtime never import each other (the runtime ships without jinja2 and the rest).
MAY_IMPORT = {
    "openenvgen_schemas": {"openenvgen_schemas"},
    "openenvgen_servers": {"openenvgen_servers", "openenvgen_schemas"},
    "openenvgen": {"openenvgen", "openenvgen_schemas", "openenvgen_servers"},
    "openenvgen_runtime": {"openenvgen_runtime", "openenvgen_schemas", "openenvgen_servers"},
}
MAX_LINES = 400
"""A module longer than this is doing more than one job (issue #24's signal)."""


def modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Every module of the packages, nested ones included, by dotted name (a package's
    `__init__` by the package's own name)."""
    found = {}
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(path: Path, module: str, known: set[str], roots: set[str]) -> set[str]:
    """The modules of `roots` that the file at `path` (module `module`) imports anywhere in its body."""
    found: set[str] = set()
    # What a relative import is relative to: a package's own name, or a module's package.
    here = module if path.stem == "__init__" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] in roots)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{parent}.{base}" if base else parent
            if base.split(".")[0] not in roots:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def import_graph(packages: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of `packages` it imports."""
    known = modules(packages)
    return {name: imports(path, name, set(known), set(packages)) - {name} for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""


def stated_layers(init: Path) -> list[set[str]] | None:
    """The `Layers:` (or `Layers (...):`) line of a package's docstring, bottom up (`a, b < c < d`);
    None without one. The line may wrap after a `,` or a `<`."""
    found = re.search(r"^Layers\b(?:.*[,<]\n)*.*", _docstring(init), re.MULTILINE)
    if found is None:
        return None
    line = " ".join(found.group().split())
    return [{name.strip() for name in layer.split(",")} for layer in line.split(":", 1)[1].split(" < ")]


def layer_lines(packages: dict[str, Path]) -> dict[str, list[set[str]]]:
    """Every package whose `__init__` states a `Layers:` line (each distribution must; a
    subpackage may, for its own modules), by dotted name."""
    found = {}
    for name, path in modules(packages).items():
        layers = stated_layers(path) if path.name == "__init__.py" else None
        if layers is not None:
            found[name] = layers
    return found


def child(module: str, package: str) -> str | None:
    """The module or subpackage right below `package` that `module` is or is in; None for
    `package`'s own `__init__` (any of its modules may import it) and modules outside it."""
    if not module.startswith(f"{package}."):
        return None
    return module.removeprefix(f"{package}.").split(".")[0]


def layer_violations(graph: dict[str, set[str]], lines: dict[str, list[set[str]]]) -> list[str]:
    """For each package's `Layers:` line: each import between two of its layers that does not
    go to a strictly lower one, and each module or subpackage the line leaves out or names
    without it existing. Imports inside one subpackage are its own line's business."""
    problems = []
    for package, layers in sorted(lines.items()):
        level = {name: i for i, layer in enumerate(layers) for name in layer}
        own = {c for name in graph if (c := child(name, package)) is not None}
        line = f"{package}'s `Layers:` line"
        problems += [f"{package}.{name} is in no layer of {line}" for name in sorted(own - level.keys())]
        problems += [f"{line} names {name}, which is not in it" for name in sorted(level.keys() - own)]
        for name in sorted(graph):
            here = child(name, package)
            if here not in level:
                continue
            for target in sorted(graph[name]):
                there = child(target, package)
                if there is not None and there != here and there in level and level[there] >= level[here]:
                    problems.append(
                        f"{name} (layer {level[here]}: {here}) imports {target} (layer {level[there]}: {there})"
                    )
    return problems


def test_no_import_cycles() -> None:
    """Between any two modules, subpackages' own modules included."""
    found = cycles(import_graph(PACKAGES))
    assert not found, "import cycles: " + "; ".join(" ↔ ".join(c) for c in found)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_imports_follow_the_stated_layers(package: str) -> None:
    lines = layer_lines(PACKAGES)
    assert package in lines, f"{package}/__init__.py: its docstring has no `Layers: a, b < c < ...` line"
    mine = {name: layers for name, layers in lines.items() if name.split(".")[0] == package}
    problems = layer_violations(import_graph(PACKAGES), mine)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_each_distribution_imports_only_its_own_and_the_shared_schemas(package: str) -> None:
    graph = import_graph(PACKAGES)
    wrong = sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        if name.split(".")[0] == package
        for target in targets
        if target.split(".")[0] not in MAY_IMPORT[package]
    )
    assert not wrong, wrong


def long_modules(packages: dict[str, Path]) -> list[str]:
    """`module (lines)` for every module over MAX_LINES lines, longest first."""
    lengths = {name: len(path.read_text("utf-8").splitlines()) for name, path in modules(packages).items()}
    long = sorted(((n, name) for name, n in lengths.items() if n > MAX_LINES), reverse=True)
    return [f"{name} ({n})" for n, name in long]


def test_no_module_is_over_400_lines() -> None:
    """Every offender in one failure (not one per run): a long module is doing more than one job."""
    long = long_modules(PACKAGES)
    assert not long, f"modules over {MAX_LINES} lines: " + ", ".join(long)


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """A lazy import that closes a loop, an import that goes up (from a subpackage, and
    through a relative import), a module too long."""
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    (folder / "__init__.py").write_text('"""Toy.\n\nLayers: low < sub < high\n"""\n')
    (folder / "low.py").write_text("def f():\n    from pkg.high import g\n")
    (folder / "high.py").write_text("from pkg import low\nfrom . import low as again\n")
    (folder / "sub" / "__init__.py").write_text('"""The sub layer.\n\nLayers: b < a\n"""\n')
    (folder / "sub" / "a.py").write_text("from pkg.sub import b\nfrom pkg.low import f\n")
    (folder / "sub" / "c.py").write_text("from . import a\n")
    (folder / "sub" / "b.py").write_text("from ..high import g\n" + "x = 1\n" * MAX_LINES)
    graph = import_graph({"pkg": folder})
    assert graph["pkg.low"] == {"pkg.high"} and graph["pkg.high"] == {"pkg.low"}
    assert graph["pkg.sub.a"] == {"pkg.sub.b", "pkg.low"} and graph["pkg.sub.b"] == {"pkg.high"}
    assert cycles(graph) == [["pkg.high", "pkg.low"]]
    lines = layer_lines({"pkg": folder})
    assert lines == {"pkg": [{"low"}, {"sub"}, {"high"}], "pkg.sub": [{"b"}, {"a"}]}
    assert layer_violations(graph, lines) == [
        "pkg.low (layer 0: low) imports pkg.high (layer 2: high)",
        "pkg.sub.b (layer 1: sub) imports pkg.high (layer 2: high)",
        "pkg.sub.c is in no layer of pkg.sub's `Layers:` line",
    ]
    assert long_modules({"pkg": folder}) == [f"pkg.sub.b ({MAX_LINES + 1})"]

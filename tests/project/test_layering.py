"""No import cycles in generator/, runtime/ or schemas/, and every import goes down the layers
each package's `__init__.py` states in its `Layers:` line.

Imports are read from the source (ast), function-level ones included: a lazy import that
closes a cycle is still a cycle, it only fails later. `from pkg import name` counts as an
import of the submodule `pkg.name` when there is one, else of the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "openenvgen_schemas": ROOT / "schemas" / "openenvgen_schemas",
    "openenvgen": ROOT / "generator" / "openenvgen",
    "openenvgen_runtime": ROOT / "runtime" / "openenvgen_runtime",
}
# Which of our distributions each may import: the schemas are shared, and the generator and
# the runtime never import each other (the runtime ships without jinja2 and the rest).
MAY_IMPORT = {
    "openenvgen_schemas": {"openenvgen_schemas"},
    "openenvgen": {"openenvgen", "openenvgen_schemas"},
    "openenvgen_runtime": {"openenvgen_runtime", "openenvgen_schemas"},
}


def modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Every module of the packages by dotted name (a package's `__init__` by the package's)."""
    found = {}
    for package, folder in packages.items():
        for path in sorted(folder.glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def imports(path: Path, package: str, known: set[str], roots: set[str]) -> set[str]:
    """The modules of `roots` that the file at `path` imports anywhere in its body."""
    found: set[str] = set()
    is_init = path.stem == "__init__"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] in roots)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                parent = package if is_init or node.level == 1 else package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            if base.split(".")[0] not in roots:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def import_graph(packages: dict[str, Path]) -> dict[str, set[str]]:
    known = modules(packages)
    graph = {}
    for name, path in known.items():
        package = name.split(".")[0]
        graph[name] = imports(path, package, set(known), set(packages)) - {name}
    return graph


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


def stated_layers(init: Path) -> list[set[str]]:
    """The `Layers:` line of a package's docstring, bottom up: `a, b < c < d`."""
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    line = next((line for line in doc.splitlines() if line.startswith("Layers")), None)
    assert line is not None, f"{init.relative_to(ROOT)}: its docstring has no `Layers: a, b < c < ...` line"
    text = line.split(":", 1)[1]
    return [{name.strip() for name in layer.split(",")} for layer in text.split(" < ")]


def layer_violations(graph: dict[str, set[str]], package: str, layers: list[set[str]]) -> list[str]:
    """Each import of `package`'s modules that does not go to a strictly lower layer, and
    each module the line leaves out or names without it existing."""
    level = {name: i for i, layer in enumerate(layers) for name in layer}
    own = {name.split(".", 1)[1] for name in graph if name.startswith(f"{package}.")}
    problems = [f"{package}.{name} is in no layer of the `Layers:` line" for name in sorted(own - set(level))]
    problems += [f"the `Layers:` line names {name}, which is not a module of {package}" for name in sorted(set(level) - own)]
    for name in sorted(own & set(level)):
        for target in sorted(graph[f"{package}.{name}"]):
            if not target.startswith(f"{package}."):
                continue
            other = target.split(".", 1)[1]
            if other in level and level[other] >= level[name]:
                problems.append(f"{package}.{name} (layer {level[name]}) imports {other} (layer {level[other]})")
    return problems


def test_no_import_cycles() -> None:
    found = cycles(import_graph(PACKAGES))
    assert not found, "import cycles: " + "; ".join(" ↔ ".join(c) for c in found)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_imports_follow_the_stated_layers(package: str) -> None:
    problems = layer_violations(import_graph(PACKAGES), package, stated_layers(PACKAGES[package] / "__init__.py"))
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


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The checks above can fail: a lazy import that closes a loop, and an import that goes up."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Toy.\n\nLayers: low < high\n"""\n')
    (folder / "low.py").write_text("def f():\n    from pkg.high import g\n")
    (folder / "high.py").write_text("from pkg import low\nfrom . import low as again\n")
    graph = import_graph({"pkg": folder})
    assert graph["pkg.low"] == {"pkg.high"} and graph["pkg.high"] == {"pkg.low"}
    assert cycles(graph) == [["pkg.high", "pkg.low"]]
    assert layer_violations(graph, "pkg", stated_layers(folder / "__init__.py")) == ["pkg.low (layer 0) imports high (layer 1)"]

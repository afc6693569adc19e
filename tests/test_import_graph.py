"""No import cycles anywhere under ``src/orchestrator``: every module's imports form a graph without loops.

The graph is read from the source with ``ast`` (nothing is imported), by these rules:

- every ``import`` and ``from … import`` statement counts, wherever it sits — at module level, inside a
  function, a method or a ``try`` block, or under ``if TYPE_CHECKING:``. A function-level import that
  dodges a cycle at run time is still a cycle (the two modules still need each other), and so is an
  annotation-only import of a caller: a lower layer that names its caller's type still holds it.
- relative imports are resolved against the importing module's package (``__init__.py`` is its own
  package).
- ``from pkg import name`` where ``pkg.name`` is a module counts as an import of ``pkg.name`` (only);
  otherwise it is an import of ``pkg``. ``import a.b.c`` is an import of ``a.b.c``; the parent packages
  it initialises are not counted as edges (a package's ``__init__`` that imports its own submodules
  would otherwise close a loop with every submodule importing a sibling).
- only modules inside the package are nodes; imports of anything else (stdlib, third-party) are
  dropped, and so are dynamic imports (``importlib.import_module``).

A cycle is a strongly connected component of more than one module (or a module importing itself).
Each one found is printed with one concrete loop through it.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "orchestrator"

Graph = Mapping[str, frozenset[str]]

# Cycles another branch of the same change is removing; the lead empties this set once it has landed.
# Each entry is the exact set of modules of one strongly connected component.
KNOWN_CYCLES_BEING_REMOVED: frozenset[frozenset[str]] = frozenset()


def module_names(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name (a package by its ``__init__.py``)."""
    modules: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _import_nodes(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in the module, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _resolve_from(module: str, is_package: bool, statement: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names (``from . import x`` → the current package)."""
    if statement.level == 0:
        return statement.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (statement.level - 1)]
    return ".".join([*base, statement.module] if statement.module else base)


def imports_of(module: str, is_package: bool, tree: ast.Module, known: Iterable[str]) -> frozenset[str]:
    """The package modules ``module`` imports, by the rules in this file's docstring."""
    modules = set(known)
    found: set[str] = set()
    for statement in _import_nodes(tree):
        if isinstance(statement, ast.Import):
            found.update(alias.name for alias in statement.names)
            continue
        source = _resolve_from(module, is_package, statement)
        for alias in statement.names:
            submodule = f"{source}.{alias.name}"
            found.add(submodule if submodule in modules else source)
    return frozenset(found & modules)


def build_graph(src: Path, package: str) -> dict[str, frozenset[str]]:
    """Module → the package modules it imports, for every module of ``package`` under ``src``."""
    modules = module_names(src, package)
    return {
        name: imports_of(name, path.name == "__init__.py", ast.parse(path.read_text(), str(path)), modules)
        for name, path in modules.items()
    }


def strongly_connected(graph: Graph) -> list[frozenset[str]]:
    """Tarjan's components (iterative), in a stable order; singletons included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(frozenset(component))
    return components


def cycles(graph: Graph) -> list[frozenset[str]]:
    """The components that are cycles: more than one module, or one module importing itself."""
    return [
        component
        for component in strongly_connected(graph)
        if len(component) > 1 or next(iter(component)) in graph.get(next(iter(component)), ())
    ]


def one_loop(graph: Graph, component: frozenset[str]) -> list[str]:
    """A shortest loop through the component's first module (by name), staying inside the component."""
    start = min(component)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph[node] & component):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if successor not in previous:
                previous[successor] = node
                queue.append(successor)
    raise AssertionError(f"{sorted(component)} is not a cycle")


def describe(graph: Graph, found: Iterable[frozenset[str]]) -> str:
    """One paragraph per cycle: its modules, and one loop through them."""
    return "\n".join(
        f"cycle of {len(component)} modules: {', '.join(sorted(component))}\n"
        f"  e.g. {' -> '.join(one_loop(graph, component))}"
        for component in found
    )


def test_the_package_has_no_import_cycles() -> None:
    graph = build_graph(SRC, PACKAGE)
    assert len(graph) > 50, "the package was not found"
    found = cycles(graph)
    unexpected = [component for component in found if component not in KNOWN_CYCLES_BEING_REMOVED]
    print(describe(graph, found))
    assert not unexpected, "import cycles:\n" + describe(graph, unexpected)
    gone = KNOWN_CYCLES_BEING_REMOVED - set(found)
    assert not gone, "no longer cycles — remove from KNOWN_CYCLES_BEING_REMOVED:\n" + "\n".join(
        ", ".join(sorted(component)) for component in gone
    )


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import helper\n",
            "pkg/b.py": "def helper():\n    from . import a\n    return a\n",
            "pkg/leaf.py": "import os\n",
            "pkg/user.py": "from pkg import leaf\nfrom pkg.leaf import os\n",
        },
    )
    graph = build_graph(tmp_path, "pkg")
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.user"] == {"pkg.leaf"}
    found = cycles(graph)
    assert found == [frozenset({"pkg.a", "pkg.b"})]
    assert one_loop(graph, found[0]) == ["pkg.a", "pkg.b", "pkg.a"]
    assert "pkg.a -> pkg.b -> pkg.a" in describe(graph, found)


def test_the_checker_resolves_relative_imports_and_counts_type_checking(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .sub import deep\n",
            "pkg/top.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import deep\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/deep.py": "from .. import top\nfrom ..sub import sibling\nimport pkg.top as t\n",
            "pkg/sub/sibling.py": "from . import deep\n",
            "pkg/sub/selfish.py": "import pkg.sub.selfish\n",
        },
    )
    graph = build_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.sub.deep"}
    assert graph["pkg.top"] == {"pkg.sub.deep"}
    assert graph["pkg.sub.deep"] == {"pkg.top", "pkg.sub.sibling"}
    assert graph["pkg.sub.sibling"] == {"pkg.sub.deep"}
    assert sorted(map(sorted, cycles(graph))) == [
        ["pkg.sub.deep", "pkg.sub.sibling", "pkg.top"],
        ["pkg.sub.selfish"],
    ]

"""The package's layering, read from the source with `ast` (no module is imported, torch never is).

Every `import` counts: at module level, inside functions (lazy imports) and under
``TYPE_CHECKING``, because each is a dependency the code relies on. The layer order is stated in
the package docstring (``mmfreeze/__init__.py``); ``LAYERS`` below is the same order as data.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "mmfreeze"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
FACADE = PACKAGE
"""The node of ``mmfreeze/__init__.py`` itself (the public entry point), not of a subpackage."""

LAYERS: tuple[frozenset[str], ...] = (
    # Foundations: any layer may import them; they import none of the layers.
    frozenset({"exceptions", "atomic", "regular_files", "parent_death", "disk_cache", "versions", "boundary", "settings", "pr_comment",
               "counts", "suggest", "lazy_exports", "memo", "registry"}),
    frozenset({"recipes"}),
    frozenset({"models"}),
    frozenset({"resolver"}),
    frozenset({"freeze"}),
    frozenset({"snapshots", "migrate", "distributed", "explain", "guard", "reachability", "memory", "workspace"}),
    frozenset({"cli", "nemo", "__main__", FACADE}),
)
"""Lowest first. An import may stay in its layer (siblings, as long as there is no cycle) or go down."""

RANK = {node: rank for rank, layer in enumerate(LAYERS) for node in layer}
ORDER = "foundations < " + " < ".join("/".join(sorted(layer)) for layer in LAYERS[1:])


@dataclass(frozen=True)
class Edge:
    """One import statement from one node (subpackage or top-level module) to another."""

    importer: str
    imported: str
    where: str
    """``file:line`` of the import statement."""
    target: str
    """The imported module, as written (relative imports resolved)."""

    def describe(self) -> str:
        return f"{self.where}: {self.importer} imports {self.target} ({self.imported})"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def node_of(module: str) -> str:
    """``mmfreeze.resolver.spec`` -> ``resolver``; ``mmfreeze.exceptions`` -> ``exceptions``; ``mmfreeze`` -> the facade."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else FACADE


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imported_modules(tree: ast.AST, module: str, *, package: bool) -> list[tuple[str, int]]:
    """Every mmfreeze module ``tree`` imports, with its line; ``from mmfreeze import x`` names
    module ``mmfreeze.x`` when x is one, else the package itself."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, package=package)
            found += [(_from_target(base, alias.name), node.lineno) for alias in node.names]
    unique = dict.fromkeys(found)  # `from x import a, b` is one import of x
    return [(name, line) for name, line in unique if name == PACKAGE or name.startswith(f"{PACKAGE}.")]


def _absolute(node: ast.ImportFrom, module: str, *, package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _from_target(base: str, name: str) -> str:
    candidate = ROOT.parent.joinpath(*f"{base}.{name}".split("."))
    return f"{base}.{name}" if candidate.is_dir() or candidate.with_suffix(".py").is_file() else base


def import_edges() -> list[Edge]:
    edges = []
    for path in sorted(ROOT.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target, line in imported_modules(tree, module, package=is_package(path)):
            importer, imported = node_of(module), node_of(target)
            if importer != imported:
                edges.append(Edge(importer, imported, f"{path.relative_to(ROOT.parent)}:{line}", target))
    return edges


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        graph[edge.importer].add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


EDGES = import_edges()


def test_the_scan_sees_the_known_downward_imports() -> None:
    """Guards the scanner itself: a parser that found nothing would pass every other test."""
    pairs = {(edge.importer, edge.imported) for edge in EDGES}
    assert {("resolver", "models"), ("freeze", "resolver"), ("cli", "snapshots")} <= pairs


def test_the_cycle_finder_reports_each_cycle_once() -> None:
    edges = [Edge(a, b, "f.py:1", b) for a, b in (("x", "y"), ("y", "z"), ("z", "x"), ("z", "w"), ("v", "w"))]
    assert cycles(edges) == [["x", "y", "z"]]


def test_no_import_cycle_between_subpackages() -> None:
    found = cycles(EDGES)
    lines = []
    for component in found:
        lines.append(f"cycle between {', '.join(component)}:")
        lines += [f"  {edge.describe()}" for edge in EDGES if edge.importer in component and edge.imported in component]
    assert not found, (
        "Imports between subpackages form a cycle. Move the shared code to the lower layer, or pass "
        f"the value in from the caller (layers: {ORDER}).\n" + "\n".join(lines)
    )


def test_every_subpackage_and_top_level_module_has_a_layer() -> None:
    nodes = {node_of(module_name(path)) for path in ROOT.rglob("*.py")}
    unplaced = sorted(nodes - set(RANK))
    assert not unplaced, (
        f"{unplaced} belong to no layer: add each to LAYERS in tests/test_layers.py and to the order "
        "stated in mmfreeze/__init__.py (a top-level module is a foundation only if it imports no layer)"
    )


def test_imports_only_go_down_the_stated_layers() -> None:
    upward = [edge for edge in EDGES if RANK.get(edge.imported, 0) > RANK.get(edge.importer, 0)]
    assert not upward, (
        f"Imports must only go down ({ORDER}). These go up: move the code "
        "down to the layer that owns it, or let the caller in the higher layer pass the value in.\n"
        + "\n".join(f"  {edge.describe()}" for edge in upward)
    )

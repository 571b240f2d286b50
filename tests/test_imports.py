"""The import graph of seraph and partitioner, read from the source (every ``import``,
module-level or inside a function, except those under ``if TYPE_CHECKING:``), points one
way: base layer <- partitioner <- engine <- algorithms <- CLI, with no cycle anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The base layer: what both the partitioner and the engine use (store format, errors,
#: units, progress, version, the store's temporaries, where numba caches kernels and how
#: it compiles them as serial and parallel twins, the flag that stops compiled work on a
#: signal, the prefetch hint of compiled loops), and the package itself, whose __init__
#: loads the rest lazily.
BASE = {"seraph", "seraph.errors", "seraph.interrupts", "seraph.kernels", "seraph.numba_cache",
        "seraph.prefetch", "seraph.progress", "seraph.store", "seraph.temporaries",
        "seraph.units", "seraph.version"}
#: Above the engine: the algorithms and what drives them by name.
ABOVE_ENGINE = ("seraph.__main__", "seraph.algorithms", "seraph.cli", "seraph.validate")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for package in ("seraph", "partitioner")
           for p in sorted((ROOT / package).rglob("*.py"))}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _nodes(tree: ast.AST):
    """Every node, skipping the bodies of ``if TYPE_CHECKING:`` (never run)."""
    for child in ast.iter_child_nodes(tree):
        if _type_checking(child):
            yield from (n for branch in child.orelse for n in [branch, *_nodes(branch)])
            continue
        yield child
        yield from _nodes(child)


def _known(name: str) -> str | None:
    """The module of ours that importing ``name`` loads last (its longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    found = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            found |= {_known(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module}: relative import"
            found |= {_known(f"{node.module}.{alias.name}") for alias in node.names}
    return found - {None, module}


GRAPH = {m: imports_of(m) for m in MODULES}


def _cycle() -> list[str] | None:
    """One import cycle, as the list of its modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(GRAPH[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(GRAPH):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_walk_sees_the_modules_and_their_imports():
    assert {"seraph.scheduler", "partitioner.writer", "seraph.algorithms.bfs"} <= set(GRAPH)
    assert "seraph.scheduler" in GRAPH["seraph.algorithms.bfs"]
    assert "partitioner.readers" in GRAPH["seraph.graph"]  # a function-level import


def test_no_import_cycle():
    assert _cycle() is None, " -> ".join(_cycle())


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("partitioner")))
def test_the_partitioner_imports_only_itself_and_the_base_layer(module):
    above = {m for m in GRAPH[module] if not m.startswith("partitioner") and m not in BASE}
    assert not above, f"{module} imports {sorted(above)}"


@pytest.mark.parametrize("module", sorted(BASE))
def test_the_base_layer_imports_only_itself(module):
    assert GRAPH[module] <= BASE, f"{module} imports {sorted(GRAPH[module] - BASE)}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("seraph")
                                          and not m.startswith(ABOVE_ENGINE)))
def test_the_engine_does_not_import_the_algorithms_or_the_cli(module):
    above = {m for m in GRAPH[module] if m.startswith(ABOVE_ENGINE)}
    assert not above, f"{module} imports {sorted(above)}"


@pytest.mark.parametrize("module", ["seraph.scheduler", "seraph.backends.base",
                                    "seraph.backends.layout", "seraph.backends.caches",
                                    "seraph.backends.activity", "seraph.api"])
def test_the_engine_reaches_a_backend_only_through_the_interface(module):
    concrete = {m for m in GRAPH[module]
                if m.startswith(("seraph.backends.cpu", "seraph.backends.cuda"))}
    assert not concrete, f"{module} imports {sorted(concrete)}"

"""The import plan: no circle among lore's modules (function-level imports count), and the layer
contract of pyproject.toml (`lint-imports`) kept."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def import_graph() -> dict[str, set[str]]:
    """Every lore module and the lore modules it imports (anywhere in the file)."""
    graph = grimp.build_graph("lore", include_external_packages=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(graph: Mapping[str, set[str]], circle: Sequence[str]) -> str:
    members = set(circle)
    return "; ".join(f"{m} -> {sorted(graph[m] & members)}" for m in circle)


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"], ["e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_among_lore_modules() -> None:
    graph = import_graph()
    assert "lore.engine" in graph and "lore.scenario.request" in graph  # the graph is really read
    found = circles(graph)
    assert not found, "import circles: " + " | ".join(describe(graph, c) for c in found)


def test_layer_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

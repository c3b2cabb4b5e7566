"""The package-level import graph of ffigraph: which top-level module or subpackage imports which.

    python tools/import_graph.py          print one line per importer, and fail on a circle

An edge A -> B means some module in A imports some module in B (an import in a function body counts,
as it does for lint-imports). The package root (ffigraph/__init__.py, the facade) is left out. Exits 1
if the graph has a circle. docs/layers.md carries this output, and tests/tools/test_layers.py checks that
it is still the output. Needs grimp (installed with import-linter, in the test extras on CPython).
"""
from __future__ import annotations

import sys

ROOT = "ffigraph"


def package_of(module):
    """``ffigraph.tensor.math`` -> ``ffigraph.tensor``; the root stays the root."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_edges():
    """{importer: sorted imported} between the root's top-level modules and subpackages."""
    import grimp

    graph = grimp.build_graph(ROOT, include_external_packages=False)
    edges = {}
    for module in graph.modules:
        source = package_of(module)
        if source == ROOT:
            continue
        targets = edges.setdefault(source, set())
        for imported in graph.find_modules_directly_imported_by(module):
            target = package_of(imported)
            if target not in (source, ROOT):
                targets.add(target)
    return {source: sorted(targets) for source, targets in edges.items()}


def find_circle(edges):
    """One circle as a list of packages (first == last), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in edges.get(node, ()):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def text(edges):
    """One line per package, importers in order: ``ffigraph.tensor -> ffigraph.abi, ffigraph.graph``."""
    width = max(len(name) for name in edges)
    return "\n".join("%-*s -> %s" % (width, name, ", ".join(targets) or "(nothing)")
                     for name, targets in sorted(edges.items()))


def main():
    edges = package_edges()
    print(text(edges))
    circle = find_circle(edges)
    if circle:
        print("import circle between packages: " + " -> ".join(circle), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Merge: equal constants become one constant, and nodes applying the same op to the same
inputs become one node (common subexpression elimination)."""
from __future__ import annotations

from ffigraph.graph.basic import Constant
from ffigraph.graph.rewriting import replace_all_validate


def _merge_constants(fgraph):
    first = {}
    pairs = []
    for var in sorted((v for v in fgraph.variables if isinstance(v, Constant)), key=_stable_key):
        try:
            key = var.signature()
            hash(key)
        except TypeError:
            continue  # an unhashable constant value is never merged
        kept = first.setdefault(key, var)
        if kept is not var:
            pairs.append((var, kept))
    return pairs


def _stable_key(var):
    # the graph's variable set is unordered; keep the same survivor on every run
    return getattr(var, "auto_name", "") or str(id(var))


def merge_rewrite(fgraph):
    """One pass suffices: nodes are visited in topological order, so their inputs are already merged."""
    replace_all_validate(fgraph, _merge_constants(fgraph), reason="merge")
    seen = {}
    for node in fgraph.toposort():
        if node not in fgraph.apply_nodes or node.op.destroy_map:
            continue  # two nodes that overwrite an input are not the same computation
        if getattr(node.op, "has_side_effects", False):
            continue  # each one acts when it runs (a Print prints): merging would drop one
        key = (node.op, tuple(node.inputs))
        try:
            other = seen.setdefault(key, node)
        except TypeError:
            continue
        if other is node or other not in fgraph.apply_nodes:
            seen[key] = node
            continue
        if not all(a.type == b.type for a, b in zip(node.outputs, other.outputs)):
            continue
        replace_all_validate(fgraph, list(zip(node.outputs, other.outputs)), reason="merge")
    return fgraph

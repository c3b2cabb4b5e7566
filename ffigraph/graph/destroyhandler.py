"""``DestroyHandler``: the feature that keeps inplace rewrites safe.

An op overwrites an input when its ``destroy_map`` says so. That is only
allowed when nobody else can observe the old value. The rule here is
deliberately simple and strict; a destroyed variable must be:

- computed inside the graph, or a graph input the user declared mutable
  (``In(x, mutable=True)``); never a constant or a shared variable;
- not a graph output (the user would see it overwritten), and not a view of
  another variable (``view_map``), whose owner could still be read;
- read by the destroying node alone, and only once.

Any change that breaks the rule is refused: ``validate`` raises
InconsistencyError and ``replace_all_validate`` undoes the change.
"""
from __future__ import annotations

from ffigraph.graph.basic import Constant
from ffigraph.graph.fg import Feature, InconsistencyError


def destroy_problem(fgraph, var, destroyer):
    """Why ``destroyer`` may not overwrite ``var`` (a sentence), or None when it may."""
    if isinstance(var, Constant):
        return "%s is a constant" % (var,)
    if var.owner is None and var not in getattr(fgraph, "mutable_inputs", ()):
        return "%s is an input of the function that was not declared In(x, mutable=True)" % (var,)
    readers = fgraph.clients.get(var, [])
    if any(client == "output" for client, _ in readers):
        return "%s is an output the caller receives" % (var,)
    if any(client is not destroyer for client, _ in readers) or len(readers) != 1:
        return "%s is read by another node (or twice by this one)" % (var,)
    if var.owner is not None and var.owner.op.view_map.get(var.index):
        return "%s is a view of another variable" % (var,)
    return None


class DestroyHandler(Feature):
    def validate(self, fgraph):
        for node in fgraph.apply_nodes:
            destroyed = set()
            for out, ins in node.op.destroy_map.items():
                for i in ins:
                    var = node.inputs[i]
                    if var in destroyed:
                        raise InconsistencyError("%s would overwrite %s twice" % (node.op, var))
                    destroyed.add(var)
                    problem = destroy_problem(fgraph, var, node)
                    if problem is not None:
                        raise InconsistencyError("%s may not overwrite its input %d: %s" % (node.op, i, problem))


def ensure_destroy_handler(fgraph):
    return fgraph.feature(DestroyHandler)

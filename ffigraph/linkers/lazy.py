"""Lazy branches: which nodes run only when one branch of a conditional op is taken.

An op with lazy branches (``ifelse``) declares them through ``op.lazy_branches(node)`` (the
contract is described on ``ffigraph.graph.op.Op.lazy_branches``). Linkers know nothing else of
such an op: this module turns the declarations of a graph into a *plan*, the nested order every
linker runs the nodes in, and the Python linkers walk it (``lazy_sequence``) while the C linker
writes it as ``if``/``else`` blocks.

Each node has a *branch context* (``ffigraph.graph.branches``, where rewrites can read it too):
the chain of (conditional node, side) it runs under, so a node feeding only one branch, however
deep, runs only when that branch is taken, and a node shared with the condition, with the other
branch or with anything outside runs whenever its user would.

The plan walks the topological order: nodes of the current context stay in place; at a
conditional node the nodes of its then and else contexts come first, each in a ``Branch``,
recursively, then the conditional node itself. Every producer's context is a prefix of its
user's (or its user's plus that user's own branch), so this is still a topological order; with
no conditional node it is the topological order itself, node for node.
"""
from __future__ import annotations

from ffigraph.graph.branches import ELSE, THEN, branch_contexts, lazy_branches

__all__ = ["Branch", "ELSE", "THEN", "branch_contexts", "execution_order", "flatten", "has_lazy_nodes",
           "lazy_branches", "lazy_sequence", "plan"]


class Branch:
    """The nodes guarded by conditional ``node``: ``then_items`` run when its condition
    (``node.inputs[cond_index]``) is nonzero, ``else_items`` otherwise. An item is a node or a
    nested Branch; the conditional node itself follows its Branch in the enclosing block."""

    __slots__ = ("node", "condition", "then_items", "else_items")

    def __init__(self, node, condition, then_items, else_items):
        self.node = node
        self.condition = condition
        self.then_items = then_items
        self.else_items = else_items


def has_lazy_nodes(nodes):
    return any(lazy_branches(node) is not None for node in nodes)


def plan(fgraph, order=None):
    """The root block of ``fgraph``'s plan: a list of nodes and Branches (see the module doc)."""
    order = fgraph.toposort() if order is None else order
    if not has_lazy_nodes(order):
        return list(order)
    contexts = branch_contexts(fgraph, order)
    members = {}   # context -> its nodes, in topological order
    for node in order:
        members.setdefault(contexts[node], []).append(node)

    def block(context):
        items = []
        for node in members.get(context, ()):
            sides = lazy_branches(node)
            if sides is not None:
                then_items = block(context + ((node, THEN),))
                else_items = block(context + ((node, ELSE),))
                if then_items or else_items:
                    items.append(Branch(node, node.inputs[sides[0]], then_items, else_items))
            items.append(node)
        return items

    root = block(())
    if len(flatten(root)) != len(order):   # cannot happen: every context's prefix is a context
        raise AssertionError("lazy plan lost nodes of %s" % (fgraph,))
    return root


def flatten(items):
    """The nodes of a plan in the order they appear (then nodes, else nodes, conditional node)."""
    out = []
    for item in items:
        if isinstance(item, Branch):
            out.extend(flatten(item.then_items))
            out.extend(flatten(item.else_items))
        else:
            out.append(item)
    return out


def execution_order(fgraph):
    """The order a linker runs (and numbers) ``fgraph``'s nodes in: its toposort without lazy ops."""
    return flatten(plan(fgraph))


# ------------------------------------------------------------------ running a plan from Python


def lazy_sequence(fgraph, order, node_thunks, storage_map, annotate, recorder=None):
    """The thunk of linkers.basic.sequence_thunks for a graph with lazy branches.

    It walks the plan: a guarded node runs only when its branch is taken (the condition's cell
    holds a nonzero value). Positions in errors and in ``recorder`` (a PythonNodeTimes: this
    path times nodes itself when given one) are those of ``order``. The cells of skipped nodes
    stay empty: only the nodes that ran must have produced their outputs.
    """
    import time

    produced = [storage_map[v] for node in order for v in node.outputs]
    runs = {node: (position, fn) for position, (fn, node) in enumerate(zip(node_thunks, order))}
    perf_counter = time.perf_counter
    record = recorder.record if recorder is not None else None

    def node_step(node):
        position, fn = runs[node]
        outputs = list(zip(getattr(fn, "outputs", ()), node.outputs))

        def step():
            start = perf_counter() if record else 0.0
            try:
                fn()
            except Exception as err:
                if record:
                    record(position, perf_counter() - start, False)
                raise annotate(err, node, position, fgraph)
            if record:
                record(position, perf_counter() - start, True)
            for cell, var in outputs:
                if cell[0] is None:
                    raise ValueError("%s produced no value for output %s" % (node.op, var))

        return step

    def branch_step(branch):
        cell = storage_map[branch.condition]
        taken, other = walker(branch.then_items), walker(branch.else_items)

        def step():
            (taken if cell[0] else other)()   # nonzero condition: the then branch

        return step

    def walker(items):
        steps = [branch_step(item) if isinstance(item, Branch) else node_step(item) for item in items]

        def walk():
            for step in steps:
                step()

        return walk

    body = walker(plan(fgraph, order))

    def thunk():
        for cell in produced:
            cell[0] = None
        body()

    thunk.nodes = order
    return thunk

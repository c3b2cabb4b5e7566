"""Branch contexts: under which choices of conditional ops (``ifelse``) a node's value is needed.

An op with lazy branches declares them with ``op.lazy_branches(node)`` (see ``Op.lazy_branches``).
A node's *branch context* is the chain of (conditional node, THEN or ELSE) it runs under: the
longest common prefix of the contexts of its uses. A use at a then/else input of a conditional
node is that node's context plus (node, side); any other use (the condition, an ordinary node) is
the user's own context; a graph output is the root (). The linkers run a node only when every
choice of its context is taken (``ffigraph/linkers/lazy.py``); a rewrite that merges nodes keeps
nodes of different contexts apart, or the merged node would run whenever either is needed.
"""
from __future__ import annotations

THEN, ELSE = "then", "else"


def lazy_branches(node):
    """``(cond index, then indices, else indices)`` of ``node``'s inputs, or None (an eager op)."""
    declare = getattr(node.op, "lazy_branches", None)
    return None if declare is None else declare(node)


def branch_contexts(fgraph, order=None):
    """{node: its branch context}, a tuple of (conditional node, THEN or ELSE) pairs; ``order``:
    the nodes of ``fgraph`` in a topological order (its toposort when None)."""
    order = fgraph.toposort() if order is None else order
    contexts = {}
    for node in reversed(order):   # every user of a node comes after it
        context = None
        for out in node.outputs:
            for user, i in fgraph.clients.get(out, ()):
                if user == "output":
                    use = ()
                else:
                    use = contexts[user]
                    sides = lazy_branches(user)
                    if sides is not None:
                        _, then_inputs, else_inputs = sides
                        if i in then_inputs:
                            use = use + ((user, THEN),)
                        elif i in else_inputs:
                            use = use + ((user, ELSE),)
                context = use if context is None else _common_prefix(context, use)
        contexts[node] = () if context is None else context   # no use at all: run it as before
    return contexts


def _common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x[0] is not y[0] or x[1] != y[1]:
            break
        n += 1
    return a if n == len(a) else a[:n]

"""Whether two graphs compute the same thing, structurally: Theano's ``equal_computations``
(``theano.scan_module.scan_utils``, PyTensor's ``pytensor.graph.basic``) and ``is_same_graph``
(``theano.gof.graph``).

Two variables are the same computation when they are the same variable, a pair the caller
declares equal (``in_xs[i]`` with ``in_ys[i]``), two constants of one type and value, or the same
output of two nodes of equal ops whose inputs are, pairwise, the same computation. No rewrite
runs: ``x * (y * z)`` and ``(x * y) * z`` differ.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant, Variable, clone_replace


def _constants_equal(x, y):
    if x.type != y.type:
        return False
    try:
        return bool(x.type.values_eq(x.data, y.data))
    except (TypeError, ValueError):
        return x.data is y.data


def _raw_equal(x, y):
    """A variable against a plain value (Theano lets one side be data): a constant holding it."""
    if isinstance(x, Variable):
        x, y = y, x
    if isinstance(y, Variable):
        if not isinstance(y, Constant):
            return False
        y = y.data
    try:
        return bool(np.all(np.asarray(x) == np.asarray(y)))
    except (TypeError, ValueError):
        return x is y


def equal_computations(xs, ys, in_xs=None, in_ys=None):
    """True when each ``xs[i]`` computes what ``ys[i]`` computes, given that each ``in_xs[j]``
    stands for ``in_ys[j]`` (free variables match only themselves otherwise)."""
    xs, ys = list(xs), list(ys)
    in_xs, in_ys = list(in_xs or ()), list(in_ys or ())
    if len(xs) != len(ys) or len(in_xs) != len(in_ys):
        return False
    same = {}   # (id(x), id(y)) -> the answer, once known
    pending = []
    for x, y in zip(in_xs, in_ys):
        if x.type != y.type:
            return False
        same[(id(x), id(y))] = True
    for x, y in zip(xs, ys):
        if not isinstance(x, Variable) or not isinstance(y, Variable):
            if not _raw_equal(x, y):
                return False
            continue
        pending.append((x, y))
    # depth first, an explicit stack so that deep graphs do not reach the recursion limit
    stack = [(x, y, False) for x, y in reversed(pending)]
    while stack:
        x, y, expanded = stack.pop()
        key = (id(x), id(y))
        if expanded:
            nx, ny = x.owner, y.owner
            same[key] = all(same.get((id(a), id(b)), False) for a, b in zip(nx.inputs, ny.inputs))
            if not same[key]:
                return False
            continue
        if key in same:
            if not same[key]:
                return False
            continue
        if x is y:
            same[key] = True
            continue
        if x.owner is None or y.owner is None:
            if isinstance(x, Constant) and isinstance(y, Constant):
                same[key] = _constants_equal(x, y)
            else:
                same[key] = False   # (two different free variables, not declared the same)
            if not same[key]:
                return False
            continue
        nx, ny = x.owner, y.owner
        if x.type != y.type or nx.op != ny.op or len(nx.inputs) != len(ny.inputs) \
                or len(nx.outputs) != len(ny.outputs) or nx.outputs.index(x) != ny.outputs.index(y):
            return False
        stack.append((x, y, True))
        for a, b in reversed(list(zip(nx.inputs, ny.inputs))):
            if (id(a), id(b)) not in same:
                stack.append((a, b, False))
    return True


def is_same_graph(var1, var2, givens=None):
    """True when ``var1`` and ``var2`` compute the same thing once the variables ``givens`` maps
    (a dict or pairs) are replaced by their values in both graphs (Theano's
    ``is_same_graph``: ``is_same_graph(x, y, givens={x: y})`` holds)."""
    pairs = list(givens.items()) if isinstance(givens, dict) else list(givens or ())
    if pairs:
        var1 = clone_replace(var1, pairs, strict=False)
        var2 = clone_replace(var2, pairs, strict=False)
    return equal_computations([var1], [var2])

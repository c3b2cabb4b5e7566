"""``vectorize_graph``: a graph recomputed from inputs with extra leading (batch) axes.

PyTensor's ``pytensor.graph.replace.vectorize_graph``. The walk is here; how each node batches is
its op's business: ``vectorize_node`` dispatches on the op's class (later layers register their
ops: elementwise ones broadcast, a DimShuffle shifts its pattern, a reduction its axes), and an op
no one registered goes to the default that ``ffigraph.tensor`` sets (a ``Blockwise`` of it).
"""
from __future__ import annotations

import functools

from ffigraph.graph.basic import Variable, io_toposort

_DEFAULT = []


def set_default_vectorizer(vectorize):
    """Register ``vectorize(node, new_inputs)``, the batching of an op no class registered."""
    _DEFAULT[:] = [vectorize]


@functools.singledispatch
def _vectorize_node(op, node, *new_inputs):
    if not _DEFAULT:
        raise NotImplementedError("vectorize_graph: no way to batch %s (import ffigraph.tensor)" % (op,))
    return _DEFAULT[0](node, list(new_inputs))


def vectorize_node(node, *new_inputs):
    """The outputs of ``node`` computed from ``new_inputs``, which may have extra leading axes."""
    return list(_vectorize_node(node.op, node, *new_inputs))


def register_vectorizer(op_class):
    """Decorator registering ``fn(op, node, *new_inputs)`` as the batching of ``op_class``'s nodes."""
    return _vectorize_node.register(op_class)


def vectorize_graph(outputs, replace):
    """``outputs`` (a variable or a list) recomputed from the replacements ``replace``
    ({variable: replacement}), which may have extra leading axes (PyTensor's ``vectorize_graph``)."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    memo = {}
    for old, new in dict(replace).items():
        if not isinstance(old, Variable) or not isinstance(new, Variable):
            raise TypeError("vectorize_graph: replace must map variables to variables, got %r: %r" % (old, new))
        old_ndim, new_ndim = getattr(old.type, "ndim", 0), getattr(new.type, "ndim", 0)
        if new_ndim < old_ndim:
            raise ValueError("vectorize_graph: %s has %d dimensions, fewer than %s's %d" % (new, new_ndim, old, old_ndim))
        if getattr(new.type, "dtype", None) != getattr(old.type, "dtype", None):
            raise TypeError("vectorize_graph: %s (dtype %s) cannot replace %s (dtype %s)"
                            % (new, getattr(new.type, "dtype", None), old, getattr(old.type, "dtype", None)))
        memo[old] = new
    for node in io_toposort(list(memo), outs):
        new_inputs = [memo.get(v, v) for v in node.inputs]
        if all(n is o for n, o in zip(new_inputs, node.inputs)):
            continue
        for old, new in zip(node.outputs, vectorize_node(node, *new_inputs)):
            memo[old] = new
    result = [memo.get(v, v) for v in outs]
    return result[0] if single else result

"""Constant folding: a node whose inputs are all constants is computed once, at compile time.

The value comes from the op's ``perform`` (the reference semantics). An op
whose ``python_constant_folding(node)`` returns False is folded through its
own C code instead (the seed's contract), by compiling that one node.
Results larger than ``MAX_FOLDED_BYTES`` are not folded: a constant is
embedded in the generated C source, and a huge literal would cost more to
compile than the node costs to run.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant, compile_graph
from ffigraph.graph.rewriting import node_rewriter

MAX_FOLDED_BYTES = 1 << 16


def _python_folding(op, node):
    fn = getattr(op, "python_constant_folding", None)
    return True if fn is None else bool(fn(node))


def _fold_with_perform(node):
    storage = [[None] for _ in node.outputs]
    node.op.perform(node, [i.data for i in node.inputs], storage)
    return [cell[0] for cell in storage]


def _fold_with_c(node):
    fn = compile_graph([], list(node.outputs), linker="c|py", optimizer=None)
    return fn()


@node_rewriter(None, name="constant_folding")
def constant_folding(fgraph, node):
    if not node.inputs or not all(isinstance(i, Constant) for i in node.inputs):
        return None
    op = node.op
    if not op.do_constant_folding(fgraph, node) or op.destroy_map:
        return None
    try:
        values = _fold_with_perform(node) if _python_folding(op, node) else _fold_with_c(node)
    except Exception:  # noqa: BLE001 - an error in folding shows up at run time, where it belongs
        return None
    out = []
    for var, value in zip(node.outputs, values):
        if value is None or np.asarray(value).nbytes > MAX_FOLDED_BYTES:
            return None
        try:
            out.append(var.type.make_constant(value))
        except (TypeError, ValueError):
            return None
    return out

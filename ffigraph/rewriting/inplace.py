"""Inplace: a fused loop writes an output into the memory of an input nobody needs afterwards.

It runs last, on the final graph. Each candidate goes through
``replace_all_validate`` with a DestroyHandler attached, so a change that
could overwrite something the user or another node can still see is
refused. At run time the C loop takes the input's memory only when the
input owns it and has the output's exact shape and C layout; otherwise it
allocates as usual, so the rewrite never changes results.
"""
from __future__ import annotations

from ffigraph.graph.destroyhandler import destroy_problem, ensure_destroy_handler
from ffigraph.graph.rewriting import replace_all_validate
from ffigraph.tensor.fused import FusedElemwise


def _candidates(fgraph, node):
    """(output, input) pairs that could share memory, first fitting input per output.

    An input is only taken when every output of the node has its broadcasting pattern: a node
    whose outputs differ in shape (one reads fewer inputs, say) loops over the larger outputs
    apart, and one of those may read the input broadcast after a smaller output has overwritten
    it (found by the program fuzzer: seed 20261204, program 1918)."""
    pairs, taken = [], set()
    for k, out in enumerate(node.outputs):
        for i, var in enumerate(node.inputs):
            if i in taken or var.type != out.type or node.inputs.count(var) != 1:
                continue
            if any(o.type.broadcastable != var.type.broadcastable for o in node.outputs):
                continue
            if destroy_problem(fgraph, var, node) is None:
                pairs.append((k, i))
                taken.add(i)
                break
    return pairs


def inplace_rewrite(fgraph):
    ensure_destroy_handler(fgraph)
    for node in fgraph.toposort():
        if node not in fgraph.apply_nodes or type(node.op) is not FusedElemwise or node.op.inplace:
            continue
        pairs = _candidates(fgraph, node)
        if not pairs:
            continue
        new = FusedElemwise(node.op.composite, pairs).make_node(*node.inputs)
        replace_all_validate(fgraph, list(zip(node.outputs, new.outputs)), reason="inplace")
    return fgraph

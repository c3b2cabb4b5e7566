"""Compiled Blockwise nodes: one loop over the batch, with the core op as its body.

A ``Blockwise`` node (``ffigraph.tensor.blockwise``) becomes, during canonicalization: its inputs
broadcast to the common batch shape and flattened to one batch axis, a ``scan`` over that axis
whose step applies the core op to one entry of each, and the stacked results reshaped to the
batch shape. The loop and the core op's C then run inside the compiled library, under every
linker that compiles scan. A node without batch axes is the core op itself.
"""
from __future__ import annotations

from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.groups import register_canonicalize
from ffigraph.scan.basic import scan
from ffigraph.tensor import broadcast_to, prod, reshape, stack
from ffigraph.tensor.blockwise import Blockwise, _batch_dims


def _fitted(node, outs):
    """``outs`` with the node's output types (a static length the loop does not know is restored)."""
    fitted = []
    for old, new in zip(node.outputs, outs):
        converted = old.type.convert_variable(new)
        if converted is None:
            converted = old.type.filter_variable(new)
        fitted.append(converted)
    return fitted


@node_rewriter([Blockwise], name="blockwise_as_loop")
def blockwise_as_loop(fgraph, node):
    op = node.op
    batch_ndim = op.batch_ndim(node)
    if batch_ndim == 0:
        return _fitted(node, op.core_op.make_node(*node.inputs).outputs)
    cores = [len(sig) for sig in op.inputs_sig]
    shapes = [[x.shape[d] for d in range(x.ndim)] for x in node.inputs]
    static = [x.type.shape[:x.type.ndim - c] for x, c in zip(node.inputs, cores)]
    batch = _batch_dims([s[:len(s) - c] for s, c in zip(shapes, cores)], static, batch_ndim)
    count = prod(stack(batch)) if batch else 1
    rows = []
    for x, shape, c in zip(node.inputs, shapes, cores):
        core_shape = shape[len(shape) - c:]
        full = broadcast_to(x, batch + core_shape)
        rows.append(reshape(full, [count] + core_shape, ndim=1 + c))
    core_outputs = len(node.outputs)

    def step(*entries):
        outs = op.core_op.make_node(*entries).outputs
        return list(outs) if core_outputs > 1 else outs[0]

    looped, _ = scan(step, sequences=rows, n_steps=count, return_list=True)
    try:   # the core shapes from the core op's infer_shape: a loop of no steps has rows of no shape
        core_shapes = [shape[batch_ndim:] for shape in op.infer_shape(fgraph, node, shapes)]
    except NotImplementedError:
        core_shapes = [[out.shape[1 + d] for d in range(out.type.ndim - 1)] for out in looped]
    outs = []
    for old, out, shape in zip(node.outputs, looped, core_shapes):
        # (a length the node's type knows is given as it is, so the result has that static shape)
        target = [known if known is not None else length
                  for known, length in zip(old.type.shape, batch + list(shape))]
        outs.append(reshape(out, target, ndim=len(target)))
    return _fitted(node, outs)


register_canonicalize(blockwise_as_loop, "fast_run", "fast_compile", "blockwise", position=58.0)

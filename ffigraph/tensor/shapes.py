"""Shapes of tensors: ``shape``, ``shape_i``, ``reshape``, ``flatten``."""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.generic_ops import Shape_i
from ffigraph.tensor.generic_ops import shape as _shape_op
from ffigraph.graph.basic import Apply, Constant
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, stack
from ffigraph.tensor.type import TensorType


def shape(x):
    """The shape of ``x`` as a symbolic int64 vector."""
    return _shape_op(as_tensor_variable(x))


def shape_i(x, i):
    """The length of axis ``i`` of ``x`` (a constant when the type knows it)."""
    x = as_tensor_variable(x)
    size = x.type.shape[i] if 0 <= i < x.ndim else None
    if size is not None:
        return constant(size, dtype="int64")
    return Shape_i(i)(x)


class Reshape(DelegatedCOp, Op):
    """A view (or copy) of ``x`` with the shape given by an int64 vector; one entry may be -1."""

    c_impl = "ffigraph.tensor.shape_c"
    __props__ = ("ndim",)
    view_map = {0: [0]}

    def __init__(self, ndim):
        self.ndim = int(ndim)

    def make_node(self, x, shp):
        x = as_tensor_variable(x)
        shp = as_tensor_variable(shp)
        if shp.ndim != 1 or shp.dtype[0] not in "iu":
            raise TypeError("reshape: the shape must be an integer vector, got %s of type %s" % (shp, shp.type))
        if shp.type.shape[0] not in (None, self.ndim):
            raise ValueError("reshape: shape %s has %s entries but ndim=%d" % (shp, shp.type.shape[0], self.ndim))
        shp = cast(shp, "int64")
        static = [None] * self.ndim
        if isinstance(shp, Constant):
            static = [int(s) if s >= 0 else None for s in shp.data]
        return Apply(self, [x, shp], [TensorType(x.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        x, shp = inputs
        if len(shp) != self.ndim:
            raise ValueError("reshape: got a shape with %d entries, expected %d" % (len(shp), self.ndim))
        new = tuple(int(s) for s in shp)
        if sum(1 for s in new if s == -1) > 1 or any(s < -1 for s in new):
            raise ValueError("reshape: invalid target shape %s (at most one -1, no other negatives)" % (new,))
        try:
            output_storage[0][0] = x.reshape(new)
        except ValueError:
            raise ValueError("reshape: cannot reshape an array of shape %s (size %d) into %s"
                             % (x.shape, x.size, new)) from None

    def connection_pattern(self, node):
        return [[True], [False]]  # the target shape only shapes the result

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        x = inputs[0]
        return [Reshape(x.type.ndim)(output_grads[0], shape(x)), disconnected_type()]

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.math import prod

        x_shape, _ = input_shapes
        entries = [node.inputs[1][i] for i in range(self.ndim)]
        return [tuple(_resolve_entry(entries, i, x_shape, prod) for i in range(self.ndim))]


def _resolve_entry(entries, i, x_shape, prod):
    """Entry i of the target shape, with a -1 replaced by the size it stands for."""
    from ffigraph.tensor.basic import switch
    from ffigraph.tensor.math import eq, int_div, mul

    total = prod(stack(list(x_shape))) if x_shape else constant(1, dtype="int64")
    known = constant(1, dtype="int64")
    for j, e in enumerate(entries):
        if j != i:
            known = mul(known, e)
    return switch(eq(entries[i], -1), int_div(total, known), entries[i])


def reshape(x, newshape, ndim=None):
    """``x`` with shape ``newshape`` (ints and/or symbolic scalars, or an int vector)."""
    x = as_tensor_variable(x)
    if isinstance(newshape, (int, np.integer)):
        newshape = [newshape]
    if isinstance(newshape, (list, tuple)):
        if all(isinstance(s, (int, np.integer)) for s in newshape):
            newshape = constant(np.asarray(newshape, dtype=np.int64))
        else:
            newshape = stack([cast(as_tensor_variable(s), "int64") for s in newshape]) if newshape \
                else constant(np.zeros(0, dtype=np.int64))
    newshape = as_tensor_variable(newshape)
    if ndim is None:
        ndim = newshape.type.shape[0]
        if ndim is None:
            raise ValueError("reshape: the length of the shape %s is not known; pass ndim=" % newshape)
    return Reshape(ndim)(x, newshape)


def flatten(x, ndim=1):
    """Keep the first ``ndim - 1`` axes and merge the rest into one."""
    from ffigraph.tensor.math import prod

    x = as_tensor_variable(x)
    if not 1 <= ndim <= max(x.ndim, 1):
        raise ValueError("flatten: ndim=%d is out of range for a %d-d tensor" % (ndim, x.ndim))
    lead = [shape_i(x, i) for i in range(ndim - 1)]
    rest = [shape_i(x, i) for i in range(ndim - 1, x.ndim)]
    tail = prod(stack(rest)) if rest else constant(1, dtype="int64")
    return reshape(x, lead + [tail], ndim=ndim)


def inferred_shape(var, _memo=None):
    """The shape of ``var`` as a tuple of int64 scalars, built from each op's ``infer_shape``.

    Leaves use their static sizes or ``Shape_i``; nothing of the graph that
    computes ``var`` itself is needed, which is what lets rewrites drop it.
    """
    from ffigraph.graph.op import call_infer_shape

    memo = {} if _memo is None else _memo
    if var in memo:
        return memo[var]
    node = var.owner
    if node is None:
        result = tuple(shape_i(var, i) for i in range(var.ndim))
    else:
        in_shapes = [inferred_shape(i, memo) if hasattr(i.type, "ndim") else None for i in node.inputs]
        for out, shp in zip(node.outputs, call_infer_shape(node.op, None, node, in_shapes)):
            memo[out] = tuple(as_tensor_variable(s) if not hasattr(s, "type") else s for s in shp)
        result = memo[var]
    memo[var] = result
    return result

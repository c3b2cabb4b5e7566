"""``SumToShape``: sum ``g`` down to a shape it was broadcast from (the gradient of broadcasting).

For each axis the target length must equal ``g``'s length or be 1; ``g`` is summed over
the axes where the target is 1 and ``g``'s length is not, keeping them with length 1,
so the result has exactly the target shape. When nothing is summed the result is ``g``
itself (a view).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.op import Op
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, stack
from ffigraph.tensor.type import TensorType


class SumToShape(DelegatedCOp, Op):
    """``g`` summed (keeping the axes) down to ``shape``, an int64 vector of length ``g.ndim``."""

    c_impl = "ffigraph.tensor.sum_to_shape_c"
    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, g, shape):
        g = as_tensor_variable(g)
        if np.dtype(g.dtype).kind not in "iuf":
            raise TypeError("SumToShape: g=%s has dtype %s; only integer and float dtypes are supported"
                            % (g, g.dtype))
        shape = as_tensor_variable(shape)
        if shape.ndim != 1 or np.dtype(shape.dtype).kind not in "iu":
            raise TypeError("SumToShape: the shape must be an integer vector, got %s of type %s"
                            % (shape, shape.type))
        if shape.type.shape[0] not in (None, g.ndim):
            raise TypeError("SumToShape: the shape %s has %d entries but g=%s has %d dimensions"
                            % (shape, shape.type.shape[0], g, g.ndim))
        shape = cast(shape, "int64")
        static = [1 if size == 1 else None for size in g.type.shape]
        if isinstance(shape, Constant):
            target = tuple(int(s) for s in shape.data)
            for size, want in zip(g.type.shape, target):
                if want < 0 or (want != 1 and size is not None and size != want):
                    raise ValueError("SumToShape: g=%s of static shape %s cannot be summed to shape %s"
                                     % (g, g.type.shape, target))
            static = [1 if size == 1 else want for size, want in zip(g.type.shape, target)]
        return Apply(self, [g, shape], [TensorType(g.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        g, shape = inputs
        target = tuple(int(s) for s in shape)
        output_storage[0][0] = sum_to_shape_value(g, target)

    def infer_shape(self, fgraph, node, input_shapes):
        out = node.outputs[0].type.shape
        return [tuple(node.inputs[1][a] if size is None else constant(size, dtype="int64")
                      for a, size in enumerate(out))]

    def connection_pattern(self, node):
        return [[True], [False]]  # the target shape only shapes the result

    def L_op(self, inputs, outputs, output_grads):
        """Broadcast the gradient back to ``g``'s shape: the transpose of summing."""
        from ffigraph.tensor.gradient import disconnected_type
        from ffigraph.tensor.basic import alloc
        from ffigraph.tensor.shapes import shape_i

        g = inputs[0]
        return [alloc(output_grads[0], *[shape_i(g, a) for a in range(g.type.ndim)]), disconnected_type()]

    def __str__(self):
        return "SumToShape"


def sum_to_shape_value(g, target):
    """The numpy reference: ``g`` summed (keeping axes) to ``target``, or ValueError."""
    if len(target) != g.ndim:
        raise ValueError("SumToShape: the target shape has %d entries but g of shape %s has %d dimensions"
                         % (len(target), g.shape, g.ndim))
    if any(t != s and t != 1 for s, t in zip(g.shape, target)):
        raise ValueError("SumToShape: cannot sum g of shape %s to shape %s (each target length must equal "
                         "g's or be 1)" % (g.shape, target))
    axes = tuple(a for a, (s, t) in enumerate(zip(g.shape, target)) if s != t)
    if not axes:
        return g
    with np.errstate(all="ignore"):
        return np.sum(g, axis=axes, keepdims=True, dtype=g.dtype)


def sum_to_shape(g, shape):
    """``g`` summed down to ``shape`` (a symbolic int vector, or a tuple/list of ints and int scalars)."""
    g = as_tensor_variable(g)
    if isinstance(shape, (list, tuple)):
        if all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in shape):
            shape = constant(np.asarray(shape, dtype=np.int64).reshape(len(shape)))
        else:
            entries = []
            for s in shape:
                s = as_tensor_variable(s)
                if s.ndim != 0 or np.dtype(s.dtype).kind not in "iu":
                    raise TypeError("sum_to_shape: each size must be an integer scalar, got %s of type %s"
                                    % (s, s.type))
                entries.append(cast(s, "int64"))
            shape = stack(entries)
    elif not isinstance(shape, Variable):
        shape = as_tensor_variable(shape)
    return SumToShape()(g, shape)

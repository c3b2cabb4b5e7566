"""Gradients of the reductions (``Reduce``) and of ``dot``.

sum and mean spread the output gradient over the reduced axes. prod divides
the product by each element when no element of a group is zero, gives the
lone zero the product of the others when there is exactly one, and gives
zeros otherwise. max and min send the gradient to the position ``argmax``/
``argmin`` picks (the first one in C order over the reduced axes), so ties
and NaNs get exactly one share, and the gradient still sums to ``gz``.

Integers, as in PyTensor: a sum or product with an integer result (a mean whose
sum is an integer), ``all`` and ``any`` are piecewise constant and give zeros
(floatX); a sum, product or mean with a float result passes the gradient to
an integer input as to a float one, and so do max, min and ``dot``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.config import config
from ffigraph.tensor import math as tm
from ffigraph.tensor.basic import alloc, as_tensor_variable, cast, constant, dimshuffle, switch, zeros_like


def _is_discrete(dtype):
    return np.dtype(dtype).kind in "biu"


def _keep(v, axes, ndim):
    """``v`` with the reduced axes put back as length-1 axes."""
    return tm._keep(v, axes, ndim)


def _sizes(x):
    from ffigraph.tensor.shapes import shape_i

    return [shape_i(x, a) for a in range(x.type.ndim)]


def reduce_input_grad(op, x, z, gz):
    """The gradient of ``Reduce`` node ``z = op(x)`` w.r.t. ``x``."""
    if op.kind in ("all", "any") or (op.kind in ("sum", "prod", "mean") and _is_discrete(op.sum_dtype(x.dtype))) \
            or (op.kind == "prod" and _is_discrete(op.accumulator_dtype(x.dtype))):
        return zeros_like(x, dtype=config.floatX)   # an integer (or bool) result: piecewise constant
    if np.dtype(x.type.dtype).kind == "c":
        raise NotImplementedError("gradients of complex values are not implemented (%s)" % op)
    axes, ndim = op.axis, x.type.ndim
    gz_kept = _keep(gz, axes, ndim)
    sizes = _sizes(x)
    if op.kind == "sum":
        return alloc(gz_kept, *sizes)
    if op.kind == "mean":
        count = constant(1, dtype="int64")
        for a in axes:
            count = count * sizes[a]
        return alloc(gz_kept / cast(count, gz.type.dtype), *sizes)
    if op.kind == "prod":
        return _prod_grad(x, z, gz_kept, axes, ndim)
    return _extremum_grad(op.kind, x, gz_kept, axes, sizes)


def _prod_grad(x, z, gz_kept, axes, ndim):
    is_zero = tm.eq(x, 0)
    zeros_in_group = _keep(tm.sum(is_zero, axis=axes), axes, ndim)
    product_of_others = _keep(tm.prod(switch(is_zero, 1, x), axis=axes), axes, ndim)
    z_kept = _keep(z, axes, ndim)
    lone_zero = tm.and_(tm.eq(zeros_in_group, 1), is_zero)
    return switch(tm.eq(zeros_in_group, 0), gz_kept * z_kept / x,
                  switch(lone_zero, gz_kept * product_of_others, 0))


def _extremum_grad(kind, x, gz_kept, axes, sizes):
    from ffigraph.tensor.basic import arange

    ndim = x.type.ndim
    position = _keep(tm.ArgReduce("arg" + kind, axes)(x), axes, ndim)
    # each element's index in C order over the reduced axes, as ArgReduce counts them
    index = constant(0, dtype="int64")
    stride = constant(1, dtype="int64")
    for a in reversed(axes):
        along = dimshuffle(arange(sizes[a]), ["x" if b != a else 0 for b in range(ndim)])
        index = index + along * stride
        stride = stride * sizes[a]
    return switch(tm.eq(index, position), gz_kept, 0)


def dot_input_grads(x, y, gz):
    """Gradients of ``dot(x, y)`` for the four 1-d/2-d combinations (float, an integer operand's
    too: it gets ``gz``'s products with the other operand)."""
    from ffigraph.tensor.basic import transpose

    if any(np.dtype(v.type.dtype).kind == "c" for v in (x, y)):
        raise NotImplementedError("gradients of complex values are not implemented (dot)")
    if x.type.ndim == 1 and y.type.ndim == 1:
        gx, gy = gz * y, gz * x
    elif x.type.ndim == 2 and y.type.ndim == 1:
        gx, gy = dimshuffle(gz, (0, "x")) * dimshuffle(y, ("x", 0)), tm.dot(transpose(x), gz)
    elif x.type.ndim == 1 and y.type.ndim == 2:
        gx, gy = tm.dot(y, gz), dimshuffle(x, (0, "x")) * dimshuffle(gz, ("x", 0))
    else:
        gx, gy = tm.dot(gz, transpose(y)), tm.dot(transpose(x), gz)
    return [as_tensor_variable(gx), as_tensor_variable(gy)]

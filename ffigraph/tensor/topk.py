"""``topk``, ``argtopk`` and ``topk_and_argtopk`` (Theano's ``theano.tensor.sort``), with C code (topk_c.py).

``topk(x, kth, axis=-1, sorted=True, idx_dtype='int64')`` gives the ``kth`` largest elements of
each lane of ``x`` along ``axis`` (``kth`` < 0: the ``-kth`` smallest; ``axis=None``: of the
flattened array), ``argtopk`` their positions along that axis (of ``idx_dtype``), and
``topk_and_argtopk`` both, from one op. ``kth`` may be a symbolic integer scalar; 0, or more than
the axis holds, is a ValueError when the function runs.

Which elements, and in what order, is fixed (Theano left both unspecified: numpy's
``argpartition``), so that the C code and ``perform`` agree element for element and a graph's
result does not depend on its linker:

- the order is numpy's sort order, NaN above every number (``numpy.sort`` puts it last): the
  largest ``kth`` of ``[1, nan, 3]`` for kth=1 is ``nan``, the smallest is ``1``;
- among equal values the lower position ranks first;
- ``sorted=True`` gives them in rank order: the largest first for kth > 0, the smallest first for
  kth < 0; ``sorted=False`` gives the same elements in the order of their positions along the axis.
  (Theano 1.0 refused ``sorted=True``, its default, with NotImplementedError; here it works.)

An ``idx_dtype`` too small for the axis's positions is a ValueError when the function runs, not a
wrap. The gradient sends each output gradient to the position it was taken from (Theano's
``set_subtensor`` of zeros at the indices); the indices' gradient is zero, and ``kth`` has none.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.advanced_subtensor import advanced_set_subtensor, along_axis_index
from ffigraph.tensor.basic import as_tensor_variable, cast, zeros_like
from ffigraph.tensor.gradient import grad_undefined
from ffigraph.tensor.shapes import flatten
from ffigraph.tensor.type import TensorType

__all__ = ["TopKOp", "topk", "argtopk", "topk_and_argtopk"]

INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


class TopKOp(DelegatedCOp, Op):
    """The ``|kth|`` top elements of each lane along ``axis`` and/or their positions (the outputs
    ``return_values`` and ``return_indices`` ask for, in that order); see the module doc."""

    c_impl = "ffigraph.tensor.topk_c"
    __props__ = ("axis", "sorted", "return_values", "return_indices", "idx_dtype")

    def __init__(self, axis=-1, sorted=True, idx_dtype="int64", return_values=True, return_indices=True):
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
            raise TypeError('TopKOp: "axis" must be an integer, got %r' % (axis,))
        if str(idx_dtype) not in INTEGER_DTYPES:
            raise TypeError('TopKOp: "idx_dtype" must be an integer dtype (one of %s), got %r'
                            % (", ".join(INTEGER_DTYPES), idx_dtype))
        if not (return_values or return_indices):
            raise ValueError("TopKOp: return_values and return_indices are both False: nothing to return")
        self.axis = int(axis)
        self.sorted = bool(sorted)
        self.idx_dtype = str(idx_dtype)
        self.return_values = bool(return_values)
        self.return_indices = bool(return_indices)

    def __str__(self):
        return "TopKOp{axis=%d, sorted=%s}" % (self.axis, self.sorted)

    def make_node(self, x, kth):
        x = as_tensor_variable(x)
        if x.ndim == 0:
            raise ValueError("TopKOp: x must have at least one dimension, got the 0-d %s" % (x,))
        if not -x.ndim <= self.axis < x.ndim:
            raise IndexError("TopKOp: axis %d is out of range for x with %d dimensions (expected %d to %d)"
                             % (self.axis, x.ndim, -x.ndim, x.ndim - 1))
        if np.dtype(x.dtype).kind == "c":
            raise TypeError("TopKOp: complex values have no order (x is %s)" % x.dtype)
        kth = as_tensor_variable(kth)
        if kth.ndim != 0 or kth.dtype not in INTEGER_DTYPES:
            raise TypeError("TopKOp: kth must be an integer scalar, got %s of dtype %s with %d dimensions"
                            % (kth, kth.dtype, kth.ndim))
        if isinstance(kth, Constant) and int(kth.data) == 0:
            raise ValueError("TopKOp: kth must not be 0")
        axis = self.axis % x.ndim
        shape = list(x.type.shape)
        shape[axis] = abs(int(kth.data)) if isinstance(kth, Constant) else None
        outputs = []
        if self.return_values:
            outputs.append(TensorType(x.dtype, tuple(shape))())
        if self.return_indices:
            outputs.append(TensorType(self.idx_dtype, tuple(shape))())
        return Apply(self, [x, kth], outputs)

    def perform(self, node, inputs, output_storage):
        x, kth = inputs
        values, indices = top_k(x, int(kth), self.axis % x.ndim, self.sorted, self.idx_dtype)
        outputs = ([values] if self.return_values else []) + ([indices] if self.return_indices else [])
        for storage, value in zip(output_storage, outputs):
            storage[0] = value

    def infer_shape(self, fgraph, node, input_shapes):
        shape = list(input_shapes[0])
        kth = cast(node.inputs[1], "int64")
        shape[self.axis % node.inputs[0].ndim] = abs(kth)
        return [tuple(shape)] * len(node.outputs)

    def L_op(self, inputs, outputs, output_grads):
        x, kth = inputs
        kth_grad = grad_undefined(self, 1, kth, "topk: kth is not differentiable")
        x_grad = zeros_like(x, dtype=None if x.dtype.startswith("float") else "floatX")
        if not self.return_values or not x.dtype.startswith("float"):
            return [x_grad, kth_grad]   # positions (and integer values) are piecewise constant in x
        if self.return_indices:
            positions = outputs[-1]
        else:
            positions = TopKOp(self.axis, self.sorted, self.idx_dtype, return_values=False)(x, kth)
        index = along_axis_index(x, self.axis % x.ndim, positions)
        return [advanced_set_subtensor(x_grad, output_grads[0], *index), kth_grad]


def top_k(x, kth, axis, sorted, idx_dtype):
    """numpy's answer for TopKOp (``perform``): (values, positions) of the ``|kth|`` top elements of
    each lane of ``x`` along ``axis``, in the order the module doc gives."""
    x = np.asarray(x)
    n = x.shape[axis]
    if kth == 0:
        raise ValueError("TopKOp: kth must not be 0")
    if abs(kth) > n:
        raise ValueError("TopKOp: kth = %d asks for more than the %d elements along axis %d of x"
                         % (kth, n, axis))
    if n - 1 > np.iinfo(idx_dtype).max:
        raise ValueError("TopKOp: idx_dtype %s cannot hold the positions 0 .. %d along axis %d of x"
                         % (idx_dtype, n - 1, axis))
    if kth > 0:
        # the largest first, equal values by position: a stable ascending sort of the reversed
        # lane ranks the later of two equal values first; reversed again, the earlier one is
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")   # the smallest first, NaN last
    positions = np.take(order, np.arange(abs(kth)), axis=axis)
    if not sorted:
        positions = np.sort(positions, axis=axis)
    values = np.take_along_axis(x, positions, axis=axis)
    return values, positions.astype(idx_dtype)


def _flattened(x, axis):
    x = as_tensor_variable(x)
    if axis is None:
        return flatten(x, 1), 0
    return x, axis


def topk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """The ``kth`` largest elements of ``x`` along ``axis`` (kth < 0: the ``-kth`` smallest;
    ``axis=None``: of the flattened array), in rank order (``sorted=True``) or in the order of
    their positions (``sorted=False``); see the module doc."""
    x, axis = _flattened(x, axis)
    return TopKOp(axis=axis, sorted=sorted, idx_dtype=idx_dtype, return_indices=False)(x, kth)


def argtopk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """The positions along ``axis`` of ``topk(x, kth, axis, sorted)``'s elements, of ``idx_dtype``."""
    x, axis = _flattened(x, axis)
    return TopKOp(axis=axis, sorted=sorted, idx_dtype=idx_dtype, return_values=False)(x, kth)


def topk_and_argtopk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """``(topk(...), argtopk(...))`` from one op."""
    x, axis = _flattened(x, axis)
    return tuple(TopKOp(axis=axis, sorted=sorted, idx_dtype=idx_dtype)(x, kth))

"""Diagonals as ops, with PyTensor's names and semantics: ``ExtractDiag`` (``diagonal``),
``FillDiagonal`` (``fill_diagonal``) and ``FillDiagonalOffset`` (``fill_diagonal_offset``).

ExtractDiag is numpy's ``diagonal``: the two axes removed and the diagonal appended as the last
axis. In C it is a view (the diagonal's elements read in place, at the stride of one row plus one
column); ``perform`` returns a copy (numpy's diagonal views are read-only). The fill ops return a
copy of their input with the diagonal set; C code for both in diagonal_c.py.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upcast
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, normalize_axis, switch, weak_in_dtype
from ffigraph.tensor.gradient import Lop, grad_undefined
from ffigraph.tensor.math import add, ge, maximum, minimum, mul, neg, sub
from ffigraph.tensor.shapes import flatten, reshape, shape_i
from ffigraph.tensor.type import TensorType

_INTEGER_KINDS = "iu"


def diagonal_length(n_rows, n_cols, offset):
    """How many elements diagonal ``offset`` of an ``n_rows`` x ``n_cols`` matrix has (ints)."""
    return max(0, min(n_rows - max(-offset, 0), n_cols - max(offset, 0)))


def _diagonal_slice(n_cols, offset, length):
    """The slice of a flattened (rows, n_cols) block that walks its diagonal ``offset``
    (``length`` elements): start at the offset's first element, step one row and one column."""
    step = add(n_cols, 1)
    start = offset if not isinstance(offset, (int, np.integer)) else None
    if isinstance(offset, (int, np.integer)):
        start = constant(int(offset), dtype="int64") if offset >= 0 else mul(constant(-int(offset), dtype="int64"),
                                                                           n_cols)
    return slice(start, add(start, mul(length, step)), step)


def sliced_diagonal(a, offset, axis1, axis2):
    """numpy's ``diagonal`` written with dimshuffle, reshape and a strided slice (what
    ExtractDiag's gradient differentiates)."""
    a1, a2 = normalize_axis(axis1, a.ndim, "diagonal"), normalize_axis(axis2, a.ndim, "diagonal")
    rest = [d for d in range(a.ndim) if d not in (a1, a2)]
    moved = a.dimshuffle(*(rest + [a1, a2]))
    n_rows, n_cols = shape_i(a, a1), shape_i(a, a2)
    length = maximum(minimum(sub(n_rows, max(-offset, 0)), sub(n_cols, max(offset, 0))), 0)
    flat = reshape(moved, [shape_i(a, d) for d in rest] + [n_rows * n_cols], ndim=len(rest) + 1)
    return flat[(slice(None),) * len(rest) + (_diagonal_slice(n_cols, offset, length),)]


class ExtractDiag(DelegatedCOp, Op):
    """The diagonal ``offset`` of the 2-d slices of axes ``axis1`` (rows) and ``axis2`` (columns)."""

    __props__ = ("offset", "axis1", "axis2", "view")
    c_impl = "ffigraph.tensor.diagonal_c"
    c_kind = "extract"

    def __init__(self, offset=0, axis1=0, axis2=1, view=False):
        if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool):
            raise TypeError("ExtractDiag: offset must be an int, got %r" % (offset,))
        self.offset, self.axis1, self.axis2, self.view = int(offset), int(axis1), int(axis2), bool(view)
        # (its C is always a view; perform copies, which the view_map allows)
        self.view_map = {0: [0]}

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.ndim < 2:
            raise ValueError("ExtractDiag: %s has %d dimensions; a diagonal needs at least 2" % (x, x.ndim))
        a1, a2 = normalize_axis(self.axis1, x.ndim, "ExtractDiag"), normalize_axis(self.axis2, x.ndim, "ExtractDiag")
        if a1 == a2:
            raise ValueError("ExtractDiag: axis1 and axis2 cannot be the same (%d)" % a1)
        shape = x.type.shape
        rows, cols = shape[a1], shape[a2]
        length = None if rows is None or cols is None else diagonal_length(rows, cols, self.offset)
        rest = [shape[d] for d in range(x.ndim) if d not in (a1, a2)]
        return Apply(self, [x], [TensorType(x.dtype, tuple(rest) + (length,))()])

    def axes(self, ndim):
        return normalize_axis(self.axis1, ndim, "ExtractDiag"), normalize_axis(self.axis2, ndim, "ExtractDiag")

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = np.diagonal(x, self.offset, *self.axes(x.ndim)).copy()

    def infer_shape(self, fgraph, node, input_shapes):
        (shape,) = input_shapes
        a1, a2 = self.axes(node.inputs[0].ndim)
        rows, cols = shape[a1], shape[a2]
        off = self.offset
        length = maximum(minimum(sub(rows, max(-off, 0)), sub(cols, max(off, 0))), 0)
        rest = [shape[d] for d in range(len(shape)) if d not in (a1, a2)]
        return [tuple(rest) + (length,)]

    def L_op(self, inputs, outputs, output_grads):
        # the gradient of the same diagonal written with reshape and slicing, whose pieces have
        # gradients: zeros with the output gradient on the diagonal
        (x,) = inputs
        return [Lop(sliced_diagonal(x, self.offset, self.axis1, self.axis2), x, output_grads[0])]

    def __str__(self):
        return "ExtractDiag{offset=%d, axis1=%d, axis2=%d}" % (self.offset, self.axis1, self.axis2)


def _fill_value(op, a, val):
    """``val`` as a scalar of ``a``'s dtype: PyTensor's rule (it must upcast to that dtype), and a
    Python number takes the dtype when its value is kept there (``fill_diagonal(x, 1)`` of bools)."""
    val = as_tensor_variable(val)
    if val.ndim != 0:
        raise TypeError("%s: the value must be a scalar, got %s with %d dimensions" % (op, val, val.ndim))
    kept = weak_in_dtype(val, a.dtype)
    if kept is not None:
        return kept
    val = cast(val, upcast(a.dtype, val.dtype))
    if val.dtype != a.dtype:
        raise TypeError("%s: the value (dtype %s) must have the dtype of the array (%s) or one that casts to "
                        "it" % (op, val.dtype, a.dtype))
    return val


class FillDiagonal(DelegatedCOp, Op):
    """``a`` with ``val`` on its main diagonal: a 2-d array (numpy's rule for tall matrices: no wrap)
    or an n-d one whose lengths are all equal."""

    __props__ = ()
    c_impl = "ffigraph.tensor.diagonal_c"
    c_kind = "fill"

    def make_node(self, a, val):
        a = as_tensor_variable(a)
        if a.ndim < 2:
            raise TypeError("fill_diagonal: %s has %d dimensions; it needs at least 2" % (a, a.ndim))
        return Apply(self, [a, _fill_value("fill_diagonal", a, val)], [a.type()])

    def perform(self, node, inputs, output_storage):
        a, val = inputs
        if a.ndim > 2 and len(set(a.shape)) > 1:
            raise ValueError("fill_diagonal: an array of more than 2 dimensions must have all lengths equal, got "
                             "shape %s" % (a.shape,))
        out = a.copy()
        np.fill_diagonal(out, val)
        output_storage[0][0] = out

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def L_op(self, inputs, outputs, output_grads):
        a, val = inputs
        (g,) = output_grads
        # where val went: flat positions 0, step, 2 step, ... of a C-ordered array (numpy's walk)
        return [fill_diagonal(g, constant(0, dtype=g.dtype)), cast(flatten(g, 1)[_fill_positions(a)].sum(), val.dtype)]


def _fill_positions(a):
    """The flat positions numpy's fill_diagonal writes (a slice of ``a`` flattened in C order)."""
    if a.ndim == 2:
        n_cols = shape_i(a, 1)
        return slice(None, mul(n_cols, n_cols), add(n_cols, 1))
    n = shape_i(a, 0)
    step, power = constant(1, dtype="int64"), constant(1, dtype="int64")
    for _ in range(a.ndim - 1):
        power = mul(power, n)
        step = add(step, power)
    return slice(None, None, step)


class FillDiagonalOffset(DelegatedCOp, Op):
    """A copy of the matrix ``a`` with ``val`` on its diagonal ``offset`` (a symbolic integer
    scalar: above the main diagonal when positive, below when negative)."""

    __props__ = ()
    c_impl = "ffigraph.tensor.diagonal_c"
    c_kind = "fill_offset"

    def make_node(self, a, val, offset):
        a = as_tensor_variable(a)
        offset = as_tensor_variable(offset)
        if a.ndim != 2:
            raise TypeError("fill_diagonal_offset: the array must have exactly two dimensions, got %s with %d"
                            % (a, a.ndim))
        val = _fill_value("fill_diagonal_offset", a, val)
        if offset.ndim != 0:
            raise TypeError("fill_diagonal_offset: the offset must be a scalar, got %d dimensions" % offset.ndim)
        if np.dtype(offset.dtype).kind not in _INTEGER_KINDS:
            raise TypeError("fill_diagonal_offset: the offset must be an integer, got dtype %s" % offset.dtype)
        return Apply(self, [a, val, offset], [a.type()])

    def perform(self, node, inputs, output_storage):
        a, val, offset = inputs
        out = a.copy()
        start, end, step = _offset_walk(a.shape[0], a.shape[1], int(offset))
        out.flat[start:end:step] = val
        output_storage[0][0] = out

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def L_op(self, inputs, outputs, output_grads):
        a, val, offset = inputs
        (g,) = output_grads
        height, width = shape_i(a, 0), shape_i(a, 1)
        off = cast(offset, "int64")
        smaller = minimum(height, width)
        start = switch(ge(off, 0), off, mul(neg(off), width))
        count = maximum(switch(ge(off, 0), minimum(smaller, sub(width, off)), minimum(smaller, add(height, off))), 0)
        step = add(width, 1)
        picked = flatten(g, 1)[start:add(start, mul(count, step)):step]
        return [fill_diagonal_offset(g, constant(0, dtype=g.dtype), offset), cast(picked.sum(), val.dtype),
                grad_undefined(self, 2, offset, "the offset is an integer")]


def _offset_walk(height, width, offset):
    """(start, end, step) of diagonal ``offset`` in a C-ordered ``height`` x ``width`` matrix's flat
    positions (PyTensor's FillDiagonalOffset)."""
    if offset >= 0:
        start, count = offset, min(min(width, height), width - offset)
    else:
        start, count = -offset * width, min(min(width, height), height + offset)
    count = max(count, 0)
    return start, start + (width + 1) * count, width + 1


fill_diagonal_offset_op = FillDiagonalOffset()
fill_diagonal_op = FillDiagonal()


def fill_diagonal(a, val):
    """PyTensor's ``fill_diagonal``: ``a`` (2-d, or n-d with all lengths equal) with ``val`` (a
    scalar that casts to ``a``'s dtype) on its main diagonal; numpy's rule for tall matrices (no wrap)."""
    return fill_diagonal_op(a, val)


def fill_diagonal_offset(a, val, offset):
    """PyTensor's ``fill_diagonal_offset``: a copy of the matrix ``a`` with ``val`` on diagonal ``offset``."""
    return fill_diagonal_offset_op(a, val, offset)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``numpy.diagonal``: the diagonal ``offset`` of the 2-d slices given by ``axis1`` and ``axis2``,
    those axes removed and the diagonal added as the last axis (an ExtractDiag node)."""
    return ExtractDiag(offset, axis1, axis2)(a)

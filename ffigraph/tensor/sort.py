"""``sort`` and ``argsort`` (PyTensor's ``pytensor.tensor.sort``), with C code (sort_c.py).

``sort(a, axis=-1, kind='quicksort', order=None)`` and ``argsort(a, axis=-1, kind='quicksort',
order=None)``, as PyTensor's: ``axis=None`` sorts the flattened array (a 0-d input becomes one
element); ``order`` (for numpy's structured arrays) must be None. Every ``kind`` ('quicksort',
'mergesort', 'heapsort', 'stable') sorts stably: numpy's quicksort leaves the order of equal
values unspecified, and one order for all kinds lets the C code and ``perform`` agree exactly
(``argsort`` matches ``numpy.argsort(kind="stable")``). NaN sorts last, as in numpy.

Unlike PyTensor, where the axis is a symbolic input, the axis is a property of the op (an int
known when the graph is built): an axis out of range is a ValueError then.

Gradients as PyTensor's: ``sort``'s routes the output gradient back through the inverse
permutation ``argsort(argsort(a))`` with advanced indexing; ``argsort``'s is zero (an index is
piecewise constant in the values).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.advanced_subtensor import along_axis_index
from ffigraph.tensor.basic import as_tensor_variable, normalize_axis
from ffigraph.tensor.topk import TopKOp, argtopk, topk, topk_and_argtopk
from ffigraph.tensor.type import TensorType

# topk, argtopk and topk_and_argtopk live in topk.py; Theano has them here (theano.tensor.sort)
__all__ = ["sort", "argsort", "SortOp", "ArgSortOp", "TopKOp", "topk", "argtopk", "topk_and_argtopk"]

KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def _check_sortable(op, x):
    if np.dtype(x.dtype).kind == "c":
        raise TypeError("%s: complex values have no order (input %s)" % (op, x))


class _SortBase(DelegatedCOp, Op):
    """Sort each lane along ``axis`` (a non-negative int); ``returns`` says what is written."""

    c_impl = "ffigraph.tensor.sort_c"
    __props__ = ("axis", "kind")
    returns = None

    def __init__(self, axis, kind="quicksort"):
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)) or axis < 0:
            raise ValueError("%s: axis must be a non-negative int (normalise it first), got %r"
                             % (type(self).__name__, axis))
        if kind not in KINDS:
            raise ValueError("%s: kind must be one of %s, got %r" % (type(self).__name__, KINDS, kind))
        self.axis = int(axis)
        self.kind = kind

    def _input(self, x):
        x = as_tensor_variable(x)
        _check_sortable(self, x)
        if self.axis >= x.ndim:
            raise ValueError("%s: axis %d is out of range for %s with %d dimensions" % (self, self.axis, x, x.ndim))
        return x

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def __str__(self):
        return "%s{axis=%d}" % (type(self).__name__, self.axis)


class SortOp(_SortBase):
    """A sorted copy of ``x`` along ``axis`` (stable, NaN last)."""

    returns = "values"

    def make_node(self, x):
        x = self._input(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.sort(inputs[0], axis=self.axis, kind="stable")

    def L_op(self, inputs, outputs, output_grads):
        (x,), (g,) = inputs, output_grads
        return [g[_inverse_index(x, self.axis, self.kind)]]


class ArgSortOp(_SortBase):
    """The int64 positions along ``axis`` that sort ``x`` (stable, NaN last)."""

    returns = "indices"

    def make_node(self, x):
        x = self._input(x)
        return Apply(self, [x], [TensorType("int64", x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.argsort(inputs[0], axis=self.axis, kind="stable").astype(np.int64)

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.basic import zeros_like

        (x,) = inputs
        return [zeros_like(x, dtype=None if x.dtype.startswith("float") else "floatX")]


def _inverse_index(x, axis, kind):
    """The advanced index that sends ``sort(x, axis)`` back to ``x``'s order: along ``axis``, the
    inverse permutation ``argsort(argsort(x))``; along every other axis, its own positions
    (``arange``, shaped to broadcast)."""
    return along_axis_index(x, axis, ArgSortOp(axis, kind)(ArgSortOp(axis, kind)(x)))


def _sort_args(a, axis, kind, order, what, stable=None):
    if order is not None:
        raise ValueError("%s: the order argument is not applicable to ffigraph graphs (no structured arrays)" % what)
    if stable is not None and kind is not None:
        raise ValueError("%s: kind and stable cannot be set at the same time" % what)
    if stable:
        kind = "stable"
    elif kind is None:
        kind = "quicksort"
    if kind not in KINDS:
        raise ValueError("%s: kind must be one of %s, got %r" % (what, KINDS, kind))
    a = as_tensor_variable(a)
    _check_sortable(what, a)
    if axis is None:
        from ffigraph.tensor.shapes import flatten

        return flatten(a, 1), 0, kind
    if a.ndim == 0:
        raise ValueError("%s: axis %r is out of range for a 0-d input; use axis=None" % (what, axis))
    return a, normalize_axis(axis, a.ndim, what), kind


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A sorted copy of ``a`` along ``axis`` (None: of the flattened array), as ``numpy.sort``;
    equal values keep their order whatever ``kind`` (``stable=True`` is ``kind="stable"``, as in
    PyTensor), NaN comes last."""
    a, axis, kind = _sort_args(a, axis, kind, order, "sort", stable)
    return SortOp(axis, kind)(a)


def argsort(a, axis=-1, kind=None, order=None, stable=None):
    """The int64 indices that sort ``a`` along ``axis`` (None: the flattened array), as
    ``numpy.argsort(kind="stable")`` whatever ``kind`` (or ``stable``); NaN comes last."""
    a, axis, kind = _sort_args(a, axis, kind, order, "argsort", stable)
    return ArgSortOp(axis, kind)(a)

"""numpy's array helpers with PyTensor's names (``pytensor.tensor.extra_ops`` and friends).

Ops with C code (extra_ops_c.py):

* ``cumsum(x, axis=None)``, ``cumprod(x, axis=None)``: one op, ``CumOp(axis, mode)`` with mode
  'add' or 'mul'; ``axis=None`` works on the flattened array. The output dtype is numpy's (bools
  and ints narrower than 64 bits widen to int64, unsigned ones to uint64; floats keep theirs),
  and the running value is kept in that dtype, as numpy does. Gradients as PyTensor's: cumsum's
  is the reversed cumsum of the output gradient, cumprod's ``cumsum((cumprod(x) * g)[::-1])[::-1]
  / x`` (so it is NaN or inf where ``x`` has zeros, as in PyTensor).
* ``searchsorted(x, v, side='left', sorter=None)``: numpy's, ``x`` a vector sorted ascending (or
  ordered by ``sorter``), NaN last; int64 insertion points of ``v``'s shape.
* ``bincount(x, weights=None, minlength=None, assert_nonneg=False)``: numpy's, ``x`` a vector of
  non-negative integers; a negative value is always an error (a ValueError naming it), so
  ``assert_nonneg`` changes nothing. Counts are int64 (numpy's; PyTensor's keep ``x``'s dtype,
  which overflows for narrow ints); weighted sums have the weights' dtype when it is a float (as
  PyTensor), float64 otherwise (as numpy).

Compositions of existing ops: ``diff`` (slices), ``ptp`` (max - min), ``median`` (``sort`` and
a pick of the middle elements, so it has C code too), ``argwhere`` (``nonzero``, stacked).

Python-only: ``unique`` (``Unique``, numpy.unique in ``perform``; its outputs' lengths depend on
the values, and it gives nothing a sort-based C version would beat numpy at). Asking for its C
code raises MethodNotDefined saying so; the C linkers run it in Python.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp, MethodNotDefined
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upcast
from ffigraph.tensor.basic import arange, as_tensor_variable, cast, constant, normalize_axis, zeros, zeros_like
from ffigraph.tensor import math as tm
from ffigraph.tensor.math import reduce_sum_dtype
from ffigraph.tensor.raise_op import CheckAndRaise
from ffigraph.tensor.subtensor import set_subtensor
from ffigraph.tensor.type import TensorType
# (PyTensor's extra_ops names of the diagonal-filling ops; ffigraph.tensor lists them with construct's)
from ffigraph.tensor.diagonal import FillDiagonal, FillDiagonalOffset, fill_diagonal, fill_diagonal_offset  # noqa: F401

__all__ = ["CumOp", "cumsum", "cumprod", "diff", "SearchsortedOp", "searchsorted", "BinCountOp", "bincount",
           "Unique", "unique", "argwhere", "median", "ptp", "unravel_index", "ravel_multi_index"]


def _index_dims(dims, what):
    """The int64 scalars of ``dims``: a tuple or list of ints or integer scalars, or an integer
    vector of static length."""
    if isinstance(dims, (tuple, list)):
        parts = [as_tensor_variable(d) for d in dims]
    else:
        vector = as_tensor_variable(dims)
        if vector.ndim != 1 or vector.type.shape[0] is None:
            raise TypeError("%s: dims must be a tuple of ints or an integer vector of known length, got %s"
                            % (what, dims))
        parts = [vector[k] for k in range(vector.type.shape[0])]
    for d in parts:
        if d.ndim != 0 or np.dtype(d.dtype).kind not in "iu":
            raise TypeError("%s: '%s' object cannot be interpreted as an index (dims)" % (what, d.dtype))
    return [cast(d, "int64") for d in parts]


def _integer_indices(x, what):
    x = as_tensor_variable(x)
    if np.dtype(x.dtype).kind not in "iu":
        raise TypeError("%s: '%s' object cannot be interpreted as an index" % (what, x.dtype))
    return cast(x, "int64")


def unravel_index(indices, dims, order="C"):
    """numpy's ``unravel_index``: the coordinates (a tuple of int64 arrays shaped like ``indices``)
    of flat ``indices`` into an array of shape ``dims``, in C (row-major) or F order. An index
    outside ``[0, prod(dims))`` is a ValueError when the function runs, as numpy's."""
    if order not in ("C", "F"):
        raise ValueError("unravel_index: order must be 'C' or 'F', got %r" % (order,))
    flat = _integer_indices(indices, "unravel_index")
    sizes = _index_dims(dims, "unravel_index")
    total = constant(1, dtype="int64")
    for d in sizes:
        total = total * d
    flat = CheckAndRaise(ValueError, "unravel_index: an index is out of bounds for an array of that size "
                         "(prod(dims))")(flat, tm.all(tm.ge(flat, 0)), tm.all(tm.lt(flat, total)))
    coords = [None] * len(sizes)
    rest = flat
    for k in (reversed(range(len(sizes))) if order == "C" else range(len(sizes))):
        coords[k] = rest % sizes[k]
        rest = rest // sizes[k]
    return tuple(coords)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """numpy's ``ravel_multi_index``: the flat int64 indices, into an array of shape ``dims``, of
    the coordinates ``multi_index`` (a tuple or list of integer arrays, broadcast together), in C or
    F order. ``mode`` (one for all, or one per coordinate): 'raise' makes a coordinate outside
    ``[0, d)`` a ValueError when the function runs, 'wrap' takes it modulo ``d``, 'clip' clips it."""
    if not isinstance(multi_index, (tuple, list)):
        raise TypeError("ravel_multi_index: multi_index must be a tuple or a list, got %r" % (multi_index,))
    if order not in ("C", "F"):
        raise ValueError("ravel_multi_index: order must be 'C' or 'F', got %r" % (order,))
    sizes = _index_dims(dims, "ravel_multi_index")
    if len(multi_index) != len(sizes):
        raise ValueError("ravel_multi_index: parameter multi_index must be a sequence of length %d" % len(sizes))
    modes = list(mode) if isinstance(mode, (tuple, list)) else [mode] * len(sizes)
    if len(modes) != len(sizes) or any(m not in ("raise", "wrap", "clip") for m in modes):
        raise ValueError("ravel_multi_index: mode must be 'raise', 'wrap' or 'clip' (or one per coordinate), got %r"
                         % (mode,))
    coords = []
    for coordinate, d, m in zip(multi_index, sizes, modes):
        c = _integer_indices(coordinate, "ravel_multi_index")
        if m == "raise":
            c = CheckAndRaise(ValueError, "ravel_multi_index: invalid entry in coordinates array")(
                c, tm.all(tm.ge(c, 0)), tm.all(tm.lt(c, d)))
        elif m == "wrap":
            c = c % d
        else:
            c = tm.clip(c, 0, d - 1)
        coords.append(c)
    flat, stride = None, constant(1, dtype="int64")
    for k in (reversed(range(len(sizes))) if order == "C" else range(len(sizes))):
        term = coords[k] * stride
        flat = term if flat is None else flat + term
        stride = stride * sizes[k]
    return flat


def to_one_hot(y, nb_class, dtype=None):
    """Theano's ``to_one_hot``: a matrix whose row ``i`` is 1 in column ``y[i]`` and 0 elsewhere
    (``y``: an integer vector of classes in ``[0, nb_class)``; ``dtype``: floatX by default). A
    class outside that range is an IndexError when the function runs."""
    y = as_tensor_variable(y)
    if y.ndim != 1 or np.dtype(y.dtype).kind not in "iu":
        raise TypeError("to_one_hot: y must be an integer vector of classes, got %s (%s, %d-d)" % (y, y.dtype, y.ndim))
    rows = y.shape[0]
    one_hot = zeros((rows, nb_class), dtype="floatX" if dtype is None else dtype)
    return set_subtensor(one_hot[arange(rows), y], 1)


def _float_zeros_like(x):
    """The zero gradient of ``x``: its dtype for floats, floatX for ints and bools."""
    return zeros_like(x, dtype=None if np.dtype(x.dtype).kind in "fc" else "floatX")


def _reverse(x, axis):
    """``x`` reversed along ``axis`` (a view)."""
    return x[(slice(None),) * axis + (slice(None, None, -1),)]


def _check_real(x, what):
    if np.dtype(x.dtype).kind == "c":
        raise TypeError("%s: complex values are not supported (input %s)" % (what, x))


# ------------------------------------------------------------------ cumsum, cumprod


class CumOp(DelegatedCOp, Op):
    """The running sum (``mode='add'``) or product (``mode='mul'``) along ``axis`` (a non-negative
    int), in numpy's output dtype."""

    c_impl = "ffigraph.tensor.extra_ops_c"
    c_kind = "cum"
    __props__ = ("axis", "mode")

    def __init__(self, axis, mode="add"):
        if mode not in ("add", "mul"):
            raise ValueError('CumOp: unknown mode "%s" (use "add" or "mul")' % (mode,))
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
            raise TypeError("CumOp: axis must be an integer, got %r" % (axis,))
        if axis < 0:
            raise ValueError("CumOp: axis must be non-negative, got %d" % axis)
        self.axis = int(axis)
        self.mode = mode

    def make_node(self, x):
        x = as_tensor_variable(x)
        _check_real(x, self)
        if self.axis >= x.ndim:
            raise ValueError("%s: axis %d is out of range for %s with %d dimensions" % (self, self.axis, x, x.ndim))
        return Apply(self, [x], [TensorType(reduce_sum_dtype("sum", x.dtype, None), x.type.shape)()])

    def perform(self, node, inputs, output_storage):
        fn = np.cumsum if self.mode == "add" else np.cumprod
        with np.errstate(all="ignore"):
            output_storage[0][0] = fn(inputs[0], axis=self.axis, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def L_op(self, inputs, outputs, output_grads):
        (x,), (g,) = inputs, output_grads
        if np.dtype(x.dtype).kind not in "fc":
            return [_float_zeros_like(x)]
        if self.mode == "add":
            # out[i] = sum_{j <= i} x[j]: x[j] gets every g[i] with i >= j
            return [_reverse(CumOp(self.axis, "add")(_reverse(g, self.axis)), self.axis)]
        # out[i] = prod_{j <= i} x[j]: d out[i] / d x[j] = out[i] / x[j] for i >= j
        fx = CumOp(self.axis, "mul")(x)
        return [_reverse(CumOp(self.axis, "add")(_reverse(fx * g, self.axis)), self.axis) / x]

    def __str__(self):
        return "CumOp{%d, %s}" % (self.axis, self.mode)


def _cum(x, axis, mode):
    x = as_tensor_variable(x)
    if axis is None:
        from ffigraph.tensor.shapes import flatten

        x, axis = flatten(x, 1), 0
    else:
        axis = normalize_axis(axis, x.ndim, "cumsum" if mode == "add" else "cumprod")
    return CumOp(axis, mode)(x)


def cumsum(x, axis=None):
    """The cumulative sum along ``axis`` (None: of the flattened array), as ``numpy.cumsum``."""
    return _cum(x, axis, "add")


def cumprod(x, axis=None):
    """The cumulative product along ``axis`` (None: of the flattened array), as ``numpy.cumprod``."""
    return _cum(x, axis, "mul")


# ------------------------------------------------------------------ diff


def diff(x, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis`` (``x[1:] - x[:-1]``, ``n`` times), as
    ``numpy.diff``; ``n=0`` gives ``x``. Booleans differ by ``!=`` as in numpy."""
    x = as_tensor_variable(x)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError("diff: order must be a non-negative int, got %r" % (n,))
    axis = normalize_axis(axis, x.ndim, "diff")
    lead = (slice(None),) * axis
    for _ in range(int(n)):
        upper, lower = x[lead + (slice(1, None),)], x[lead + (slice(None, -1),)]
        if x.dtype == "bool":
            from ffigraph.tensor.math import neq

            x = neq(upper, lower)
        else:
            x = upper - lower
    return x


# ------------------------------------------------------------------ searchsorted


class SearchsortedOp(DelegatedCOp, Op):
    """numpy.searchsorted of ``v`` in the vector ``x`` (optionally through ``sorter``)."""

    c_impl = "ffigraph.tensor.extra_ops_c"
    c_kind = "searchsorted"
    __props__ = ("side",)

    def __init__(self, side="left"):
        if side not in ("left", "right"):
            raise ValueError("searchsorted: side must be 'left' or 'right', got %r" % (side,))
        self.side = side

    def make_node(self, x, v, sorter=None):
        x, v = as_tensor_variable(x), as_tensor_variable(v)
        if x.ndim != 1:
            raise ValueError("searchsorted: x must be a vector, got %s with %d dimensions" % (x, x.ndim))
        _check_real(x, self)
        _check_real(v, self)
        common = upcast(x.dtype, v.dtype)   # numpy compares in the common dtype
        x, v = cast(x, common), cast(v, common)
        inputs = [x, v]
        if sorter is not None:
            sorter = as_tensor_variable(sorter)
            if sorter.ndim != 1 or np.dtype(sorter.dtype).kind not in "iu":
                raise TypeError("searchsorted: sorter must be an integer vector, got %s (%s, %d dimensions)"
                                % (sorter, sorter.dtype, sorter.ndim))
            inputs.append(sorter)
        return Apply(self, inputs, [TensorType("int64", v.type.shape)()])

    def perform(self, node, inputs, output_storage):
        x, v = inputs[:2]
        sorter = inputs[2] if len(inputs) == 3 else None
        if sorter is not None:
            if sorter.shape[0] != x.shape[0]:
                raise ValueError("%s: sorter has %d entries but x has %d elements" % (self, sorter.shape[0], x.shape[0]))
            bad = (sorter < 0) | (sorter >= x.shape[0])
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError("%s: sorter index %d (entry %d) is out of range for x of length %d"
                                 % (self, sorter[k], k, x.shape[0]))
        output_storage[0][0] = np.asarray(np.searchsorted(x, v, side=self.side, sorter=sorter), dtype=np.int64)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[1]]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        grads = [_float_zeros_like(inputs[0]), _float_zeros_like(inputs[1])]
        return grads + [disconnected_type()] * (len(inputs) - 2)

    def connection_pattern(self, node):
        return [[True], [True]] + [[False]] * (len(node.inputs) - 2)

    def __str__(self):
        return "Searchsorted{side=%s}" % self.side


def searchsorted(x, v, side="left", sorter=None):
    """Where the values ``v`` would be inserted into the sorted vector ``x`` to keep it sorted, as
    ``numpy.searchsorted``: 'left' gives the first suitable position, 'right' the last; with
    ``sorter`` (the indices that sort ``x``, e.g. ``argsort(x)``) ``x`` need not be sorted."""
    return SearchsortedOp(side=side)(x, v, sorter)


# ------------------------------------------------------------------ bincount


class BinCountOp(DelegatedCOp, Op):
    """numpy.bincount of the integer vector ``x``: inputs ``(x, minlength)`` or ``(x, minlength,
    weights)``, ``minlength`` an int64 scalar."""

    c_impl = "ffigraph.tensor.extra_ops_c"
    c_kind = "bincount"
    __props__ = ()

    def make_node(self, x, minlength, weights=None):
        x, minlength = as_tensor_variable(x), cast(as_tensor_variable(minlength), "int64")
        if x.ndim != 1:
            raise TypeError("bincount: x must be a vector (one dimension), got %s with %d" % (x, x.ndim))
        if np.dtype(x.dtype).kind not in "biu":
            raise TypeError("bincount: x must hold integers, got %s of dtype %s" % (x, x.dtype))
        if minlength.ndim != 0:
            raise TypeError("bincount: minlength must be a scalar, got %s" % minlength)
        inputs = [x, minlength]
        dtype = "int64"
        if weights is not None:
            weights = as_tensor_variable(weights)
            _check_real(weights, "bincount")
            if weights.ndim != 1:
                raise TypeError("bincount: weights must be a vector like x, got %s with %d dimensions"
                                % (weights, weights.ndim))
            dtype = weights.dtype if np.dtype(weights.dtype).kind == "f" else "float64"
            inputs.append(weights)
        return Apply(self, inputs, [TensorType(dtype, (None,))()])

    def perform(self, node, inputs, output_storage):
        x, minlength = inputs[0], int(inputs[1])
        weights = inputs[2] if len(inputs) == 3 else None
        if minlength < 0:
            raise ValueError("%s: minlength must not be negative, got %d" % (self, minlength))
        if weights is not None and weights.shape[0] != x.shape[0]:
            raise ValueError("%s: %d weights for %d values (they must be as many)" % (self, weights.shape[0],
                                                                                        x.shape[0]))
        if x.dtype.kind == "i" and (x < 0).any():
            k = int(np.flatnonzero(x < 0)[0])
            raise ValueError("%s: x must not hold negative values, found %d at position %d" % (self, x[k], k))
        out_dtype = node.outputs[0].type.numpy_dtype
        counts = np.bincount(x.astype(np.int64), weights=weights, minlength=minlength)
        output_storage[0][0] = counts.astype(out_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        # the length depends on the values: the output's own
        from ffigraph.tensor.shapes import shape_i

        return [(shape_i(node.outputs[0], 0),)]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        (g,) = output_grads
        grads = [_float_zeros_like(inputs[0]), disconnected_type()]
        if len(inputs) == 3:
            # out[x[i]] += weights[i]: weights[i] gets g[x[i]]
            from ffigraph.tensor.advanced_subtensor import AdvancedSubtensor1

            grads.append(cast(AdvancedSubtensor1()(g, inputs[0]), inputs[2].dtype)
                         if np.dtype(inputs[2].dtype).kind == "f" else _float_zeros_like(inputs[2]))
        return grads

    def connection_pattern(self, node):
        return [[True], [False]] + [[True]] * (len(node.inputs) - 2)

    def __str__(self):
        return "BinCount"


def bincount(x, weights=None, minlength=None, assert_nonneg=False):
    """How often each value ``0, 1, ...`` occurs in the non-negative integer vector ``x`` (the sum
    of the ``weights`` at its positions, when given), at least ``minlength`` bins, as
    ``numpy.bincount``. A negative value raises a ValueError naming it, whatever
    ``assert_nonneg`` (kept for PyTensor's signature)."""
    if minlength is None:
        minlength = 0
    if isinstance(minlength, (int, np.integer)) and minlength < 0:
        raise ValueError("bincount: minlength must not be negative, got %d" % minlength)
    return BinCountOp()(x, minlength, weights)


# ------------------------------------------------------------------ unique (Python only)


class Unique(Op):
    """numpy.unique in ``perform`` (Python only: no C code). Outputs: the sorted unique values,
    then as asked the int64 indices of their first occurrences, the inverse indices (flattened
    when ``axis`` is None, as numpy before 2.0 and PyTensor) and the counts."""

    __props__ = ("return_index", "return_inverse", "return_counts", "axis")

    def __init__(self, return_index=False, return_inverse=False, return_counts=False, axis=None):
        if axis is not None and (not isinstance(axis, (int, np.integer)) or axis < 0):
            raise ValueError("Unique: axis must be None or a non-negative int (normalise it first), got %r" % (axis,))
        self.return_index = bool(return_index)
        self.return_inverse = bool(return_inverse)
        self.return_counts = bool(return_counts)
        self.axis = None if axis is None else int(axis)

    def make_node(self, x):
        x = as_tensor_variable(x)
        if self.axis is None:
            shape = (None,)
        else:
            if self.axis >= x.ndim:
                raise ValueError("Unique: axis %d is out of range for %s with %d dimensions" % (self.axis, x, x.ndim))
            shape = tuple(None if a == self.axis else s for a, s in enumerate(x.type.shape))
        outputs = [TensorType(x.dtype, shape)()]
        flags = (self.return_index, self.return_inverse, self.return_counts)
        outputs += [TensorType("int64", (None,))() for f in flags if f]
        return Apply(self, [x], outputs)

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        outs = np.unique(x, return_index=self.return_index, return_inverse=self.return_inverse,
                         return_counts=self.return_counts, axis=self.axis)
        if not isinstance(outs, tuple):
            outs = (outs,)
        for k, (out, var) in enumerate(zip(outs, node.outputs)):
            value = np.asarray(out, dtype=var.type.numpy_dtype)
            output_storage[k][0] = value.reshape(-1) if k > 0 else value

    def c_code(self, node, name, inputs, outputs, sub):
        raise MethodNotDefined("Unique is a Python-only op (numpy.unique in perform): it has no C code")

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.math import prod
        from ffigraph.tensor.basic import stack
        from ffigraph.tensor.shapes import shape_i

        (xshape,) = input_shapes
        shapes = [(shape_i(out, 0),) for out in node.outputs]   # the unique values' count
        if self.axis is not None:
            shapes[0] = tuple(shape_i(node.outputs[0], a) if a == self.axis else s for a, s in enumerate(xshape))
        if self.return_inverse:
            k = 2 if self.return_index else 1
            if self.axis is not None:
                shapes[k] = (xshape[self.axis],)
            else:
                shapes[k] = (prod(stack(list(xshape))) if xshape else constant(1, dtype="int64"),)
        return shapes

    def __str__(self):
        return "Unique{%s}" % ", ".join("%s=%s" % (p, getattr(self, p)) for p in self.__props__)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """The sorted unique elements of ``ar`` (of the flattened array when ``axis`` is None, else
    the unique slices along ``axis``), as ``numpy.unique``; with the flags, also (in this order)
    the indices of first occurrences, the inverse indices and the counts (a list then). Runs in
    Python (numpy.unique) whatever the linker: it has no C code."""
    ar = as_tensor_variable(ar)
    if axis is not None:
        axis = normalize_axis(axis, ar.ndim, "unique")
    return Unique(return_index, return_inverse, return_counts, axis)(ar)


# ------------------------------------------------------------------ compositions


def argwhere(a):
    """The indices of the nonzero elements of ``a``, one row each (int64, shape ``(count, a.ndim)``),
    in C order, as ``numpy.argwhere``."""
    from ffigraph.tensor.advanced_subtensor import flatnonzero, nonzero
    from ffigraph.tensor.basic import alloc, stack
    from ffigraph.tensor.shapes import shape_i

    a = as_tensor_variable(a)
    if a.ndim == 0:
        # numpy: a (1, 0) array when the value is nonzero, (0, 0) otherwise
        return alloc(constant(np.int64(0)), shape_i(flatnonzero(a), 0), 0)
    return stack(list(nonzero(a)), axis=1)


def ptp(a, axis=None):
    """The range ``max - min`` along ``axis`` (an int, a tuple, or None for all axes), as
    ``numpy.ptp``. Gradients flow through ``max`` and ``min``."""
    from ffigraph.tensor.math import _normalize_axes, max as tmax, min as tmin

    a = as_tensor_variable(a)
    if a.dtype == "bool":   # (numpy: TypeError, booleans do not subtract)
        raise TypeError("ptp: %s is boolean, and booleans do not subtract" % (a,))
    axis = _normalize_axes(axis, a.ndim, "ptp")   # (so that a bad axis is reported as ptp's)
    return tmax(a, axis=axis) - tmin(a, axis=axis)


def median(x, axis=None):
    """The median along ``axis`` (an int, a tuple, or None for all axes), as ``numpy.median``: the
    middle element of each sorted lane, or the mean of the two middle ones; NaN for a lane holding
    a NaN, or an empty one. Floats keep their dtype, ints and bools give float64.

    Built from ``sort`` (C code) and indexing: the reduced axes are moved last and merged, each
    lane sorted, and a NaN column appended so that the picks stay inside the array when a lane is
    empty (the NaN is then what they pick)."""
    from ffigraph.tensor.basic import alloc, concatenate, switch
    from ffigraph.tensor.math import _normalize_axes, any as tany, eq, int_div, isnan, maximum, mod, prod
    from ffigraph.tensor.basic import stack
    from ffigraph.tensor.shapes import reshape, shape_i
    from ffigraph.tensor.sort import sort

    x = as_tensor_variable(x)
    _check_real(x, "median")
    dtype = x.dtype if np.dtype(x.dtype).kind == "f" else "float64"
    x = cast(x, dtype)
    axes = _normalize_axes(axis, x.ndim, "median")
    kept = [a for a in range(x.ndim) if a not in axes]
    kept_shape = [shape_i(x, a) for a in kept]
    lanes = x.dimshuffle(*(kept + list(axes))) if list(axes) != list(range(len(kept), x.ndim)) else x
    if len(axes) != 1:
        size = prod(stack([shape_i(x, a) for a in axes])) if axes else constant(1, dtype="int64")
        lanes = reshape(lanes, kept_shape + [size], ndim=len(kept) + 1)
    n = shape_i(lanes, len(kept))
    nan_column = alloc(constant(np.asarray(np.nan, dtype=dtype)), *(kept_shape + [1]))
    padded = concatenate([sort(lanes, axis=-1), nan_column], axis=-1)
    lead = (slice(None),) * len(kept)
    k = int_div(n, 2)
    upper = padded[lead + (k,)]
    lower = padded[lead + (maximum(k - 1, 0),)]
    middle = switch(eq(mod(n, 2), 0), (upper + lower) / constant(np.asarray(2, dtype=dtype)), upper)
    return switch(tany(isnan(lanes), axis=-1), constant(np.asarray(np.nan, dtype=dtype)), middle)

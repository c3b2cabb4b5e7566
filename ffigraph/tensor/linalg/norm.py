"""``norm``: numpy's ``numpy.linalg.norm(x, ord=None, axis=None, keepdims=False)`` (numpy 2's
results, empty inputs included), as a composition of tensor ops and ``svd`` (orders 2, -2 and
'nuc' of matrices), so it has C code and gradients.

Vector orders (one axis, or a 1-d ``x`` with ``axis=None``): ``None``/2 (Euclidean), ``inf``,
``-inf``, 0 (the count of nonzeros, as a float), 1, and any other number ``p``
(``sum(|x|^p)^(1/p)``). Matrix orders (two axes, or a 2-d ``x``): ``None``/'fro'/'f', 'nuc', 1,
-1, 2, -2, ``inf``, ``-inf``. Integer and bool inputs are computed in float64 (numpy's
``astype(float)``). PyTensor's extra spellings 'inf' and '-inf' are accepted for ``inf``/``-inf``.

Where this follows numpy rather than PyTensor: with ``axis=None``, ``ord=None`` and ``x`` of more
than 2 dimensions the result is the 2-norm of all the elements (PyTensor's is one norm per matrix
of the batch); any other ``ord`` with ``axis=None`` needs a 1-d or 2-d ``x`` (ValueError
otherwise). Batches of matrices take ``axis=(-2, -1)``. The orders numpy computes with
``max(..., initial=0)`` (``inf``, 1, 2 over matrices, ``inf`` over vectors) give 0 for an empty
input; the others raise on an empty reduction, as numpy's.
"""
from __future__ import annotations

import numpy as np

__all__ = ["norm"]


def _normalize_axis(axis, nd):
    if not -nd <= axis < nd:
        raise ValueError("norm: axis %d is out of bounds for an array of %d dimensions" % (axis, nd))
    return axis % nd


def _max0(x, axis, keepdims=False):
    """``max(x, axis, initial=0)`` (x >= 0): a zero is joined along ``axis`` first."""
    from ffigraph.tensor.basic import concatenate, zeros
    from ffigraph.tensor.math import max as tmax

    pad = zeros([1 if i == axis else x.shape[i] for i in range(x.ndim)], dtype=x.dtype)
    return tmax(concatenate([x, pad], axis=axis), axis=axis, keepdims=keepdims)


def _is(ord, value):
    """``ord == value`` without comparing a string with a number (numpy's ``ord == inf``)."""
    if isinstance(ord, str):
        return (value == np.inf and ord == "inf") or (value == -np.inf and ord == "-inf")
    return ord is not None and ord == value


def norm(x, ord=None, axis=None, keepdims=False):
    """The norm of ``x`` as ``numpy.linalg.norm`` (see the module doc)."""
    from ffigraph.tensor.basic import as_tensor_variable, cast
    from ffigraph.tensor.layout import moveaxis
    from ffigraph.tensor.math import abs as tabs, min as tmin, neq, real, sqrt
    from ffigraph.tensor.math import sum as tsum
    from ffigraph.tensor.shapes import reshape

    x = as_tensor_variable(x)
    if np.dtype(x.dtype).kind not in "fc":
        x = cast(x, "float64")
    nd = x.ndim
    complex_x = np.dtype(x.dtype).kind == "c"

    def square(v):
        return real(v * v.conj()) if complex_x else v * v

    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (_is(ord, 2) and nd == 1):
            ret = sqrt(tsum(square(x)))
            if keepdims:
                ret = reshape(ret, [1] * nd)
            return ret
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)

    if len(axis) == 1:
        ax = _normalize_axis(int(axis[0]), nd)
        absx = tabs(x)
        if _is(ord, np.inf):
            return _max0(absx, ax, keepdims)
        if _is(ord, -np.inf):
            return tmin(absx, axis=ax, keepdims=keepdims)
        if _is(ord, 0):
            return tsum(cast(neq(x, 0), absx.dtype), axis=ax, keepdims=keepdims)
        if _is(ord, 1):
            return tsum(absx, axis=ax, keepdims=keepdims)
        if ord is None or _is(ord, 2):
            return sqrt(tsum(square(x), axis=ax, keepdims=keepdims))
        if isinstance(ord, str):
            raise ValueError("Invalid norm order '%s' for vectors" % ord)
        p = np.asarray(ord, absx.dtype)
        return tsum(absx ** p, axis=ax, keepdims=keepdims) ** (np.asarray(1, absx.dtype) / p)

    if len(axis) == 2:
        row_axis, col_axis = (_normalize_axis(int(a), nd) for a in axis)
        if row_axis == col_axis:
            raise ValueError("Duplicate axes given.")
        absx = tabs(x)
        if _is(ord, 2) or _is(ord, -2) or ord == "nuc":
            from ffigraph.tensor.linalg.svd import svd

            s = svd(moveaxis(x, (row_axis, col_axis), (-2, -1)), compute_uv=False)
            if _is(ord, 2):
                ret = _max0(s, s.ndim - 1)
            elif _is(ord, -2):
                ret = tmin(s, axis=-1)
            else:
                ret = tsum(s, axis=-1)
        elif _is(ord, 1) or _is(ord, -1):
            c = col_axis - 1 if col_axis > row_axis else col_axis
            cols = tsum(absx, axis=row_axis)
            ret = _max0(cols, c) if _is(ord, 1) else tmin(cols, axis=c)
        elif _is(ord, np.inf) or _is(ord, -np.inf):
            r = row_axis - 1 if row_axis > col_axis else row_axis
            rows = tsum(absx, axis=col_axis)
            ret = _max0(rows, r) if _is(ord, np.inf) else tmin(rows, axis=r)
        elif ord in (None, "fro", "f"):
            ret = sqrt(tsum(square(x), axis=(row_axis, col_axis)))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            shape = [1 if i in (row_axis, col_axis) else x.shape[i] for i in range(nd)]
            ret = reshape(ret, shape)
        return ret
    raise ValueError("Improper number of dimensions to norm.")

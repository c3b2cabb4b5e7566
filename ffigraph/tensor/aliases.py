"""PyTensor's other names for what ffigraph.tensor has, and small compositions of it.

A user porting PyTensor code meets ``pt.square``, ``pt.greater``, ``pt.expit``, ``pt.pi``,
``pt.shape_padleft``, ``pt.tril_indices``... Each name here is PyTensor's, with its signature,
built from ops that have C code (so it compiles under the strict ``c`` linker).
"""
from __future__ import annotations

import math

import numpy as np

from ffigraph.tensor import math as tm
from ffigraph.tensor.advanced_subtensor import along_axis_index, nonzero, take
from ffigraph.tensor.basic import (arange, as_tensor_variable, cast, dimshuffle, get_scalar_constant_value, switch,
                                   zeros_like)
from ffigraph.tensor.construct import diagonal, tri
from ffigraph.tensor.layout import hstack, swapaxes, vstack
from ffigraph.tensor.subtensor import set_subtensor

__all__ = [
    "pi", "e", "inf", "nan", "euler_gamma", "newaxis", "as_tensor", "get_scalar_constant_value",
    "get_underlying_scalar_constant_value", "square", "greater", "greater_equal", "less", "less_equal", "equal",
    "not_equal", "bitwise_not", "expit", "log1pexp", "isfinite", "isposinf", "isneginf",
    "shape_padleft", "shape_padright", "shape_padaxis", "horizontal_stack", "vertical_stack", "tensor_copy",
    "identity", "fill", "second", "empty_like", "extract_diag", "iround", "divmod", "ceil_intdiv", "largest",
    "smallest", "matrix_transpose", "nan_to_num", "take_along_axis", "tril_indices", "triu_indices",
    "tril_indices_from", "triu_indices_from", "compress", "cov", "inverse_permutation", "gammau", "gammal",
]

# constants, as Python floats (weak: they take the dtype of what they meet, as PyTensor's do)
pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
euler_gamma = 0.5772156649015329
newaxis = None

as_tensor = as_tensor_variable
get_underlying_scalar_constant_value = get_scalar_constant_value

square = tm.sqr
greater = tm.gt
greater_equal = tm.ge
less = tm.lt
less_equal = tm.le
equal = tm.eq
not_equal = tm.neq
bitwise_not = tm.invert
expit = tm.sigmoid
log1pexp = tm.softplus
log1mexp = tm.log1mexp   # one elementwise op (scalar/special_c.py), as PyTensor's Log1mexp (in math's __all__)


def gammau(k, x):
    """PyTensor's upper incomplete gamma function Gamma(k, x) = gammaincc(k, x) gamma(k)."""
    return tm.gammaincc(k, x) * tm.gamma(k)


def gammal(k, x):
    """PyTensor's lower incomplete gamma function gamma(k, x) = gammainc(k, x) gamma(k)."""
    return tm.gammainc(k, x) * tm.gamma(k)


def isfinite(x):
    x = as_tensor_variable(x)
    return tm.invert(tm.or_(tm.isnan(x), tm.isinf(x))) if x.dtype[0] in "fc" else tm.eq(x, x)


def isposinf(x):
    x = as_tensor_variable(x)
    return tm.and_(tm.isinf(x), tm.gt(x, 0))


def isneginf(x):
    x = as_tensor_variable(x)
    return tm.and_(tm.isinf(x), tm.lt(x, 0))


def shape_padleft(t, n_ones=1):
    """``t`` with ``n_ones`` broadcastable axes in front."""
    t = as_tensor_variable(t)
    return dimshuffle(t, ["x"] * n_ones + list(range(t.ndim)))


def shape_padright(t, n_ones=1):
    """``t`` with ``n_ones`` broadcastable axes at the end."""
    t = as_tensor_variable(t)
    return dimshuffle(t, list(range(t.ndim)) + ["x"] * n_ones)


def shape_padaxis(t, axis):
    """``t`` with a broadcastable axis inserted at ``axis`` (negative counts from the end of the result)."""
    t = as_tensor_variable(t)
    ndim = t.ndim + 1
    if not -ndim <= axis < ndim:
        raise IndexError("shape_padaxis: axis %d is out of range for a %d-d result" % (axis, ndim))
    axis %= ndim
    pattern = list(range(t.ndim))
    pattern.insert(axis, "x")
    return dimshuffle(t, pattern)


def horizontal_stack(*args):
    """The matrices side by side (PyTensor's: along axis 1, 2-d inputs only)."""
    if any(as_tensor_variable(a).ndim != 2 for a in args):
        raise ValueError("horizontal_stack takes matrices; use hstack or concatenate for other ranks")
    return hstack(args)


def vertical_stack(*args):
    """The matrices one above the other (PyTensor's: along axis 0, 2-d inputs only)."""
    if any(as_tensor_variable(a).ndim != 2 for a in args):
        raise ValueError("vertical_stack takes matrices; use vstack or concatenate for other ranks")
    return vstack(args)


def tensor_copy(x):
    """A copy of ``x`` (never its memory)."""
    return as_tensor_variable(x).copy()


identity = tensor_copy


def second(a, b):
    """``b`` broadcast against ``a`` (its values, in b's dtype)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    return tm.add(b, zeros_like(a, dtype=b.dtype))


def fill(model, value):
    """``value`` broadcast to ``model``'s shape (PyTensor's fill)."""
    return second(model, value)


def empty_like(prototype, dtype=None):
    """An array like ``prototype`` (its shape; its dtype unless given). It holds zeros."""
    return zeros_like(prototype, dtype=dtype)


def extract_diag(x):
    return diagonal(x)


def iround(x, mode=None):
    """``round(x, mode)`` as int64 (PyTensor's)."""
    return cast(as_tensor_variable(x).round(mode), "int64")


def divmod(x, y):
    """``(x // y, x % y)`` with numpy's floor semantics."""
    return tm.floor_div(x, y), tm.mod(x, y)


def ceil_intdiv(a, b):
    """``ceil(a / b)`` for integers, without floats: ``a // b`` plus one where a remainder is left."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    quotient = tm.floor_div(a, b)
    return tm.add(quotient, cast(tm.neq(tm.mod(a, b), 0), quotient.dtype))


def largest(*args):
    """The elementwise maximum of all the arguments."""
    if not args:
        raise TypeError("largest needs at least one argument")
    out = as_tensor_variable(args[0])
    for a in args[1:]:
        out = tm.maximum(out, a)
    return out


def smallest(*args):
    """The elementwise minimum of all the arguments."""
    if not args:
        raise TypeError("smallest needs at least one argument")
    out = as_tensor_variable(args[0])
    for a in args[1:]:
        out = tm.minimum(out, a)
    return out


def matrix_transpose(x):
    """Swap the last two axes (a stack of matrices, each transposed)."""
    x = as_tensor_variable(x)
    if x.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions, got %d" % x.ndim)
    return swapaxes(x, -1, -2)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """numpy's ``nan_to_num``: NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest
    value), -inf -> ``neginf`` (default: its most negative). Integers come back unchanged."""
    x = as_tensor_variable(x)
    if x.dtype[0] not in "f":
        return x
    info = np.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = switch(tm.isnan(x), cast(nan, x.dtype), x)
    out = switch(isposinf(x), cast(posinf, x.dtype), out)
    return switch(isneginf(x), cast(neginf, x.dtype), out)


def take_along_axis(arr, indices, axis=0):
    """numpy's ``take_along_axis``: ``arr`` indexed along ``axis`` by ``indices`` (same rank),
    the other axes broadcast (advanced indexing)."""
    arr, indices = as_tensor_variable(arr), as_tensor_variable(indices)
    if axis is None:
        return take(arr.flatten(), indices.flatten())
    if arr.ndim != indices.ndim:
        raise ValueError("take_along_axis: indices has %d dimensions, arr %d; they must match"
                         % (indices.ndim, arr.ndim))
    ndim = arr.ndim
    if not -ndim <= axis < ndim:
        raise ValueError("take_along_axis: axis %d is out of range for a %d-d array" % (axis, ndim))
    return arr[along_axis_index(arr, axis % ndim, indices)]


def tril_indices(n, k=0, m=None):
    """The (rows, columns) of the lower triangle of an n x m matrix (numpy's order)."""
    return nonzero(tri(n, m, k, dtype="bool"))


def triu_indices(n, k=0, m=None):
    """The (rows, columns) of the upper triangle of an n x m matrix (numpy's order)."""
    return nonzero(tm.invert(tri(n, m, k - 1, dtype="bool")))


def tril_indices_from(a, k=0):
    a = as_tensor_variable(a)
    if a.ndim != 2:
        raise ValueError("tril_indices_from needs a matrix, got %d dimensions" % a.ndim)
    return tril_indices(a.shape[0], k, a.shape[1])


def triu_indices_from(a, k=0):
    a = as_tensor_variable(a)
    if a.ndim != 2:
        raise ValueError("triu_indices_from needs a matrix, got %d dimensions" % a.ndim)
    return triu_indices(a.shape[0], k, a.shape[1])


def compress(condition, x, axis=None):
    """numpy's ``compress``: the slices of ``x`` along ``axis`` where ``condition`` is true
    (``x`` flattened when ``axis`` is None)."""
    x = as_tensor_variable(x)
    (picked,) = nonzero(as_tensor_variable(condition))
    if axis is None:
        return take(x.flatten(), picked)
    return take(x, picked, axis=axis)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """numpy's ``cov`` without weights: each row a variable (``rowvar``), normalised by N - 1, N
    (``bias``) or N - ``ddof``."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported yet")
    x = as_tensor_variable(m)
    if x.ndim > 2:
        raise ValueError("cov: m has %d dimensions; at most 2" % x.ndim)
    if x.ndim < 2:
        x = shape_padleft(x)
    if not rowvar:
        x = x.T
    if y is not None:
        y = as_tensor_variable(y)
        if y.ndim < 2:
            y = shape_padleft(y)
        x = vstack([x, y if rowvar else y.T])
    if ddof is None:
        ddof = 0 if bias else 1
    n = cast(x.shape[1], x.dtype if x.dtype[0] == "f" else "float64")
    centred = x - tm.mean(x, axis=1, keepdims=True)
    return tm.true_div(tm.dot(centred, centred.T), n - ddof)


def inverse_permutation(perm):
    """The permutation that undoes ``perm`` (a vector, or each row of a matrix): out[perm[i]] = i."""
    perm = as_tensor_variable(perm)
    if perm.ndim == 1:
        return set_subtensor(zeros_like(perm)[perm], arange(perm.shape[0], dtype=perm.dtype))
    if perm.ndim != 2:
        raise ValueError("inverse_permutation takes a vector or a matrix, got %d dimensions" % perm.ndim)
    rows = dimshuffle(arange(perm.shape[0]), [0, "x"])
    cols = dimshuffle(arange(perm.shape[1], dtype=perm.dtype), ["x", 0])
    return set_subtensor(zeros_like(perm)[rows, perm], cols + zeros_like(perm))

"""``var``, ``std`` and ``max_and_argmax`` with PyTensor's signatures, built from existing ops.

* ``var(input, axis=None, ddof=0, keepdims=False, corrected=False)`` and ``std`` (its square
  root): the two-pass variance, ``mean((x - mean(x))**2)``; with ``ddof`` the sum of squares is
  divided by ``N - ddof``, ``N`` the number of elements reduced (numpy's rule; PyTensor divides by
  each reduced axis's length minus ``ddof`` in turn, which is the same for one axis and differs
  from numpy for several). ``corrected=True`` subtracts the rounding error of the mean
  (``sum(x - mean)**2 / (N * (N - ddof))``), PyTensor's "corrected two-pass" algorithm. Floats
  keep their dtype (also with ``ddof``, where PyTensor's float32 result widens to float64), ints
  and bools give float64. An empty reduction gives NaN, ``N - ddof <= 0`` inf or NaN, as numpy.
* ``max_and_argmax(a, axis=None, keepdims=False)``: ``[max(a, axis), argmax(a, axis)]``, as in
  PyTensor (two variables, the reductions of ``ffigraph.tensor.math``).

Every piece has C code and gradients (``var``'s flows through ``mean`` and ``sum``).
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.basic import as_tensor_variable, cast, constant
from ffigraph.tensor.math import _normalize_axes, argmax, max as tmax, mean, sqrt, sum as tsum

__all__ = ["var", "std", "max_and_argmax"]


def _count(x, axes, dtype):
    """The number of elements over ``axes`` (a 0-d int64 product of lengths), as ``dtype``."""
    from ffigraph.tensor.basic import stack
    from ffigraph.tensor.math import prod
    from ffigraph.tensor.shapes import shape_i

    if not axes:
        return constant(np.asarray(1, dtype=dtype))
    return cast(prod(stack([shape_i(x, a) for a in axes])), dtype)


def var(input, axis=None, ddof=0, keepdims=False, corrected=False):
    """The variance over ``axis`` (an int, a tuple, or None for all axes), as ``numpy.var``:
    ``ddof`` degrees of freedom (0: the maximum-likelihood estimate, 1: the unbiased one),
    ``keepdims`` keeps the reduced axes with length 1, ``corrected`` uses the corrected two-pass
    algorithm (see the module's docstring)."""
    if isinstance(ddof, (bool, np.bool_)):
        raise ValueError("var: ddof must be an int, got %r; keepdims is the 4th parameter: "
                         "(input, axis=None, ddof=0, keepdims=False, corrected=False)" % (ddof,))
    if not isinstance(ddof, (int, np.integer)):
        raise TypeError("var: ddof must be an int, got %r" % (ddof,))
    x = as_tensor_variable(input)
    if np.dtype(x.dtype).kind == "c":
        raise TypeError("var: complex values are not supported (input %s)" % x)
    if x.dtype == "bool":
        x = cast(x, "float64")   # (bools do not subtract; numpy's variance of bools is float64)
    axes = _normalize_axes(axis, x.ndim, "var")
    centered = x - mean(x, axis=axes, keepdims=True)
    dtype = centered.dtype
    squares = centered * centered
    if ddof == 0:
        v = mean(squares, axis=axes, keepdims=keepdims)
    else:
        dof = _count(x, axes, dtype) - constant(np.asarray(ddof, dtype=dtype))
        v = tsum(squares, axis=axes, keepdims=keepdims) / dof
    if corrected:
        if ddof == 0:
            error = mean(centered, axis=axes, keepdims=keepdims)
            error = error * error
        else:
            n = _count(x, axes, dtype)
            total = tsum(centered, axis=axes, keepdims=keepdims)
            error = total * total / (n * (n - constant(np.asarray(ddof, dtype=dtype))))
        v = v - error
    v.name = "var"
    return v


def std(input, axis=None, ddof=0, keepdims=False, corrected=False):
    """The standard deviation, ``sqrt(var(input, axis, ddof, keepdims, corrected))``."""
    input = as_tensor_variable(input)
    _normalize_axes(axis, input.ndim, "std")   # (so that a bad axis is reported as std's, not var's)
    out = sqrt(var(input, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected))
    out.name = "std"
    return out


def max_and_argmax(a, axis=None, keepdims=False):
    """``[max(a, axis), argmax(a, axis)]``: the maxima over ``axis`` (an int, a tuple, or None for
    all axes) and their int64 positions (C order over several axes)."""
    a = as_tensor_variable(a)
    return [tmax(a, axis=axis, keepdims=keepdims), argmax(a, axis=axis, keepdims=keepdims)]

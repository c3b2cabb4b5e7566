"""``choose`` and ``permute_row_elements``: numpy's and PyTensor's selections by index arrays,
written with ``take_along_axis`` (so with its C code and gradient)."""
from __future__ import annotations

import numpy as np

from ffigraph.tensor import math as tm
from ffigraph.tensor.aliases import take_along_axis
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, stack
from ffigraph.tensor.layout import broadcast_arrays, broadcast_to
from ffigraph.tensor.raise_op import CheckAndRaise
from ffigraph.tensor.shapes import shape_i
from ffigraph.tensor.sort import argsort

_MODES = ("raise", "wrap", "clip")


def choose(a, choices, mode="raise"):
    """numpy's ``choose``: where ``a`` (integers) is k, the entry of ``choices[k]``; ``a`` and the
    choices broadcast together. ``choices`` is a list of arrays or one array whose first axis holds
    them. ``mode``: 'raise' (an index outside ``[0, n)`` is a ValueError when the function runs),
    'wrap' (taken modulo n) or 'clip' (to ``[0, n - 1]``)."""
    if mode not in _MODES:
        raise ValueError("choose: mode must be one of %s, got %r" % (", ".join(_MODES), mode))
    a = as_tensor_variable(a)
    if np.dtype(a.dtype).kind not in "biu":
        raise TypeError("choose: the index array must be of integers, got %s of dtype %s" % (a, a.dtype))
    if isinstance(choices, (list, tuple)):
        if not choices:
            raise ValueError("choose: no choices")
        options = [as_tensor_variable(c) for c in choices]
        n = constant(len(options), dtype="int64")
        broadcast = broadcast_arrays(a, *options)
        index, stacked = broadcast[0], stack(list(broadcast[1:]))
    else:
        options = as_tensor_variable(choices)
        if options.ndim == 0:
            raise ValueError("choose: choices must be a sequence of arrays or an array of at least 1 dimension")
        n = shape_i(options, 0)
        index = broadcast_arrays(a, options[0])[0]
        stacked = broadcast_to(options, [n] + [shape_i(index, d) for d in range(index.ndim)])
    index = cast(index, "int64")
    if mode == "wrap":
        index = tm.mod(index, n)
    elif mode == "clip":
        index = tm.clip(index, 0, n - 1)
    else:
        inside = tm.all(tm.and_(tm.ge(index, 0), tm.lt(index, n)))
        index = CheckAndRaise(ValueError, "choose: an index is outside the choices (mode='raise')")(index, inside)
    return take_along_axis(stacked, index[None], axis=0)[0]


def permute_row_elements(x, y, inverse=False):
    """PyTensor's ``permute_row_elements``: each row of ``x`` (its last axis) permuted by the row
    of ``y`` (integers) beside it, ``x[..., y]`` row by row, the leading axes broadcast; ``inverse``
    applies the inverse permutation (the row's entry ``i`` goes to position ``y[i]``)."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if np.dtype(y.dtype).kind not in "iu":
        raise TypeError("permute_row_elements: the permutation must be of integers, got dtype %s" % y.dtype)
    if x.ndim == 0 or y.ndim == 0:
        raise TypeError("permute_row_elements: x and y need at least 1 dimension")
    if inverse:
        y = argsort(y, axis=-1)
    ndim = max(x.ndim, y.ndim)
    x = x[(None,) * (ndim - x.ndim)] if x.ndim < ndim else x
    y = y[(None,) * (ndim - y.ndim)] if y.ndim < ndim else y
    lead_x, lead_y = broadcast_arrays(x[..., :1], y[..., :1])
    batch = [shape_i(lead_x, d) for d in range(ndim - 1)]
    x = broadcast_to(x, batch + [shape_i(x, ndim - 1)])
    y = broadcast_to(y, batch + [shape_i(y, ndim - 1)])
    return take_along_axis(x, y, axis=-1)


__all__ = ["choose", "permute_row_elements"]

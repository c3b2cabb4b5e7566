"""Array construction with PyTensor's names and signatures (part of issue 27).

Every function is a composition of ops that already have C code and gradients:
``ARange`` and elementwise comparisons build masks (eye, tri), ``switch`` applies them
(tril, triu), ``Alloc`` fills (full, empty), and a strided slice of the flattened array
reaches a diagonal (diag, diagonal, fill_diagonal: the diagonal of an ``m x n`` block is
every ``n + 1``-th element of its flattening, starting at the offset).
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.basic import (alloc, arange, as_tensor_variable, cast, constant, expand_dims, normalize_axis,
                                   switch, zeros)
from ffigraph.tensor.diagonal import (ExtractDiag, FillDiagonal, FillDiagonalOffset, _diagonal_slice,  # noqa: F401
                                      diagonal, fill_diagonal, fill_diagonal_offset)
from ffigraph.tensor.layout import _int64_scalar, _size_list, broadcast_arrays, moveaxis
from ffigraph.tensor.type import normalize_dtype


def _index_grid(n, m, k):
    """``(rows + k, cols)``: an (n, 1) and a (1, m) int64 grid of positions."""
    rows = arange(0, _int64_scalar(n, "the number of rows"), 1, dtype="int64")
    cols = arange(0, _int64_scalar(m, "the number of columns"), 1, dtype="int64")
    shifted = rows + _int64_scalar(k, "the diagonal offset k")
    return shifted.dimshuffle(0, "x"), cols.dimshuffle("x", 0)


def eye(n, m=None, k=0, dtype=None):
    """An ``n x m`` array (``m`` defaults to ``n``) of ``dtype`` (floatX by default) with ones on
    diagonal ``k`` and zeros elsewhere; sizes and ``k`` may be symbolic."""
    from ffigraph.tensor.math import eq

    rows, cols = _index_grid(n, n if m is None else m, k)
    return cast(eq(rows, cols), normalize_dtype(dtype))


def identity_like(x, dtype=None):
    """The identity (ones on the main diagonal) of the shape of the matrix ``x`` and its dtype."""
    x = as_tensor_variable(x)
    if x.ndim != 2:
        raise ValueError("identity_like: %s has %d dimensions, expected a matrix" % (x, x.ndim))
    return eye(x.shape[0], x.shape[1], k=0, dtype=x.dtype if dtype is None else dtype)


def tri(N, M=None, k=0, dtype=None):
    """``numpy.tri``: an ``N x M`` array of ``dtype`` (floatX by default), one at and below
    diagonal ``k`` (``j <= i + k``), zero above."""
    from ffigraph.tensor.math import ge

    rows, cols = _index_grid(N, N if M is None else M, k)
    return cast(ge(rows, cols), normalize_dtype(dtype))


def _matrix_mask(m, k, what):
    m = as_tensor_variable(m)
    if m.ndim < 2:
        raise ValueError("%s: %s has %d dimensions; it needs at least 2" % (what, m, m.ndim))
    return m, tri(m.shape[-2], m.shape[-1], k=k, dtype="bool")


def tril(m, k=0):
    """``m`` with the elements above diagonal ``k`` of its last two axes zeroed."""
    m, mask = _matrix_mask(m, k, "tril")
    return switch(mask, m, constant(np.zeros((), dtype=m.dtype)))


def triu(m, k=0):
    """``m`` with the elements below diagonal ``k`` of its last two axes zeroed."""
    from ffigraph.tensor.math import sub

    m, mask = _matrix_mask(m, sub(_int64_scalar(k, "triu: k"), 1), "triu")
    return switch(mask, constant(np.zeros((), dtype=m.dtype)), m)


def diag(v, k=0):
    """``numpy.diag``: a vector ``v`` gives a square matrix with ``v`` on diagonal ``k``; a matrix
    gives its diagonal ``k``."""
    from ffigraph.tensor.shapes import reshape, shape_i

    v = as_tensor_variable(v)
    if v.ndim == 2:
        return diagonal(v, k, 0, 1)
    if v.ndim != 1:
        raise ValueError("diag: %s has %d dimensions; it needs 1 or 2" % (v, v.ndim))
    if not isinstance(k, (int, np.integer)):
        raise TypeError("diag: k must be an int, got %r" % (k,))
    length = shape_i(v, 0)
    n = length + abs(int(k))
    flat = zeros([n * n], dtype=v.dtype)
    from ffigraph.tensor.subtensor import set_subtensor

    filled = set_subtensor(flat[_diagonal_slice(n, int(k), length)], v)
    return reshape(filled, [n, n], ndim=2)


def trace(a, offset=0, axis1=0, axis2=1):
    """``numpy.trace``: the sums along the diagonals of ``a`` (see diagonal)."""
    return diagonal(a, offset, axis1, axis2).sum(axis=-1)


# ------------------------------------------------------------------ ranges


def _samples(start, stop, num, endpoint, axis, what):
    """numpy's linspace in float64: ``(samples, step)`` with the samples along a new axis ``axis``."""
    from ffigraph.tensor.math import and_, eq, gt, mul, sub, true_div

    start, stop = (cast(as_tensor_variable(v), "float64") for v in (start, stop))
    start, stop = broadcast_arrays(start, stop)
    num = _int64_scalar(num, "%s: num" % what)
    div = sub(num, 1) if endpoint else num
    delta = sub(stop, start)
    idx = arange(0, num, 1, dtype="int64")
    pos = cast(idx, "float64")
    if delta.ndim:
        pos = pos.dimshuffle(*([0] + ["x"] * delta.ndim))
        idx = idx.dimshuffle(*([0] + ["x"] * delta.ndim))
    step = true_div(delta, cast(div, "float64"))
    positive = gt(div, 0)
    # numpy: i * step + start; with no interval to divide (num <= 1), i * delta + start
    samples = switch(positive, mul(pos, step) + start, mul(pos, delta) + start)
    if endpoint:
        samples = switch(and_(eq(idx, sub(num, 1)), gt(num, 1)), stop, samples)
    step = switch(positive, step, constant(np.nan))
    if axis != 0:
        samples = moveaxis(samples, 0, axis)
    return samples, step, idx


def _num_and_stop(stop, end, num, steps):
    # PyTensor's deprecated spellings: end= for stop, steps= for num
    return (end if end is not None else stop), (steps if steps is not None else num)


def linspace(start, stop=None, num=50, endpoint=True, retstep=False, dtype=None, axis=0, end=None, steps=None):
    """``numpy.linspace`` with PyTensor's signature (``end``/``steps`` are its older names of
    ``stop``/``num``): ``num`` evenly spaced samples from ``start`` to ``stop``; the default
    dtype is floatX, as in PyTensor; an integer dtype floors the samples, as numpy does. ``num``
    may be symbolic."""
    stop, num = _num_and_stop(stop, end, num, steps)
    if stop is None:
        raise TypeError("linspace: stop is missing")
    samples, step, _ = _samples(start, stop, num, endpoint, axis, "linspace")
    dtype = normalize_dtype(dtype)
    if np.dtype(dtype).kind in "iu":
        from ffigraph.tensor.math import floor

        samples = floor(samples)   # numpy (since 1.20) floors for an integer dtype: -1.67 is -2, not -1
    samples = cast(samples, dtype)
    return (samples, step) if retstep else samples


def _base_axis(start, stop, base, axis):
    """``base`` ready to broadcast against samples along ``axis`` (PyTensor's rule for an array base)."""
    base = cast(as_tensor_variable(base), "float64")
    if base.ndim == 0:
        return base
    nd = max(as_tensor_variable(start).ndim, as_tensor_variable(stop).ndim, base.ndim)
    base = base.dimshuffle(*(["x"] * (nd - base.ndim) + list(range(base.ndim))))
    return expand_dims(base, axis)


def logspace(start, stop=None, num=50, base=10.0, endpoint=True, dtype=None, axis=0, end=None, steps=None):
    """``numpy.logspace`` with PyTensor's signature (``base`` before ``endpoint``): ``base ** s``
    for the linspace samples ``s``; floatX by default."""
    from ffigraph.tensor.math import pow as tpow

    stop, num = _num_and_stop(stop, end, num, steps)
    samples, _, _ = _samples(start, stop, num, endpoint, axis, "logspace")
    return cast(tpow(_base_axis(start, stop, base, axis), samples), normalize_dtype(dtype))


def geomspace(start, stop=None, num=50, base=10.0, endpoint=True, dtype=None, axis=0, end=None, steps=None):
    """``numpy.geomspace`` with PyTensor's signature: a geometric progression from ``start`` to
    ``stop`` (same sign), the ends exact; floatX by default. (``base`` only picks the logarithm
    the samples are spaced in; the values do not depend on it beyond rounding.)"""
    from ffigraph.tensor.math import and_, eq, gt, log, log10, mul, pow as tpow, sgn, sub, true_div

    stop, num = _num_and_stop(stop, end, num, steps)
    start, stop = (cast(as_tensor_variable(v), "float64") for v in (start, stop))
    start, stop = broadcast_arrays(start, stop)
    sign = sgn(start)
    start, stop = mul(start, sign), mul(stop, sign)   # both positive when the signs agree
    base_t = cast(as_tensor_variable(base), "float64")
    if isinstance(base, (int, float, np.integer, np.floating)) and float(base) == 10.0:
        # numpy's own arithmetic (log10, then 10 ** samples), so that results agree to the bit and an
        # integer dtype truncates the same values (log(x) / log(10) is an ulp off: 2 came out 1.999...)
        log_start, log_stop = log10(start), log10(stop)
    else:
        log_base = log(base_t)
        log_start, log_stop = true_div(log(start), log_base), true_div(log(stop), log_base)
    samples, _, idx = _samples(log_start, log_stop, num, endpoint, 0, "geomspace")
    result = tpow(base_t if base_t.ndim == 0 else _base_axis(start, stop, base, 0), samples)
    # numpy's exact ends
    num = _int64_scalar(num, "geomspace: num")
    result = switch(eq(idx, 0), start, result)
    if endpoint:
        result = switch(and_(eq(idx, sub(num, 1)), gt(num, 1)), stop, result)
    result = mul(result, sign)
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return cast(result, normalize_dtype(dtype))


# ------------------------------------------------------------------ filled arrays


def full(shape, fill_value, dtype=None):
    """``numpy.full``: an array of ``shape`` filled with ``fill_value`` (its dtype unless ``dtype``)."""
    fill = as_tensor_variable(fill_value)
    if dtype is not None:
        fill = cast(fill, dtype)
    return alloc(fill, *_size_list(shape, "full"))


def full_like(a, fill_value, dtype=None):
    """``numpy.full_like``: an array like ``a`` (its shape, and its dtype unless ``dtype``)
    filled with ``fill_value``."""
    a = as_tensor_variable(a)
    fill = cast(as_tensor_variable(fill_value), a.dtype if dtype is None else dtype)
    return alloc(fill, *[a.shape[i] for i in range(a.ndim)])


def empty(shape, dtype=None):
    """An array of ``shape`` and ``dtype`` (floatX by default) whose values are not to be relied
    on (PyTensor's ``AllocEmpty``); here it holds zeros."""
    return zeros(_size_list(shape, "empty"), dtype=normalize_dtype(dtype))


def outer(x, y):
    """``numpy.outer``: ``x[i] * y[j]`` of the flattened inputs."""
    from ffigraph.tensor.shapes import flatten

    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.ndim != 1:
        x = flatten(x, 1)
    if y.ndim != 1:
        y = flatten(y, 1)
    return x.dimshuffle(0, "x") * y.dimshuffle("x", 0)


class _NdGrid:
    """numpy's ``mgrid`` and ``ogrid`` over slices of Python or symbolic scalars, as PyTensor's:
    ``mgrid[0:5, 0:3]`` is a list of dense grids (each of the shape (5, 3)), ``ogrid[0:5, 0:3]`` a
    list of open ones (shapes (5, 1) and (1, 3), which broadcast); one slice gives its ``arange``.
    Each grid keeps its range's dtype (numpy's mgrid is one array of their common dtype).
    A step ``Nj`` (an imaginary number) asks for N points from start to stop inclusive, as in numpy
    (``linspace``; PyTensor refuses it)."""

    def __init__(self, sparse):
        self.sparse = sparse

    @staticmethod
    def _range(key):
        if not isinstance(key, slice):
            raise TypeError("%s: each index must be a slice start:stop[:step], got %r"
                            % ("mgrid/ogrid", key))
        start = 0 if key.start is None else key.start
        if isinstance(key.step, complex):
            count = int(abs(key.step))
            return linspace(start, key.stop, count)
        return arange(start, key.stop, 1 if key.step is None else key.step)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._range(key)
        ranges = [self._range(k) for k in key]
        ndim = len(ranges)
        grids = [r.dimshuffle(*(["x"] * j + [0] + ["x"] * (ndim - 1 - j))) for j, r in enumerate(ranges)]
        return grids if self.sparse else list(broadcast_arrays(*grids))

    def __repr__(self):
        return "ogrid" if self.sparse else "mgrid"


mgrid = _NdGrid(sparse=False)
ogrid = _NdGrid(sparse=True)


__all__ = [
    "eye", "identity_like", "tri", "tril", "triu", "diag", "diagonal", "trace", "fill_diagonal",
    "fill_diagonal_offset", "ExtractDiag", "FillDiagonal", "FillDiagonalOffset",
    "linspace", "logspace", "geomspace", "full", "full_like", "empty", "outer", "mgrid", "ogrid",
]

"""``pinv`` and ``lstsq``: the pseudo-inverse and the least-squares solution, as compositions of
the ``svd`` (or ``eigh``) op with ordinary tensor ops, so they have C code and gradients wherever
those do.

``pinv(x, hermitian=False)`` is numpy's (``rcond=1e-15``: singular values at or below ``1e-15``
times the largest count as zero), batched over leading axes; ``hermitian=True`` uses ``eigh``
(the lower triangle) instead of ``svd``. ``lstsq(a, b, rcond=None)`` is numpy's: ``(x, residuals,
rank, s)`` for a 2-d ``a`` and a 1-d or 2-d ``b``, singular values at or below ``rcond`` times the
largest counting as zero (``rcond=None``: machine precision times ``max(m, n)``; a negative
``rcond``: machine precision, LAPACK's rule); ``residuals`` is empty unless ``rank == n`` and
``m > n``. numpy's and PyTensor's ``lstsq`` take no batch; neither does this one.

Gradients come from the ``svd`` op's (reduced factors; ``eigh``'s for ``hermitian=True``): right
for matrices of full rank with distinct singular values (eigenvalues); with repeated ones (an
orthogonal ``x``, a multiple of the identity) the gradient through the decomposition is WRONG
(PyTensor's ``pinv`` has its own closed-form gradient, which does not need them distinct).
``rank`` is an int32 scalar (numpy's type) and has no gradient.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg.blockwise import linalg_dtype, mT

__all__ = ["pinv", "lstsq"]


def _as_float(x):
    from ffigraph.tensor.basic import as_tensor_variable, cast

    x = as_tensor_variable(x)
    dt = linalg_dtype([x.dtype])
    return x if x.dtype == dt else cast(x, dt)


def _reciprocal_above(s, cutoff):
    """``1/s`` where ``s > cutoff``, 0 elsewhere (no division by zero is computed)."""
    from ffigraph.tensor.basic import where
    from ffigraph.tensor.math import gt

    large = gt(s, cutoff)
    one, zero = np.asarray(1, s.dtype), np.asarray(0, s.dtype)
    return where(large, one / where(large, s, one), zero), large


def pinv(x, hermitian=False):
    """The (Moore-Penrose) pseudo-inverse of ``x`` (batched over leading axes), as numpy's
    ``pinv(x, hermitian=hermitian)`` with its default ``rcond=1e-15`` (see the module doc)."""
    from ffigraph.tensor.math import abs as tabs, maximum
    from ffigraph.tensor.products import matmul

    x = _as_float(x)
    if x.ndim < 2:
        raise ValueError("pinv: x must have at least 2 dimensions, got %d" % x.ndim)
    rcond = np.asarray(1e-15, x.dtype)
    if hermitian:
        from ffigraph.tensor.linalg.eigen import eigh

        w, v = eigh(x)
        # the largest |w| is at one end (w ascending); slices keep an empty batch entry empty
        wmax = maximum(tabs(w[..., :1]), tabs(w[..., -1:]))
        inv_w, _ = _reciprocal_above(tabs(w), rcond * wmax)
        inv_w = inv_w * _sign(w)
        return matmul(v * inv_w[..., None, :], mT(v))
    from ffigraph.tensor.linalg.svd import svd

    u, s, vh = svd(x, full_matrices=False)
    inv_s, _ = _reciprocal_above(s, rcond * s[..., :1])    # s descending: s[..., 0] is the largest
    return matmul(mT(vh) * inv_s[..., None, :], mT(u))


def _sign(w):
    """``sign(w)`` with +1 at 0 (its product with a zero reciprocal stays 0 either way)."""
    from ffigraph.tensor.basic import where
    from ffigraph.tensor.math import lt

    return where(lt(w, 0), np.asarray(-1, w.dtype), np.asarray(1, w.dtype))


def lstsq(a, b, rcond=None):
    """The least-squares solution ``x`` of ``a x = b``, as numpy's ``lstsq``: ``(x, residuals,
    rank, s)`` (see the module doc); ``a`` is ``m x n``, ``b`` has ``m`` rows (1-d or 2-d)."""
    from ffigraph.tensor.basic import as_tensor_variable, cast, switch
    from ffigraph.tensor.math import and_, eq, gt, lt, maximum
    from ffigraph.tensor.math import sum as tsum
    from ffigraph.tensor.products import matmul
    from ffigraph.tensor.shapes import shape_i
    from ffigraph.tensor.linalg.svd import svd

    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim != 2:
        raise ValueError("lstsq: a must be a matrix (2 dimensions), got %d dimensions" % a.ndim)
    if b.ndim not in (1, 2):
        raise ValueError("lstsq: b must have 1 or 2 dimensions, got %d" % b.ndim)
    ms, bs = a.type.shape[0], b.type.shape[0]
    if ms is not None and bs is not None and ms != bs:
        raise ValueError("lstsq: a has %d rows but b has %d (incompatible dimensions)" % (ms, bs))
    dt = linalg_dtype([a.dtype, b.dtype])
    a = a if a.dtype == dt else cast(a, dt)
    b = b if b.dtype == dt else cast(b, dt)
    vector_b = b.ndim == 1
    b2 = b[:, None] if vector_b else b
    m, n = shape_i(a, 0), shape_i(a, 1)
    eps = np.asarray(np.finfo(dt).eps, dt)
    if rcond is None:
        rcond = cast(maximum(m, n), dt) * eps
    else:
        # LAPACK's (gelsd's) rule, which numpy's follows: a negative rcond means machine precision
        rcond = cast(as_tensor_variable(rcond), dt)
        rcond = switch(lt(rcond, 0), eps, rcond)
    u, s, vh = svd(a, full_matrices=False)
    inv_s, large = _reciprocal_above(s, rcond * s[:1])
    x = matmul(mT(vh), inv_s[:, None] * matmul(mT(u), b2))
    rank = cast(tsum(large), "int32")
    full = tsum((b2 - matmul(a, x)) ** 2, axis=0)
    count = switch(and_(eq(cast(rank, "int64"), n), gt(m, n)), shape_i(b2, 1), 0)
    residuals = full[:count]
    if vector_b:
        x = x[:, 0]
    return x, residuals, rank, s

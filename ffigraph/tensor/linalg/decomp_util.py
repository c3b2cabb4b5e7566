"""Small pieces the decomposition ops (``eigen``, ``svd``, ``qr``) and their compositions share."""
from __future__ import annotations

import numpy as np

__all__ = ["is_zero_grad", "core_min", "fold_to_triangle", "lwork_c"]


def is_zero_grad(g):
    """True when the gradient ``g`` is known to be all zeros: the ``zeros_like(output)`` that
    ``grad`` gives an L_op for an output the cost does not use (ffigraph passes zeros there, never a
    disconnected marker), so an L_op can skip the terms that only that output feeds (and the
    divisions by eigenvalue or singular-value gaps they carry)."""
    from ffigraph.tensor.basic import Alloc
    from ffigraph.graph.basic import Constant

    owner = getattr(g, "owner", None)
    if owner is None or not isinstance(owner.op, Alloc):
        return False
    value = owner.inputs[0]
    return isinstance(value, Constant) and not np.any(np.asarray(value.data))


def core_min(m, n):
    """``min(m, n)`` of two core lengths: ints (or None when unknown, as ``apply`` passes them) or
    symbolic scalars (as ``infer_shape`` passes them)."""
    if m is None or n is None:
        return None
    if isinstance(m, (int, np.integer)) and isinstance(n, (int, np.integer)):
        return min(int(m), int(n))
    from ffigraph.tensor.math import minimum

    return minimum(m, n)


def fold_to_triangle(g, lower):
    """The gradient ``g`` (w.r.t. the symmetric matrix an op reads from one triangle) folded onto
    that triangle, as PyTensor's ``eigh``/``eigvalsh`` do: ``tril(g) + triu(g, 1)^T`` (``lower``)
    or ``triu(g) + tril(g, -1)^T``; batched over leading axes."""
    from ffigraph.tensor.construct import tril, triu
    from ffigraph.tensor.linalg.blockwise import mT

    if lower:
        return tril(g) + mT(triu(g, 1))
    return triu(g) + mT(tril(g, -1))


def lwork_c(query, minimum):
    """A C expression: the workspace length from a LAPACK query's answer ``query`` (a float; its
    float32 rounding may fall a little short, so it is rounded up with a margin) and at least
    ``minimum``."""
    return "ffg_la_max64((int64_t)((double)(%s) * (1.0 + 1e-6)) + 1, (int64_t)(%s))" % (query, minimum)


#: C support code for ``lwork_c`` (one helper, guarded)
MAX64_C = r"""
#ifndef FFG_LA_MAX64
#define FFG_LA_MAX64
static int64_t ffg_la_max64(int64_t a, int64_t b) { return a > b ? a : b; }
#endif
"""

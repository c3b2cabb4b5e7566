"""``svd``: the singular value decomposition ``a = U diag(s) Vh`` (LAPACK ``gesdd``, numpy's
routine), batched over leading axes, with numpy's semantics and PyTensor's gradients.

For an ``m x n`` matrix and ``k = min(m, n)``: ``s`` holds the ``k`` singular values in
descending order; with ``compute_uv`` the result is ``(U, s, Vh)``, ``U`` being ``m x m`` and
``Vh`` ``n x n`` (``full_matrices=True``) or ``m x k`` and ``k x n``; without it, ``s`` alone.
Singular vectors' signs are LAPACK's (normally numpy's, not promised). An empty matrix gives
empty factors, with identities for the full ``U`` / ``Vh`` as numpy. An input holding inf or
NaN, or an iteration that does not converge, is a ``numpy.linalg.LinAlgError`` naming the node
("SVD did not converge", as numpy).

Gradients: of ``s`` alone (``compute_uv=False``, or only ``s`` used): ``U diag(gs) Vh`` from the
reduced factors; of the reduced factors (``full_matrices=False``): PyTensor's (Seeger et al.
2017, after autograd), which assumes distinct nonzero singular values when ``U`` or ``Vh`` is
used; of the full factors: not implemented (a cost of ``s`` alone works), as PyTensor.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import LinalgOp, mT
from ffigraph.tensor.linalg.decomp_util import MAX64_C, core_min, is_zero_grad, lwork_c

__all__ = ["SVD", "svd"]


class SVD(LinalgOp):
    """The singular values (and vectors) of each matrix (see the module doc)."""

    __props__ = ("full_matrices", "compute_uv")
    what = "svd"
    c_version = (1,)

    def __init__(self, full_matrices=True, compute_uv=True):
        self.full_matrices = bool(full_matrices)
        self.compute_uv = bool(compute_uv)

    @property
    def nout(self):
        return 3 if self.compute_uv else 1

    def core_ndims_in(self):
        return [2]

    def core_shapes_out(self, shapes):
        m, n = shapes[0][-2], shapes[0][-1]
        k = core_min(m, n)
        if not self.compute_uv:
            return [(k,)]
        if self.full_matrices:
            return [(m, m), (k,), (n, n)]
        return [(m, k), (k,), (k, n)]

    def core_perform(self, a):
        m, n = a.shape
        k = min(m, n)
        dt = a.dtype
        if k == 0:
            s = np.empty((0,), dt)
            if not self.compute_uv:
                return (s,)
            if self.full_matrices:
                return (np.eye(m, dtype=dt), s, np.eye(n, dtype=dt))
            return (np.empty((m, 0), dt), s, np.empty((0, n), dt))
        if not np.all(np.isfinite(a)):
            raise np.linalg.LinAlgError("svd: SVD did not converge (the input holds inf or NaN)")
        try:
            got = np.linalg.svd(a, full_matrices=self.full_matrices, compute_uv=self.compute_uv)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError("svd: SVD did not converge") from None
        if not self.compute_uv:
            return (got.astype(dt, copy=False),)
        return tuple(x.astype(dt, copy=False) for x in got)

    def L_op(self, inputs, outputs, output_grads):
        """See the module doc; batched: every transpose is of the last two axes."""
        from ffigraph.tensor.gradient import grad_not_implemented

        (a,) = inputs
        if not self.compute_uv:
            u, _, vh = SVD(full_matrices=False, compute_uv=True)(a)
            return [_s_grad(u, vh, output_grads[0])]
        u, s, vh = outputs
        gu, gs, gvh = output_grads
        if is_zero_grad(gu) and is_zero_grad(gvh):
            if self.full_matrices:
                u, _, vh = SVD(full_matrices=False, compute_uv=True)(a)
            return [_s_grad(u, vh, gs)]
        if self.full_matrices:
            return [grad_not_implemented(self, 0, a, "Gradient of svd not implemented for full_matrices=True "
                                         "when U or Vh is used (they are not unique); use full_matrices=False")]
        return [_reduced_grad(a, u, s, vh, gu, gs, gvh)]

    # ---- C
    def c_routines(self, node):
        return ["gesdd"]

    def c_support(self, node, dtype):
        return MAX64_C

    def _jobz(self):
        return "N" if not self.compute_uv else ("A" if self.full_matrices else "S")

    def c_core_out_shape(self, node, d):
        m, n = d.ins[0].dims
        k = "(%s < %s ? %s : %s)" % (m, n, m, n)
        if not self.compute_uv:
            return [[k]]
        if self.full_matrices:
            return [[m, m], [k], [n, n]]
        return [[m, k], [k], [k, n]]

    def c_prepare(self, node, d):
        m, n = d.ins[0].dims
        jobz = self._jobz()
        return "\n".join([
            "const int64_t sv_m = %s, sv_n = %s;" % (m, n),
            "const int64_t sv_k = sv_m < sv_n ? sv_m : sv_n, sv_mx = sv_m < sv_n ? sv_n : sv_m;",
            "/* U's columns and Vh's rows as LAPACK writes them */",
            "const int64_t sv_ucols = %s, sv_vrows = %s;" % (("sv_m", "sv_n") if jobz == "A" else ("sv_k", "sv_k")),
            "int64_t sv_lwork = 1;",
            "if (sv_k > 0) {",
            "    %s q_work = 0, q_a = 0, q_s = 0, q_u = 0, q_vt = 0;" % d.T,
            "    int64_t q_iwork = 0, q_info = 0, q_l = -1;",
            "    const int64_t q_ldu = sv_m, q_ldvt = sv_vrows > 0 ? sv_vrows : 1;",
            "    const char q_jobz = '%s';" % jobz,
            "    %s(&q_jobz, &sv_m, &sv_n, &q_a, &sv_m, &q_s, &q_u, &q_ldu, &q_vt, &q_ldvt, &q_work, &q_l, &q_iwork, "
            "&q_info, 1);" % d.sym["gesdd"],
            # LAPACK's documented minimum (jobz 'N': 3k + max(mx, 7k); else 3k + max(mx, 4k^2 + 4k))
            "    sv_lwork = %s;" % lwork_c("q_work", "3 * sv_k + (sv_mx > %s ? sv_mx : %s)"
                                          % (("7 * sv_k",) * 2 if jobz == "N" else ("4 * sv_k * sv_k + 4 * sv_k",) * 2)),
            "}"])

    def c_workspace(self, node, d):
        work = [("the column-major copy (destroyed)", d.T, "sv_m * sv_n"),
                ("the singular values", d.T, "sv_k"),
                ("gesdd's work", d.T, "sv_lwork"),
                ("gesdd's iwork", "int64_t", "8 * sv_k")]
        if self.compute_uv:
            work += [("U, column-major", d.T, "sv_m * sv_ucols"),
                     ("Vh, column-major", d.T, "sv_vrows * sv_n")]
        return work

    def c_core(self, node, d):
        a = d.ins[0]
        wa, ws, work, iwork = (w.var for w in d.work[:4])
        lines = ["int64_t info = 0, i;",
                 "const char jobz = '%s';" % self._jobz(),
                 "(void)i;",
                 "if (sv_k > 0) {",
                 "    ffg_la_load_%s(%s, %s, sv_m, sv_n, %s, %s);" % (d.tag, wa, a.ptr, a.strides[0], a.strides[1]),
                 "    for (i = 0; i < sv_m * sv_n; ++i)",
                 "        if (!isfinite(%s[i])) {" % wa,
                 '            ffg_set_error(%s, FFG_ERR_LINALG, -1, "%s: SVD did not converge (the input holds inf '
                 'or NaN; batch entry %%lld)", (long long)bi);' % (d.err, d.label),
                 "            " + d.fail,
                 "        }"]
        if self.compute_uv:
            wu, wv = d.work[4].var, d.work[5].var
            call = ("%s(&jobz, &sv_m, &sv_n, %s, &sv_m, %s, %s, &sv_m, %s, &sv_vrows, %s, &sv_lwork, %s, &info, 1);"
                    % (d.sym["gesdd"], wa, ws, wu, wv, work, iwork))
        else:
            call = ("{ const int64_t one = 1; %s dummy = 0; %s(&jobz, &sv_m, &sv_n, %s, &sv_m, %s, &dummy, &one, "
                    "&dummy, &one, %s, &sv_lwork, %s, &info, 1); }" % (d.T, d.sym["gesdd"], wa, ws, work, iwork))
        lines.append("    " + call)
        lines += ["    " + x for x in lapack_c.info_failure(
            d, "gesdd", "SVD did not converge (info %lld; batch entry %lld)").split("\n")]
        zs = d.outs[1] if self.compute_uv else d.outs[0]
        lines.append("    memcpy(%s, %s, (size_t)sv_k * sizeof(%s));" % (zs.ptr, ws, d.T))
        if self.compute_uv:
            zu, zv = d.outs[0], d.outs[2]
            lines += ["    ffg_la_store_%s(%s, %s, sv_m, sv_ucols, sv_m);" % (d.tag, zu.ptr, wu),
                      "    ffg_la_store_%s(%s, %s, sv_vrows, sv_n, sv_vrows);" % (d.tag, zv.ptr, wv)]
        lines.append("}")
        if self.compute_uv and self.full_matrices:
            zu, zv = d.outs[0], d.outs[2]
            lines += ["else {",
                      "    /* an empty matrix: the full factors are identities, as numpy's */",
                      "    memset(%s, 0, (size_t)(sv_m * sv_m) * sizeof(%s));" % (zu.ptr, d.T),
                      "    memset(%s, 0, (size_t)(sv_n * sv_n) * sizeof(%s));" % (zv.ptr, d.T),
                      "    for (i = 0; i < sv_m; ++i) %s[i * sv_m + i] = 1;" % zu.ptr,
                      "    for (i = 0; i < sv_n; ++i) %s[i * sv_n + i] = 1;" % zv.ptr,
                      "}"]
        return "\n".join(lines)


def _s_grad(u, vh, gs):
    """The gradient of a cost of the singular values alone: ``U diag(gs) Vh`` (reduced factors)."""
    from ffigraph.tensor.products import matmul

    return matmul(u * gs[..., None, :], vh)


def _reduced_grad(a, u, s, vh, gu, gs, gvh):
    """PyTensor's gradient of the reduced SVD, batched (``U`` is ``m x k``, ``Vh`` ``k x n``)."""
    from ffigraph.tensor.basic import switch, where
    from ffigraph.tensor.construct import eye
    from ffigraph.tensor.math import abs as tabs, eq, lt, maximum, sign
    from ffigraph.tensor.products import matmul
    from ffigraph.tensor.shapes import shape_i

    dt = a.dtype
    m, n = shape_i(a, a.ndim - 2), shape_i(a, a.ndim - 1)
    k = shape_i(s, s.ndim - 1)
    ident = eye(k, dtype=dt)
    eps = np.asarray(1e-8, dt)

    def h(t):
        # s_i^2 - s_j^2 kept away from 0 (sign(0) taken as +1), as PyTensor's
        return maximum(tabs(t), eps) * where(eq(t, 0), np.asarray(1, dt), sign(t))

    row, col = s[..., None, :], s[..., :, None]         # [i, j] = s_j, s_i
    e = (1 - ident) / (h(row - col) * h(row + col))
    v, gv = mT(vh), mT(gvh)
    utgu = matmul(mT(u), gu)
    vtgv = matmul(vh, gv)
    inner = (e * (utgu - mT(utgu))) * row
    inner = inner + ident * gs[..., :, None]
    inner = inner + col * (e * (vtgv - mT(vtgv)))
    grad = matmul(matmul(u, inner), vh)
    # the parts outside the k-dimensional spaces U and V span, when a is not square
    wide = matmul(matmul(u / row, gvh), eye(n, dtype=dt) - matmul(v, vh))          # m < n
    tall = mT(matmul(matmul(v / row, mT(gu)), eye(m, dtype=dt) - matmul(u, mT(u))))  # m > n
    ms, ns = a.type.shape[-2], a.type.shape[-1]
    if ms is not None and ns is not None:
        if ms == ns:
            return grad
        return grad + (wide if ms < ns else tall)
    return switch(eq(m, n), grad, switch(lt(m, n), grad + wide, grad + tall))


def svd(a, full_matrices=True, compute_uv=True):
    """The singular value decomposition of ``a`` (batched over leading axes), as numpy's and
    PyTensor's ``svd``: ``(U, s, Vh)`` with ``a = U diag(s) Vh``, or ``s`` alone when
    ``compute_uv=False`` (see the module doc)."""
    return SVD(full_matrices=full_matrices, compute_uv=compute_uv)(a)

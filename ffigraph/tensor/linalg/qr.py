"""``qr``: the QR decomposition ``A = Q R`` (LAPACK ``geqrf`` then ``orgqr``, as scipy's and
numpy's), batched over leading axes, with PyTensor's (scipy's) modes and PyTensor's gradients.

For an ``m x n`` matrix and ``k = min(m, n)``, as PyTensor's ``qr`` (scipy's modes):

* ``mode="full"`` (or "complete"): ``(Q, R)``, ``Q`` ``m x m`` orthogonal, ``R`` ``m x n``;
* ``mode="economic"`` (or "reduced"): ``(Q, R)``, ``Q`` ``m x k``, ``R`` ``k x n``;
* ``mode="r"``: ``R`` alone, ``m x n`` (scipy's shape, not numpy's ``k x n``);
* ``mode="raw"``: ``(H, tau, R)``: ``H`` the ``m x n`` array ``geqrf`` leaves (``R`` on and above the
  diagonal, the Householder vectors below; scipy's, the transpose of numpy's raw ``h``), ``tau``
  the ``k`` Householder factors, ``R`` ``k x n``.

Signs are LAPACK's (no normalization of ``R``'s diagonal), the same as scipy's and numpy's. An
empty matrix gives empty factors (``Q`` the identity in mode "full"). ``pivoting=True`` is not
supported (NotImplementedError); ``overwrite_a`` and ``lwork`` are accepted and ignored, as
PyTensor's.

Gradients (PyTensor's, after Liao et al. 2019): modes "economic", "r", and "full" when
``m <= n``; "full" with ``m > n``: only when ``Q`` is not used (its last ``m - n`` columns are not
unique), else not implemented (static shapes) or NaN (shapes known only at run time; PyTensor
asserts); "raw": not implemented.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import LinalgOp, mT
from ffigraph.tensor.linalg.decomp_util import MAX64_C, core_min, is_zero_grad, lwork_c

__all__ = ["QR", "qr"]

MODES = ("full", "economic", "r", "raw")


class QR(LinalgOp):
    """The QR decomposition of each matrix (see the module doc)."""

    __props__ = ("mode",)
    what = "qr"
    c_version = (1,)

    def __init__(self, mode="full"):
        if mode not in MODES:
            raise ValueError("Invalid mode '%s'. Supported modes are 'full', 'economic', 'r', and 'raw'." % (mode,))
        self.mode = mode

    @property
    def nout(self):
        return {"full": 2, "economic": 2, "r": 1, "raw": 3}[self.mode]

    def core_ndims_in(self):
        return [2]

    def core_shapes_out(self, shapes):
        m, n = shapes[0][-2], shapes[0][-1]
        k = core_min(m, n)
        return {"full": [(m, m), (m, n)], "economic": [(m, k), (k, n)], "r": [(m, n)],
                "raw": [(m, n), (k,), (k, n)]}[self.mode]

    def core_perform(self, a):
        m, n = a.shape
        k = min(m, n)
        dt = a.dtype
        if k == 0:
            return {"full": (np.eye(m, dtype=dt), np.empty((m, n), dt)),
                    "economic": (np.empty((m, 0), dt), np.empty((0, n), dt)),
                    "r": (np.empty((m, n), dt),),
                    "raw": (np.empty((m, n), dt), np.empty((0,), dt), np.empty((0, n), dt))}[self.mode]
        if self.mode == "full":
            q, r = np.linalg.qr(a, mode="complete")
            return (q.astype(dt, copy=False), r.astype(dt, copy=False))
        if self.mode == "economic":
            q, r = np.linalg.qr(a, mode="reduced")
            return (q.astype(dt, copy=False), r.astype(dt, copy=False))
        h, tau = np.linalg.qr(a, mode="raw")
        h = np.ascontiguousarray(h.T).astype(dt, copy=False)
        if self.mode == "r":
            return (np.triu(h),)
        return (h, tau.astype(dt, copy=False), np.triu(h[:k]))

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's gradient, batched (see the module doc)."""
        from ffigraph.tensor.basic import zeros_like
        from ffigraph.tensor.gradient import grad_not_implemented
        from ffigraph.tensor.shapes import shape_i

        (a,) = inputs
        if self.mode == "raw":
            return [grad_not_implemented(self, 0, a, "Gradient of qr not implemented for mode=raw")]
        m, n = shape_i(a, a.ndim - 2), shape_i(a, a.ndim - 1)
        ms, ns = a.type.shape[-2], a.type.shape[-1]
        known = ms is not None and ns is not None
        if self.mode == "r":
            q, r = QR("economic")(a)
            dq = zeros_like(q)
            dr = output_grads[0][..., :core_min(m, n), :]
            q_unused = True
        else:
            q, r = outputs
            dq, dr = output_grads
            q_unused = is_zero_grad(dq)
        poison = None
        if self.mode == "full" and (not known or ms > ns):
            # Q's last m - n columns (m > n) are not unique: only a cost that ignores them has a gradient
            if known and not q_unused:
                return [grad_not_implemented(self, 0, a, "Gradient of qr not implemented for m x n matrices with "
                                             "m > n and mode=full (unless Q is unused); use mode='economic'")]
            if not q_unused:
                from ffigraph.tensor.math import any as tany, neq

                poison = tany(neq(dq[..., :, n:], 0))
            q, dq = q[..., :, :n], dq[..., :, :n]
            r, dr = r[..., :n, :], dr[..., :n, :]
        if known and ms >= ns:
            return [_grad_tall(q, r, dq, dr)]
        # m < n, or shapes known only at run time: the m < n formula, which is also the m >= n one
        # there (then Y and dV are empty and U = R)
        g = _grad_wide(a, q, r, dq, dr, m)
        if poison is not None:
            from ffigraph.tensor.basic import switch

            g = switch(poison, np.asarray(np.nan, a.dtype), g)
        return [g]

    # ---- C
    def c_routines(self, node):
        return ["geqrf", "orgqr"] if self.mode in ("full", "economic") else ["geqrf"]

    def c_support(self, node, dtype):
        return MAX64_C

    def c_core_out_shape(self, node, d):
        m, n = d.ins[0].dims
        k = "(%s < %s ? %s : %s)" % (m, n, m, n)
        return {"full": [[m, m], [m, n]], "economic": [[m, k], [k, n]], "r": [[m, n]],
                "raw": [[m, n], [k], [k, n]]}[self.mode]

    def c_prepare(self, node, d):
        m, n = d.ins[0].dims
        qcols = {"full": "qr_m", "economic": "qr_k"}.get(self.mode, "0")
        lines = ["const int64_t qr_m = %s, qr_n = %s;" % (m, n),
                 "const int64_t qr_k = qr_m < qr_n ? qr_m : qr_n;",
                 "/* Q's columns (orgqr), and the work array's columns: A's, or Q's when more */",
                 "const int64_t qr_qcols = %s;" % qcols,
                 "const int64_t qr_cols = qr_n > qr_qcols ? qr_n : qr_qcols;",
                 "int64_t qr_lwork = 1;",
                 "if (qr_m > 0) {",
                 "    %s q_work = 0, q_a = 0, q_tau = 0;" % d.T,
                 "    int64_t q_info = 0, q_l = -1;",
                 "    if (qr_k > 0) {",
                 "        %s(&qr_m, &qr_n, &q_a, &qr_m, &q_tau, &q_work, &q_l, &q_info);" % d.sym["geqrf"],
                 "        qr_lwork = %s;" % lwork_c("q_work", "qr_n"),
                 "    }"]
        if self.mode in ("full", "economic"):
            lines += ["    if (qr_qcols > 0) {",
                      "        q_work = 0;",
                      "        %s(&qr_m, &qr_qcols, &qr_k, &q_a, &qr_m, &q_tau, &q_work, &q_l, &q_info);"
                      % d.sym["orgqr"],
                      "        qr_lwork = ffg_la_max64(qr_lwork, %s);" % lwork_c("q_work", "qr_qcols"),
                      "    }"]
        lines.append("}")
        return "\n".join(lines)

    def c_workspace(self, node, d):
        return [("the column-major copy, factored in place (then Q)", d.T, "qr_m * qr_cols"),
                ("the Householder factors tau", d.T, "qr_k"),
                ("geqrf's and orgqr's work", d.T, "qr_lwork")]

    def c_core(self, node, d):
        a = d.ins[0]
        wa, tau, work = (w.var for w in d.work)
        lines = ["int64_t info = 0, i, j;",
                 "(void)i; (void)j;",
                 "if (qr_k > 0) {",
                 "    ffg_la_load_%s(%s, %s, qr_m, qr_n, %s, %s);" % (d.tag, wa, a.ptr, a.strides[0], a.strides[1]),
                 "    %s(&qr_m, &qr_n, %s, &qr_m, %s, %s, &qr_lwork, &info);" % (d.sym["geqrf"], wa, tau, work)]
        lines += ["    " + x for x in lapack_c.info_failure(d, "geqrf", "unexpected failure (info %lld; batch entry "
                                                             "%lld)").split("\n")]
        lines.append("}")
        # R: the upper triangle of the first rows rows
        out_r = {"full": 1, "economic": 1, "r": 0, "raw": 2}[self.mode]
        rows = "qr_m" if self.mode in ("full", "r") else "qr_k"
        zr = d.outs[out_r]
        lines += ["for (i = 0; i < %s; ++i)" % rows,
                  "    for (j = 0; j < qr_n; ++j)",
                  "        %s[i * qr_n + j] = j >= i ? %s[i + j * qr_m] : 0;" % (zr.ptr, wa)]
        if self.mode == "raw":
            zh, zt = d.outs[0], d.outs[1]
            lines += ["ffg_la_store_%s(%s, %s, qr_m, qr_n, qr_m);" % (d.tag, zh.ptr, wa),
                      "if (qr_k > 0) memcpy(%s, %s, (size_t)qr_k * sizeof(%s));" % (zt.ptr, tau, d.T)]
        elif self.mode in ("full", "economic"):
            zq = d.outs[0]
            lines += ["if (qr_qcols > 0) {",
                      "    /* Q: orgqr expands the reflectors (columns past k start as the identity's) */",
                      "    %s(&qr_m, &qr_qcols, &qr_k, %s, &qr_m, %s, %s, &qr_lwork, &info);"
                      % (d.sym["orgqr"], wa, tau, work)]
            lines += ["    " + x for x in lapack_c.info_failure(d, "orgqr", "unexpected failure (info %lld; batch "
                                                                 "entry %lld)").split("\n")]
            lines += ["    ffg_la_store_%s(%s, %s, qr_m, qr_qcols, qr_m);" % (d.tag, zq.ptr, wa),
                      "}"]
        return "\n".join(lines)


def _copyltu(x):
    from ffigraph.tensor.construct import tril

    return tril(x, 0) + mT(tril(x, -1))


def _grad_tall(q, r, dq, dr):
    """``m >= n``: ``M = R dR^T - dQ^T Q``, ``A_bar = (R^-1 (dQ + Q copyltu(M))^T)^T``."""
    from ffigraph.tensor.linalg.triangular import solve_triangular
    from ffigraph.tensor.products import matmul

    mm = matmul(r, mT(dr)) - matmul(mT(dq), q)
    kk = dq + matmul(q, _copyltu(mm))
    return mT(solve_triangular(r, mT(kk), lower=False, check_finite=False))


def _grad_wide(a, q, r, dq, dr, m):
    """``m < n``: ``A = [X Y]``, ``R = [U V]`` with ``U`` ``m x m``. With ``m >= n`` (``Q`` ``m x n``,
    ``R`` ``n x n``) the slices leave ``U = R`` and ``Y``, ``dV`` empty: ``_grad_tall``'s result."""
    from ffigraph.tensor.basic import concatenate
    from ffigraph.tensor.linalg.triangular import solve_triangular
    from ffigraph.tensor.products import matmul

    y = a[..., :, m:]
    u = r[..., :, :m]
    du, dv = dr[..., :, :m], dr[..., :, m:]
    dq_yt_dv = dq + matmul(y, mT(dv))
    mm = matmul(u, mT(du)) - matmul(mT(dq_yt_dv), q)
    x_bar = mT(solve_triangular(u, mT(dq_yt_dv + matmul(q, _copyltu(mm))), lower=False, check_finite=False))
    y_bar = matmul(q, dv)
    return concatenate([x_bar, y_bar], axis=-1)


def qr(A, mode="full", overwrite_a=False, pivoting=False, lwork=None):
    """The QR decomposition of ``A`` (batched over leading axes), as PyTensor's ``qr`` (scipy's
    modes; "complete" and "reduced" are numpy's names for "full" and "economic"): ``(Q, R)``,
    ``R`` alone (mode "r") or ``(H, tau, R)`` (mode "raw"); see the module doc."""
    if mode == "complete":
        mode = "full"
    elif mode == "reduced":
        mode = "economic"
    if pivoting:
        raise NotImplementedError("qr: pivoting=True (column-pivoted QR, LAPACK geqp3) is not supported")
    return QR(mode=mode)(A)

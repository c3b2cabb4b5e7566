"""``eigh`` and ``eigvalsh``: eigenvalues (ascending, as numpy's) and eigenvectors of symmetric
matrices (LAPACK ``syevd``, divide and conquer, as numpy's), batched over leading axes, with
PyTensor's gradients.

Only the triangle named by ``lower`` is read. Eigenvectors are the columns of ``v``
(``a = v diag(w) v^T``); their signs are LAPACK's (the same routine as numpy's, so normally the
same signs, but no sign is promised). A matrix holding inf or NaN (in the triangle read) gives
NaN eigenvalues and eigenvectors for that batch entry, as numpy's ``eigh`` does; an iteration that
does not converge is a ``numpy.linalg.LinAlgError`` naming the node.

Differences from PyTensor: the generalized problem (``b``) is not supported
(NotImplementedError); ``driver`` ('evr' or 'evd') is checked but both run ``syevd`` (numpy's
driver), so it is not one of the op's props; ``overwrite_a`` does not exist (inputs are never
overwritten).
"""
from __future__ import annotations

import warnings

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import LinalgOp, check_square, mT
from ffigraph.tensor.linalg.decomp_util import MAX64_C, fold_to_triangle, is_zero_grad, lwork_c
from ffigraph.tensor.linalg.lapack_c import square_check_c

__all__ = ["Eigh", "Eigvalsh", "eigh", "eigvalsh"]


class _SymmetricEigen(LinalgOp):
    """Eigenvalues (and, with ``compute_v``, eigenvectors) of symmetric matrices."""

    __props__ = ("lower",)
    compute_v = True
    c_version = (1,)

    def __init__(self, lower=True):
        self.lower = bool(lower)

    @property
    def nout(self):
        return 2 if self.compute_v else 1

    def core_ndims_in(self):
        return [2]

    def check_core_shapes(self, shapes):
        check_square(self, shapes[0], 0)

    def core_shapes_out(self, shapes):
        n = shapes[0][-1]
        return [(n,), (n, n)] if self.compute_v else [(n,)]

    def check_values(self, inputs):
        a = inputs[0]
        if a.shape[-1] != a.shape[-2]:
            raise ValueError("%s: input 0 must be square, got a %d x %d matrix" % ((self._label(),) + a.shape[-2:]))

    def core_perform(self, a):
        n = a.shape[0]
        tri = np.tril(a) if self.lower else np.triu(a)
        if n and not np.all(np.isfinite(tri)):
            nan = np.full((n,), np.nan, a.dtype)
            return (nan, np.full((n, n), np.nan, a.dtype)) if self.compute_v else (nan,)
        if n == 0:
            w, v = np.empty((0,), a.dtype), np.empty((0, 0), a.dtype)
        else:
            uplo = "L" if self.lower else "U"
            try:
                if self.compute_v:
                    w, v = np.linalg.eigh(a, UPLO=uplo)
                else:
                    w, v = np.linalg.eigvalsh(a, UPLO=uplo), None
            except np.linalg.LinAlgError:
                raise np.linalg.LinAlgError("%s: the eigenvalue algorithm did not converge" % self._label()) from None
        if self.compute_v:
            return (w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False))
        return (w.astype(a.dtype, copy=False),)

    # ---- C
    def c_routines(self, node):
        return ["syevd"]

    def c_support(self, node, dtype):
        return MAX64_C

    def c_check(self, node, d):
        return square_check_c(d)

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n], [n, n]] if self.compute_v else [[n]]

    def c_prepare(self, node, d):
        # one workspace query for the whole batch (every entry has the same order n)
        n = d.ins[0].dims[0]
        jobz = "V" if self.compute_v else "N"
        minimum = "1 + 6 * ev_n + 2 * ev_n * ev_n" if self.compute_v else "2 * ev_n + 1"
        iminimum = "3 + 5 * ev_n" if self.compute_v else "1"
        return "\n".join([
            "const int64_t ev_n = %s;" % n,
            "int64_t ev_lwork = 1, ev_liwork = 1;",
            "if (ev_n > 0) {",
            "    %s q_work = 0, q_a = 0, q_w = 0;" % d.T,
            "    int64_t q_iwork = 0, q_info = 0, q_l = -1, q_li = -1;",
            "    const char q_jobz = '%s', q_uplo = '%s';" % (jobz, "L" if self.lower else "U"),
            "    %s(&q_jobz, &q_uplo, &ev_n, &q_a, &ev_n, &q_w, &q_work, &q_l, &q_iwork, &q_li, &q_info, 1, 1);"
            % d.sym["syevd"],
            "    ev_lwork = %s;" % lwork_c("q_work", minimum),
            "    ev_liwork = ffg_la_max64(q_iwork, %s);" % iminimum,
            "}"])

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("the column-major copy, overwritten by the eigenvectors", d.T, "%s * %s" % (n, n)),
                ("the eigenvalues", d.T, n),
                ("syevd's work", d.T, "ev_lwork"),
                ("syevd's iwork", "int64_t", "ev_liwork")]

    def c_core(self, node, d):
        a = d.ins[0]
        wa, ww, work, iwork = (w.var for w in d.work)
        zw = d.outs[0]
        keep = "j <= i" if self.lower else "j >= i"
        lines = ["const int64_t n = ev_n;",
                 "const int64_t lda = n > 0 ? n : 1;",
                 "int64_t info = 0, i, j, finite = 1;",
                 "const char jobz = '%s', uplo = '%s';" % ("V" if self.compute_v else "N", "L" if self.lower else "U"),
                 "/* inf or NaN in the triangle read: NaN results (numpy's eigh gives NaN) */",
                 "for (i = 0; i < n && finite; ++i)",
                 "    for (j = 0; j < n; ++j)",
                 "        if ((%s) && !isfinite(%s[i * %s + j * %s])) { finite = 0; break; }"
                 % (keep, a.ptr, a.strides[0], a.strides[1]),
                 "if (!finite) {"]
        lines += ["    ffg_la_fill_nan_%s(%s, %s);" % (d.tag, z.ptr, z.size) for z in d.outs]
        lines += ["} else if (n > 0) {",
                  "    ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, wa, a.ptr, a.strides[0], a.strides[1]),
                  "    %s(&jobz, &uplo, &n, %s, &lda, %s, %s, &ev_lwork, %s, &ev_liwork, &info, 1, 1);"
                  % (d.sym["syevd"], wa, ww, work, iwork)]
        lines += ["    " + line for line in lapack_c.info_failure(
            d, "syevd", "the eigenvalue algorithm did not converge (info %lld; batch entry %lld)").split("\n")]
        lines += ["    memcpy(%s, %s, (size_t)n * sizeof(%s));" % (zw.ptr, ww, d.T)]
        if self.compute_v:
            lines.append("    ffg_la_store_%s(%s, %s, n, n, lda);" % (d.tag, d.outs[1].ptr, wa))
        lines.append("}")
        return "\n".join(lines)


class Eigh(_SymmetricEigen):
    """``(w, v)``: the eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix."""

    what = "eigh"
    compute_v = True

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's: with ``F_ij = 1/(w_j - w_i)`` (0 on the diagonal),
        ``g = v (diag(gw) + F * (v^T gv)) v^T``, folded onto the triangle read; batched. It assumes
        distinct eigenvalues when ``v`` is used (the eigenvectors of a repeated eigenvalue are not
        unique); a cost of ``w`` alone never divides by a gap."""
        from ffigraph.tensor.construct import eye
        from ffigraph.tensor.products import matmul
        from ffigraph.tensor.shapes import shape_i

        (a,), (w, v), (gw, gv) = inputs, outputs, output_grads
        n = shape_i(a, a.ndim - 1)
        ident = eye(n, dtype=a.dtype)
        inner = gw[..., :, None] * ident
        if not is_zero_grad(gv):
            gaps = w[..., None, :] - w[..., :, None]           # [i, j] = w_j - w_i
            f = (1 - ident) / (gaps + ident)                    # (no 1/0 on the diagonal)
            inner = inner + f * matmul(mT(v), gv)
        g = matmul(matmul(v, inner), mT(v))
        return [fold_to_triangle(g, self.lower)]


class Eigvalsh(_SymmetricEigen):
    """``w``: the eigenvalues (ascending) of each symmetric matrix."""

    what = "eigvalsh"
    compute_v = False

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's: ``v diag(gw) v^T`` (``v`` from ``eigh``), folded onto the triangle read."""
        from ffigraph.tensor.products import matmul

        (a,), (gw,) = inputs, output_grads
        _, v = Eigh(lower=self.lower)(a)
        g = matmul(v * gw[..., None, :], mT(v))
        return [fold_to_triangle(g, self.lower)]


def _lower_from(lower, UPLO):
    if UPLO is not None:
        warnings.warn("UPLO is deprecated and will be removed in a future version. Use the ``lower`` argument "
                      "instead.", DeprecationWarning, stacklevel=3)
        if UPLO not in ("L", "U"):
            raise ValueError("UPLO must be 'L' or 'U', got %r" % (UPLO,))
        return UPLO == "L"
    return lower


def _no_b(b, what):
    if b is not None:
        raise NotImplementedError("%s: generalized eigenvalue problems (b given) are not supported; only the "
                                  "standard symmetric problem (b=None)" % what)


def eigh(a, b=None, lower=True, UPLO=None, driver="evr"):
    """The eigenvalues ``w`` (ascending) and eigenvectors ``v`` (columns, ``a = v diag(w) v^T``) of
    the symmetric matrix ``a`` (batched over leading axes), as PyTensor's ``eigh``; only the
    triangle named by ``lower`` is read (``UPLO``: 'L' or 'U', deprecated). ``driver`` may be
    'evr' or 'evd'; both use LAPACK's divide and conquer (``syevd``, numpy's). ``b`` (the
    generalized problem) is not supported."""
    lower = _lower_from(lower, UPLO)
    if driver not in ("evr", "evd"):
        raise ValueError("Invalid driver: %r. Must be one of 'evr', 'evd'." % (driver,))
    _no_b(b, "eigh")
    return Eigh(lower=lower)(a)


def eigvalsh(a, b=None, lower=True):
    """The eigenvalues (ascending) of the symmetric matrix ``a`` (batched), as PyTensor's
    ``eigvalsh``; only the triangle named by ``lower`` is read. ``b`` is not supported."""
    _no_b(b, "eigvalsh")
    return Eigvalsh(lower=lower)(a)

"""``cholesky``: the Cholesky factor of a symmetric positive-definite matrix (LAPACK ``potrf``),
batched, with PyTensor's gradient.

As scipy's (and PyTensor's) ``cholesky``, only the triangle named by ``lower`` is read; the other
triangle of the result is zero. A matrix that is not positive definite is a
``numpy.linalg.LinAlgError`` naming the node (from C: FFG_ERR_LINALG) with ``on_error='raise'``,
or a batch entry of NaN with ``on_error='nan'``. ``check_finite=True`` refuses inf and NaN in the
input (ValueError, as scipy's check), whatever ``on_error``.

Decided: ``on_error`` defaults to ``'raise'`` (PyTensor 3 defaults to ``'nan'``; ffigraph's issue
asks for an error unless the user asks for NaN).
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import LinalgOp, check_finite_values, check_square, mT
from ffigraph.tensor.linalg.lapack_c import finite_check_c, square_check_c

__all__ = ["Cholesky", "cholesky"]


class Cholesky(LinalgOp):
    """The Cholesky factor ``L`` (``lower``: ``A = L L^T``) or ``U`` (``A = U^T U``) of each matrix."""

    __props__ = ("lower", "check_finite", "on_error")
    what = "cholesky"
    c_version = (1,)

    def __init__(self, lower=True, check_finite=True, on_error="raise"):
        if on_error not in ("raise", "nan"):
            raise ValueError("cholesky: on_error must be 'raise' or 'nan', got %r" % (on_error,))
        self.lower = bool(lower)
        self.check_finite = bool(check_finite)
        self.on_error = on_error

    def core_ndims_in(self):
        return [2]

    def check_core_shapes(self, shapes):
        check_square(self, shapes[0], 0)

    def core_shapes_out(self, shapes):
        return [tuple(shapes[0])]

    def check_values(self, inputs):
        a = inputs[0]
        if a.shape[-1] != a.shape[-2]:
            raise ValueError("cholesky: input 0 must be square, got a %d x %d matrix" % a.shape[-2:])
        if self.check_finite:
            check_finite_values(self, [a])

    def core_perform(self, a):
        n = a.shape[0]
        if n == 0:
            return (np.empty((0, 0), a.dtype),)
        sym = np.tril(a) + np.tril(a, -1).T if self.lower else np.triu(a) + np.triu(a, 1).T
        try:
            low = np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            if self.on_error == "nan":
                return (np.full(a.shape, np.nan, a.dtype),)
            raise np.linalg.LinAlgError("cholesky: the matrix is not positive definite") from None
        return (low if self.lower else low.T,)

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's (Murray 2016, "Differentiation of the Cholesky decomposition"), batched:
        with L the lower factor and P = Phi(L^T dL) (the lower triangle, its diagonal halved),
        S = L^-T P L^-1 and dA = tril(S + S^T) - diag(S)."""
        from ffigraph.tensor.basic import as_tensor_variable
        from ffigraph.tensor.construct import eye, tri
        from ffigraph.tensor.linalg.triangular import solve_triangular
        from ffigraph.tensor.products import matmul
        from ffigraph.tensor.shapes import shape_i

        (a,), (chol,), (dz,) = inputs, outputs, output_grads
        mt = mT
        if not self.lower:
            chol, dz = mt(chol), mt(dz)
        n = shape_i(a, a.ndim - 1)
        low_mask = tri(n, n, 0, dtype=a.dtype)
        ident = eye(n, dtype=a.dtype)
        inner = matmul(mt(chol), dz)
        phi = inner * low_mask - inner * ident * as_tensor_variable(np.asarray(0.5, a.dtype))
        # S = L^-T phi L^-1: two solves with the upper factor L^T
        first = solve_triangular(mt(chol), mt(phi), lower=False)          # L^-T phi^T
        s = solve_triangular(mt(chol), mt(first), lower=False)            # L^-T (L^-T phi^T)^T = L^-T phi L^-1
        sym = s + mt(s)
        mask = low_mask if self.lower else mt(low_mask)
        return [sym * mask - s * ident]

    # ---- C
    def c_routines(self, node):
        return ["potrf"]

    def c_check(self, node, d):
        return square_check_c(d)

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n, n]]

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("the column-major copy factored in place", d.T, "%s * %s" % (n, n))]

    def c_core(self, node, d):
        a, z, w = d.ins[0], d.outs[0], d.work[0].var
        keep = "j <= i" if self.lower else "j >= i"
        lines = ["const int64_t n = %s;" % a.dims[0],
                 "const int64_t lda = n > 0 ? n : 1;",
                 "int64_t info = 0, i, j;",
                 "const char uplo = '%s';" % ("L" if self.lower else "U")]
        if self.check_finite:
            lines.append(finite_check_c(d, 0, "n", "n"))
        lines += ["ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, w, a.ptr, a.strides[0], a.strides[1]),
                  "if (n > 0)",
                  "    %s(&uplo, &n, %s, &lda, &info, 1);" % (d.sym["potrf"], w),
                  lapack_c.info_failure(d, "potrf", "the matrix is not positive definite (its leading minor of "
                                        "order %lld is not; batch entry %lld)",
                                        [z] if self.on_error == "nan" else None),
                  "if (info == 0) {",
                  "    /* the factor's triangle, zeros in the other */",
                  "    for (i = 0; i < n; ++i)",
                  "        for (j = 0; j < n; ++j)",
                  "            %s[i * n + j] = %s ? %s[i + j * n] : 0;" % (z.ptr, keep, w),
                  "}"]
        return "\n".join(lines)


def cholesky(x, lower=True, *, check_finite=True, overwrite_a=False, on_error="raise"):
    """The Cholesky factor of ``x`` (batched over leading axes), as PyTensor's ``cholesky``:
    lower (``x = L L^T``) by default, upper (``x = U^T U``) with ``lower=False``. Only that
    triangle of ``x`` is read. ``on_error``: ``'raise'`` (LinAlgError when a matrix is not
    positive definite) or ``'nan'`` (that batch entry is NaN). ``overwrite_a`` is accepted and
    ignored (inputs are never overwritten)."""
    return Cholesky(lower=lower, check_finite=check_finite, on_error=on_error)(x)

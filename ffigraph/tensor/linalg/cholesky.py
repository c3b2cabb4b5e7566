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
from ffigraph.tensor.basic import switch
from ffigraph.tensor.linalg.blockwise import (LinalgOp, SquareMatrixOp, check_finite_values, check_square, mT,
                                              triangle_masks)
from ffigraph.tensor.linalg.lapack_c import square_check_c

__all__ = ["Cholesky", "CholeskyGrad", "cholesky"]


class Cholesky(SquareMatrixOp):
    """The Cholesky factor ``L`` (``lower``: ``A = L L^T``) or ``U`` (``A = U^T U``) of each matrix."""

    __props__ = ("lower", "check_finite", "on_error")
    what = "cholesky"
    c_version = (5,)

    def __init__(self, lower=True, check_finite=True, on_error="raise"):
        if on_error not in ("raise", "nan"):
            raise ValueError("cholesky: on_error must be 'raise' or 'nan', got %r" % (on_error,))
        self.lower = bool(lower)
        self.check_finite = bool(check_finite)
        self.on_error = on_error

    def check_values(self, inputs):
        super().check_values(inputs)
        if self.check_finite:
            check_finite_values(self, inputs)

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
        """PyTensor's (Murray 2016, "Differentiation of the Cholesky decomposition"), one
        ``CholeskyGrad`` node: with L the lower factor and P = Phi(L^T dL) (its lower triangle, the
        diagonal halved), S = L^-T P L^-1 and dA = tril(S + S^T) - diag(S)."""
        return [CholeskyGrad(self.lower)(outputs[0], output_grads[0])]

    # ---- C
    def c_routines(self, node):
        return ["potrf"]

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n, n]]

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("the column-major copy factored in place", d.T, "%s * %s" % (n, n))]

    def c_core(self, node, d):
        # OpenBLAS's potrf is faster on the lower triangle ('L') than on the upper, so both cases
        # factor a lower triangle, copied alone: for lower=True, A's, in column-major order; for
        # lower=False, A^T's (A's upper triangle; a straight copy for a C-contiguous A), whose lower
        # factor is the transpose of A's upper factor. check_finite reads all of A first.
        a, z, w = d.ins[0], d.outs[0], d.work[0].var
        rs, cs = (a.strides[0], a.strides[1]) if self.lower else (a.strides[1], a.strides[0])
        lines = ["const int64_t n = %s;" % a.dims[0],
                 "const int64_t lda = n > 0 ? n : 1;",
                 "int64_t info = 0, i, j;",
                 "const char uplo = 'L';"]
        if self.check_finite:
            lines += ["if (!ffg_la_finite_%s(%s, n, n, %s, %s)) {" % (d.tag, a.ptr, a.strides[0], a.strides[1]),
                      '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: input 0 must not contain infs or NaNs (batch '
                      'entry %%lld)", (long long)bi);' % (d.err, d.label),
                      "    " + d.fail,
                      "}"]
        lines += ["ffg_la_load_lower_%s(%s, %s, n, %s, %s);" % (d.tag, w, a.ptr, rs, cs),
                  "if (n > 0)",
                  "    %s(&uplo, &n, %s, &lda, &info, 1);" % (d.sym["potrf"], w),
                  lapack_c.info_failure(d, "potrf", "the matrix is not positive definite (its leading minor of "
                                        "order %lld is not; batch entry %lld)",
                                        [z] if self.on_error == "nan" else None),
                  "if (info == 0) {"]
        if self.lower:   # the factor, column-major in w, written out row-major with zeros above
            lines.append("    ffg_la_store_lower_%s(%s, %s, n);" % (d.tag, z.ptr, w))
        else:            # U = L'^T, L' the factor of A^T: w's column-major L' read row-major is U
            lines += ["    for (j = 1; j < n; ++j)   /* zeros above L''s diagonal, then one copy */",
                      "        for (i = 0; i < j; ++i)",
                      "            %s[i + j * n] = 0;" % w,
                      "    memcpy(%s, %s, (size_t)(n * n) * sizeof(%s));" % (z.ptr, w, d.T)]
        lines += ["}", "(void)i; (void)j;"]
        return "\n".join(lines)


def cholesky_grad_graph(chol, dz, lower):
    """The gradient of a Cholesky factorisation as a graph of ops (CholeskyGrad's ``L_op`` differentiates
    it, for second derivatives)."""
    from ffigraph.tensor.linalg.triangular import solve_triangular
    from ffigraph.tensor.products import matmul

    if not lower:
        chol, dz = mT(chol), mT(dz)
    below, on = triangle_masks(chol)
    inner = matmul(mT(chol), dz)
    phi = switch(below, inner, switch(on, 0.5 * inner, 0.0))
    first = solve_triangular(mT(chol), mT(phi), lower=False, check_finite=False)   # L^-T phi^T
    s = solve_triangular(mT(chol), mT(first), lower=False, check_finite=False)     # L^-T phi L^-1
    if not lower:
        below = mT(below)
    return switch(below, s + mT(s), switch(on, s, 0.0))


class CholeskyGrad(LinalgOp):
    """The gradient of ``cholesky`` w.r.t. its input, from the factor and the factor's gradient, in
    one node: P = L^T dL (BLAS trmm), its lower triangle with the diagonal halved, S = L^-T P L^-1
    (two trsm), then tril(S + S^T) - diag(S) (triu for an upper factor)."""

    __props__ = ("lower",)
    what = "cholesky's gradient"
    c_version = (1,)

    def __init__(self, lower=True):
        self.lower = bool(lower)

    def core_ndims_in(self):
        return [2, 2]

    def check_core_shapes(self, shapes):
        check_square(self, shapes[0], 0, "the factor")

    def core_shapes_out(self, shapes):
        return [tuple(shapes[0])]

    def core_perform(self, chol, dz):
        low, dlow = (chol, dz) if self.lower else (chol.T, dz.T)
        n = low.shape[0]
        if n == 0:
            return (np.zeros((0, 0), chol.dtype),)
        inner = low.T @ dlow
        phi = np.tril(inner) - np.diag(np.diag(inner)) / 2
        s = np.linalg.solve(low.T, np.linalg.solve(low.T, phi.T).T)
        out = np.tril(s + s.T) - np.diag(np.diag(s))
        return ((out if self.lower else out.T).astype(chol.dtype),)

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import Lop

        chol, dz = inputs
        return Lop(cholesky_grad_graph(chol, dz, self.lower), [chol, dz], output_grads[0])

    def c_routines(self, node):
        return ["trmm", "trsm"]

    def c_check(self, node, d):
        a, b = d.ins
        return square_check_c(d) + "\n" + "\n".join([
            "if (%s != %s || %s != %s) {" % (b.dims[0], a.dims[0], b.dims[1], a.dims[1]),
            '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: the gradient is %%lld x %%lld, the factor %%lld x %%lld", '
            "(long long)%s, (long long)%s, (long long)%s, (long long)%s);"
            % (d.err, d.label, b.dims[0], b.dims[1], a.dims[0], a.dims[1]),
            "    " + d.fail,
            "}"])

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n, n]]

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("L, column-major", d.T, "%s * %s" % (n, n)), ("P then S, column-major", d.T, "%s * %s" % (n, n))]

    def c_core(self, node, d):
        a, b, z = d.ins[0], d.ins[1], d.outs[0]
        wl, wp = d.work[0].var, d.work[1].var
        # an upper factor U is read as L = U^T (its strides swapped), and its gradient likewise
        ars, acs = (a.strides[0], a.strides[1]) if self.lower else (a.strides[1], a.strides[0])
        brs, bcs = (b.strides[0], b.strides[1]) if self.lower else (b.strides[1], b.strides[0])
        keep = "i > j" if self.lower else "i < j"
        return "\n".join([
            "const int64_t n = %s, ld = n > 0 ? n : 1;" % a.dims[0],
            "const %s one = 1;" % d.T,
            "int64_t i, j;",
            "ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, wl, a.ptr, ars, acs),
            "ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, wp, b.ptr, brs, bcs),
            "if (n > 0) {",
            "    /* P = L^T dL, then its lower triangle with the diagonal halved */",
            "    %s(\"L\", \"L\", \"T\", \"N\", &n, &n, &one, %s, &ld, %s, &ld, 1, 1, 1, 1);" % (d.sym["trmm"], wl, wp),
            "    for (j = 0; j < n; ++j) {",
            "        for (i = 0; i < j; ++i)",
            "            %s[i + j * n] = 0;" % wp,
            "        %s[j + j * n] *= (%s)0.5;" % (wp, d.T),
            "    }",
            "    /* S = L^-T P L^-1 */",
            "    %s(\"L\", \"L\", \"T\", \"N\", &n, &n, &one, %s, &ld, %s, &ld, 1, 1, 1, 1);" % (d.sym["trsm"], wl, wp),
            "    %s(\"R\", \"L\", \"N\", \"N\", &n, &n, &one, %s, &ld, %s, &ld, 1, 1, 1, 1);" % (d.sym["trsm"], wl, wp),
            "}",
            "/* tril(S + S^T) - diag(S) (triu for an upper factor), row-major */",
            "for (i = 0; i < n; ++i)",
            "    for (j = 0; j < n; ++j)",
            "        %s[i * n + j] = %s ? %s[i + j * n] + %s[j + i * n] : (i == j ? %s[i + i * n] : 0);"
            % (z.ptr, keep, wp, wp, wp),
        ])


def cholesky(x, lower=True, *, check_finite=True, overwrite_a=False, on_error="raise"):
    """The Cholesky factor of ``x`` (batched over leading axes), as PyTensor's ``cholesky``:
    lower (``x = L L^T``) by default, upper (``x = U^T U``) with ``lower=False``. Only that
    triangle of ``x`` is read. ``on_error``: ``'raise'`` (LinAlgError when a matrix is not
    positive definite) or ``'nan'`` (that batch entry is NaN). ``overwrite_a`` is accepted and
    ignored (inputs are never overwritten)."""
    return Cholesky(lower=lower, check_finite=check_finite, on_error=on_error)(x)

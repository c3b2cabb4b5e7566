"""``solve_triangular``: ``x`` with ``op(A) x = b`` for a triangular ``A`` (LAPACK ``trtrs``), batched,
with gradients; as scipy's and PyTensor's ``solve_triangular``.

Only the triangle named by ``lower`` is read (and not the diagonal with ``unit_diagonal``, which
takes it as ones). ``trans``: 0 / 'N' solves ``A x = b``, 1 / 'T' and 2 / 'C' solve
``A^T x = b`` (real matrices: the same). ``b_ndim`` (1 or 2) is how many of ``b``'s last axes are
one right-hand side (a vector) or several (a matrix); by default ``min(b.ndim, 2)``, as
PyTensor's. A zero on the diagonal is a ``numpy.linalg.LinAlgError`` naming the node (from C:
FFG_ERR_LINALG). ``check_finite`` refuses inf and NaN in either input (ValueError).
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.linalg.blockwise import LinalgOp, check_finite_values, check_square, mT, sum_batch_to, triangle_masks
from ffigraph.tensor.linalg.lapack_c import rhs_check_c, square_check_c

__all__ = ["SolveBase", "SolveTriangular", "solve_triangular", "default_b_ndim", "check_rhs"]

_TRANS = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}


def default_b_ndim(b, b_ndim):
    """PyTensor's rule: ``b_ndim`` as given (1 or 2), else ``min(b.ndim, 2)``."""
    if b_ndim is None:
        return min(as_tensor_variable(b).ndim, 2)
    if b_ndim not in (1, 2):
        raise ValueError("b_ndim must be 1 or 2, got %r" % (b_ndim,))
    return b_ndim


def check_rhs(op, a_shape, b_shape):
    n, rows = a_shape[-1], b_shape[0] if b_shape else None
    if n is not None and rows is not None and n != rows:
        raise ValueError("%s: b has %d rows but a is %d x %d" % (op._label(), rows, a_shape[-2], n))


class SolveBase(LinalgOp):
    """A solve of a square ``a`` (input 0) against ``b`` (input 1, ``b_ndim`` core axes): the output
    has ``b``'s core shape. Subclasses set ``b_ndim`` and ``check_finite``."""

    def core_ndims_in(self):
        return [2, self.b_ndim]

    def check_core_shapes(self, shapes):
        check_square(self, shapes[0], 0, "a")
        check_rhs(self, shapes[0], shapes[1])

    def core_shapes_out(self, shapes):
        return [tuple(shapes[1])]

    def check_values(self, inputs):
        a, b = inputs
        if a.shape[-1] != a.shape[-2]:
            raise ValueError("%s: a must be square, got a %d x %d matrix" % ((self._label(),) + a.shape[-2:]))
        check_rhs(self, a.shape, b.shape[b.ndim - self.b_ndim:])
        if self.check_finite:
            check_finite_values(self, [a, b])

    def c_check(self, node, d):
        return square_check_c(d) + "\n" + rhs_check_c(d)


class SolveTriangular(SolveBase):
    """``x`` with ``op(A) x = b``, ``A`` triangular (see the module doc)."""

    __props__ = ("trans", "lower", "unit_diagonal", "check_finite", "b_ndim")
    what = "solve_triangular"
    c_version = (3,)

    def __init__(self, trans=0, lower=False, unit_diagonal=False, check_finite=True, b_ndim=2):
        if trans not in _TRANS:
            raise ValueError("solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got %r" % (trans,))
        if b_ndim not in (1, 2):
            raise ValueError("solve_triangular: b_ndim must be 1 or 2, got %r" % (b_ndim,))
        self.trans = _TRANS[trans]
        self.lower = bool(lower)
        self.unit_diagonal = bool(unit_diagonal)
        self.check_finite = bool(check_finite)
        self.b_ndim = int(b_ndim)

    def core_perform(self, a, b):
        n = a.shape[0]
        tri = np.tril(a) if self.lower else np.triu(a)
        if self.unit_diagonal:
            tri = tri.copy()
            np.fill_diagonal(tri, 1)
        if n == 0 or b.size == 0:
            return (np.zeros(b.shape, a.dtype),)
        diag = np.diagonal(tri)
        if np.any(diag == 0):
            k = int(np.flatnonzero(diag == 0)[0]) + 1
            raise np.linalg.LinAlgError("solve_triangular: singular matrix: diagonal element %d is zero" % k)
        m = tri.T if self.trans else tri
        return (_substitute(m, b, lower=self.lower != bool(self.trans)).astype(a.dtype),)

    def L_op(self, inputs, outputs, output_grads):
        """``x = op(A)^-1 b``: ``b_bar = op(A)^-T x_bar`` (the same solve with ``trans`` flipped),
        ``A_bar = -b_bar x^T`` (transposed when ``trans``), kept to ``A``'s triangle (without the
        diagonal when ``unit_diagonal``)."""
        from ffigraph.tensor.basic import switch
        from ffigraph.tensor.math import or_

        a, b = inputs
        (x,), (gx,) = outputs, output_grads
        flipped = SolveTriangular(trans=1 - self.trans, lower=self.lower, unit_diagonal=self.unit_diagonal,
                                  check_finite=False, b_ndim=self.b_ndim)
        gb = flipped(a, gx)
        if self.b_ndim == 1:
            ga = -(gb[..., :, None] * x[..., None, :])
        else:
            from ffigraph.tensor.products import matmul

            ga = -matmul(gb, mT(x))
        if self.trans:
            ga = mT(ga)
        below, on = triangle_masks(a)
        keep = below if self.unit_diagonal else or_(below, on)
        ga = switch(keep if self.lower else mT(keep), ga, 0.0)
        return [sum_batch_to(ga, a), sum_batch_to(gb, b)]

    # ---- C
    # The solve is one BLAS trsm from the right on the output itself: x (row-major, n x nrhs) is
    # x^T column-major, and x = op(a)^-1 b is x^T = b^T op(a)^-T, so the output starts as a copy
    # of b and trsm('R') turns it into x in place. a is read where it lies when one of its strides
    # is 1 (a row-major a is a^T column-major: the triangle and the transposition flip), else
    # copied into a column-major workspace. trsm does not look for a zero on the diagonal; the
    # code does, first, as trtrs would (LinAlgError naming the element).
    def c_routines(self, node):
        return ["trsm"]

    def c_core_out_shape(self, node, d):
        return [list(d.ins[1].dims)]

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("a, column-major (when no stride of a is 1)", d.T, "%s * %s" % (n, n))]

    def c_core(self, node, d):
        a, b, z = d.ins[0], d.ins[1], d.outs[0]
        wa = d.work[0].var
        ars, acs = a.strides[0], a.strides[1]
        nrhs = b.dims[1] if self.b_ndim == 2 else "1"
        bcs = b.strides[1] if self.b_ndim == 2 else "0"
        lines = ["const int64_t n = %s, nrhs = %s;" % (a.dims[0], nrhs),
                 "const int64_t ld1 = n > 0 ? n : 1, ldb = nrhs > 0 ? nrhs : 1;",
                 "const %s one = 1;" % d.T,
                 "const %s *am = %s;   /* a, or a^T (am_t), column-major with leading dimension lda */" % (d.T, a.ptr),
                 "int64_t lda = ld1, k;",
                 "int am_t = 0;",
                 "char uplo, transa;"]
        if self.check_finite:
            for k, (e, rows, cols, rs, cs) in enumerate(((a, "n", "n", ars, acs), (b, "n", "nrhs", b.strides[0], bcs))):
                lines += ["if (!ffg_la_finite_%s(%s, %s, %s, %s, %s)) {" % (d.tag, e.ptr, rows, cols, rs, cs),
                          '    ffg_set_error(%s, FFG_ERR_VALUE, -1, "%s: input %d must not contain infs or NaNs '
                          '(batch entry %%lld)", (long long)bi);' % (d.err, d.label, k),
                          "    " + d.fail,
                          "}"]
        if not self.unit_diagonal:
            lines += ["for (k = 0; k < n; ++k)",
                      "    if (%s[k * %s + k * %s] == 0) {" % (a.ptr, ars, acs),
                      '        ffg_set_error(%s, FFG_ERR_LINALG, -1, "%s: singular matrix: diagonal element %%lld is '
                      'zero (batch entry %%lld)", (long long)(k + 1), (long long)bi);' % (d.err, d.label),
                      "        " + d.fail,
                      "    }"]
        lines += ["if (%s == 1 && %s >= ld1) {          /* row-major: a^T column-major, in place */" % (acs, ars),
                  "    lda = %s;" % ars,
                  "    am_t = 1;",
                  "} else if (%s == 1 && %s >= ld1) {   /* column-major: a, in place */" % (ars, acs),
                  "    lda = %s;" % acs,
                  "} else {",
                  "    ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, wa, a.ptr, ars, acs),
                  "    am = %s;" % wa,
                  "}",
                  "/* the stored triangle, and the transposition that makes the stored matrix op(a)^T */",
                  "uplo = (%d != am_t) ? 'L' : 'U';" % int(self.lower),
                  "transa = (%d != am_t) ? 'N' : 'T';" % self.trans,
                  "ffg_la_copy_rows_%s(%s, %s, n, nrhs, %s, %s);" % (d.tag, z.ptr, b.ptr, b.strides[0], bcs),
                  "if (n > 0 && nrhs > 0)",
                  "    %s(\"R\", &uplo, &transa, \"%s\", &nrhs, &n, &one, am, &lda, %s, &ldb, 1, 1, 1, 1);"
                  % (d.sym["trsm"], "U" if self.unit_diagonal else "N", z.ptr)]
        return "\n".join(lines)


def _substitute(m, b, lower):
    """``m^-1 b`` by forward (``lower``) or back substitution, for a triangular ``m`` with no zero
    on its diagonal (numpy has no triangular solve; scipy may be missing, as on PyPy)."""
    n = m.shape[0]
    x = np.array(b, dtype=np.result_type(m, b, np.float32), copy=True)
    order = range(n) if lower else range(n - 1, -1, -1)
    for i in order:
        rest = slice(0, i) if lower else slice(i + 1, n)
        x[i] = (x[i] - m[i, rest] @ x[rest]) / m[i, i]
    return x


def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False, check_finite=True, b_ndim=None):
    """``x`` with ``op(a) x = b``, ``a`` triangular (batched over leading axes), as PyTensor's
    ``solve_triangular`` (see the module doc)."""
    b_ndim = default_b_ndim(b, b_ndim)
    return SolveTriangular(trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=check_finite,
                           b_ndim=b_ndim)(a, b)

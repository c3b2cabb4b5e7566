"""``inv`` / ``matrix_inverse``: the inverse of a square matrix (LAPACK ``getrf`` + ``getri``),
batched, with PyTensor's gradient.

A singular matrix (an exactly zero pivot) is a ``numpy.linalg.LinAlgError`` naming the node
(from C: FFG_ERR_LINALG), as ``numpy.linalg.inv``. A 0 x 0 matrix's inverse is 0 x 0.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import SquareMatrixOp, mT

__all__ = ["MatrixInverse", "inv", "matrix_inverse"]


class MatrixInverse(SquareMatrixOp):
    """The inverse of each matrix."""

    __props__ = ()
    what = "inv"
    c_version = (1,)

    def core_perform(self, a):
        if a.shape[0] == 0:
            return (np.empty((0, 0), a.dtype),)
        try:
            return (np.asarray(np.linalg.inv(a), a.dtype),)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError("inv: singular matrix") from None

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's: ``-(X^-1 V^T X^-1)^T = -X^-T V X^-T``, batched."""
        from ffigraph.tensor.products import matmul

        (xi,), (gz,) = outputs, output_grads
        xit = mT(xi)
        return [-matmul(matmul(xit, gz), xit)]

    # ---- C
    def c_routines(self, node):
        return ["getrf", "getri"]

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n, n]]

    def c_prepare(self, node, d):
        """getri's workspace length: a query (lwork = -1), at least n."""
        return "\n".join([
            "int64_t lwork = 1;",
            "{",
            "    const int64_t nq = %s, ldq = nq > 0 ? nq : 1, query = -1;" % d.ins[0].dims[0],
            "    int64_t infoq = 0, pivq = 1;",
            "    %s aq = 0, wq = 0;" % d.T,
            "    if (nq > 0) {",
            "        %s(&nq, &aq, &ldq, &pivq, &wq, &query, &infoq);" % d.sym["getri"],
            "        if (infoq == 0 && (int64_t)wq > lwork)",
            "            lwork = (int64_t)wq;",
            "    }",
            "    if (lwork < nq)",
            "        lwork = nq;",
            "}"])

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("the column-major copy, factored and inverted in place", d.T, "%s * %s" % (n, n)),
                ("the pivots", "int64_t", n),
                ("getri's workspace", d.T, "lwork")]

    def c_core(self, node, d):
        a, z = d.ins[0], d.outs[0]
        w, piv, work = d.work[0].var, d.work[1].var, d.work[2].var
        return "\n".join([
            "const int64_t n = %s;" % a.dims[0],
            "const int64_t ld = n > 0 ? n : 1;",
            "int64_t info = 0;",
            "ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, w, a.ptr, a.strides[0], a.strides[1]),
            "if (n > 0)",
            "    %s(&n, &n, %s, &ld, %s, &info);" % (d.sym["getrf"], w, piv),
            lapack_c.info_failure(d, "getrf", "singular matrix (pivot %lld is exactly zero; batch entry %lld)"),
            "if (n > 0)",
            "    %s(&n, %s, &ld, %s, %s, &lwork, &info);" % (d.sym["getri"], w, piv, work),
            lapack_c.info_failure(d, "getri", "singular matrix (pivot %lld is exactly zero; batch entry %lld)"),
            "ffg_la_store_%s(%s, %s, n, n, ld);" % (d.tag, z.ptr, w)])


def inv(a):
    """The inverse of ``a`` (batched over leading axes), as PyTensor's ``inv`` / ``matrix_inverse``;
    ``LinAlgError`` when a matrix is singular."""
    return MatrixInverse()(a)


matrix_inverse = inv

"""``det`` and ``slogdet``: the determinant of a square matrix, and its sign and log absolute value,
from the LU factorization (LAPACK ``getrf``), batched, with PyTensor's gradients.

As numpy's: a singular matrix is no error (``det`` 0; ``slogdet`` sign 0 and logabsdet -inf), a
0 x 0 matrix has determinant 1 (``slogdet`` (1, 0)). The product of the pivots (and their logs) is
accumulated in double precision, also for float32 inputs.

Decided: ``slogdet`` is one op with two outputs (PyTensor 3 writes it as ``sign(det)`` and
``log(abs(det))``, which overflow where the determinant does); the gradient of logabsdet is
``inv(A)^T``, the sign's is zero.
"""
from __future__ import annotations

import numpy as np

from ffigraph.tensor.linalg.blockwise import SquareMatrixOp, mT

__all__ = ["Det", "det", "SLogDet", "slogdet"]


class _LUSummary(SquareMatrixOp):
    """Shared by ``Det`` and ``SLogDet``: one square matrix in, scalars out, from getrf."""

    __props__ = ()
    c_version = (1,)

    def core_shapes_out(self, shapes):
        return [()] * self.nout

    # ---- C
    def c_routines(self, node):
        return ["getrf"]

    def c_core_out_shape(self, node, d):
        return [[]] * self.nout

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("the column-major copy, factored in place", d.T, "%s * %s" % (n, n)),
                ("the pivots", "int64_t", n)]

    def _factor_c(self, d):
        """C lines: ``n``, ``info`` and the LU factors in the workspace; info < 0 is an error,
        info > 0 (singular) is left to the caller."""
        a = d.ins[0]
        w, piv = d.work[0].var, d.work[1].var
        return "\n".join([
            "const int64_t n = %s;" % a.dims[0],
            "const int64_t ld = n > 0 ? n : 1;",
            "int64_t info = 0, i;",
            "ffg_la_load_%s(%s, %s, n, n, %s, %s);" % (d.tag, w, a.ptr, a.strides[0], a.strides[1]),
            "if (n > 0)",
            "    %s(&n, &n, %s, &ld, %s, &info);" % (d.sym["getrf"], w, piv),
            "if (info < 0) {",
            '    ffg_set_error(%s, FFG_ERR_RUNTIME, -1, "%s: LAPACK getrf rejected its argument %%lld", '
            "(long long)-info);" % (d.err, d.label),
            "    " + d.fail,
            "}"])


class Det(_LUSummary):
    """The determinant of each matrix (0 for a singular one, 1 for a 0 x 0 one)."""

    what = "det"

    def core_perform(self, a):
        if a.shape[0] == 0:
            return (np.asarray(1, a.dtype),)
        return (np.asarray(np.linalg.det(a), a.dtype),)

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's: ``g det(A) inv(A)^T``, batched (a LinAlgError where ``A`` is singular)."""
        from ffigraph.tensor.linalg.inverse import inv

        (a,), (d,), (g,) = inputs, outputs, output_grads
        return [(g * d)[..., None, None] * mT(inv(a))]

    def c_core(self, node, d):
        z, w, piv = d.outs[0], d.work[0].var, d.work[1].var
        return "\n".join([
            self._factor_c(d),
            "double det = 1.0;",
            "if (info > 0)",
            "    det = 0.0;   /* singular: an exactly zero pivot */",
            "else",
            "    for (i = 0; i < n; ++i)",
            "        det *= (%s[i] != i + 1) ? -(double)%s[i + i * n] : (double)%s[i + i * n];" % (piv, w, w),
            "%s[0] = (%s)det;" % (z.ptr, z.ctype)])


class SLogDet(_LUSummary):
    """Each matrix's determinant as ``(sign, logabsdet)``: ``det = sign * exp(logabsdet)``."""

    what = "slogdet"
    nout = 2

    def core_perform(self, a):
        if a.shape[0] == 0:
            return (np.asarray(1, a.dtype), np.asarray(0, a.dtype))
        sign, logabs = np.linalg.slogdet(a)
        return (np.asarray(sign, a.dtype), np.asarray(logabs, a.dtype))

    def L_op(self, inputs, outputs, output_grads):
        """``d logabsdet / dA = inv(A)^T`` (the sign's gradient is zero), batched."""
        from ffigraph.tensor.linalg.inverse import inv

        (a,), (_, glog) = inputs, output_grads
        return [glog[..., None, None] * mT(inv(a))]

    def c_core(self, node, d):
        zs, zl, w, piv = d.outs[0], d.outs[1], d.work[0].var, d.work[1].var
        return "\n".join([
            self._factor_c(d),
            "double sign = 1.0, logabs = 0.0;",
            "if (info > 0) {   /* singular: an exactly zero pivot */",
            "    sign = 0.0;",
            "    logabs = -INFINITY;",
            "} else {",
            "    for (i = 0; i < n; ++i) {",
            "        double u = (double)%s[i + i * n];" % w,
            "        if (u < 0) {",
            "            sign = -sign;",
            "            u = -u;",
            "        }",
            "        if (%s[i] != i + 1)" % piv,
            "            sign = -sign;",
            "        logabs += log(u);",
            "    }",
            "}",
            "%s[0] = (%s)sign;" % (zs.ptr, zs.ctype),
            "%s[0] = (%s)logabs;" % (zl.ptr, zl.ctype)])


def det(a):
    """The determinant of ``a`` (batched over leading axes), as PyTensor's ``det``."""
    return Det()(a)


def slogdet(x):
    """``(sign, logabsdet)`` of ``x``'s determinant (batched over leading axes), as numpy's and
    PyTensor's ``slogdet`` (``det = sign * exp(logabsdet)``)."""
    return tuple(SLogDet()(x))

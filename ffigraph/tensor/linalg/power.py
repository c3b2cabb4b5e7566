"""``matrix_power`` and ``expm``, batched over leading axes.

``matrix_power(M, n)``: numpy's and PyTensor's, by repeated squaring with ``matmul`` (so C code
and gradients come from ``matmul``); ``n = 0`` gives identities of ``M``'s dtype and shape (numpy's;
PyTensor's is one floatX identity); a negative ``n`` inverts ``M`` first with
``ffigraph.tensor.linalg.inverse.inv`` (numpy's choice: a singular matrix is a LinAlgError;
PyTensor uses ``pinv``).

``expm(A)``: the matrix exponential by scaling and squaring with a Padé approximant (Higham 2005,
"The scaling and squaring method for the matrix exponential revisited": degree 3, 5, 7 or 9 when
the 1-norm is small enough, else degree 13 after scaling by ``2^-s``), computed in float64 (a
float32 input gives a float32 result of the float64 computation), in C (LAPACK ``getrf``/``getrs``
for the Padé quotient, plain loops for the products) and in numpy for ``perform``. Its gradient
is PyTensor's: the Fréchet derivative from the exponential of the ``2n x 2n`` block matrix
``[[A^T, G], [0, A^T]]``. A matrix holding inf or NaN gives NaN (that batch entry). scipy's
``expm`` uses the later Al-Mohy & Higham (2009) variant; results agree to rounding.
"""
from __future__ import annotations

import operator

import numpy as np

from ffigraph.tensor.linalg import lapack_c
from ffigraph.tensor.linalg.blockwise import SquareMatrixOp, mT

__all__ = ["Expm", "expm", "matrix_power"]


def matrix_power(M, n):
    """``M`` (a square matrix, or a batch of them) to the integer power ``n`` (see the module
    doc); the dtype is ``M``'s for ``n >= 0``."""
    from ffigraph.tensor.basic import alloc, as_tensor_variable
    from ffigraph.tensor.construct import eye
    from ffigraph.tensor.products import matmul

    M = as_tensor_variable(M)
    if M.ndim < 2:
        raise ValueError("matrix_power: %d-dimensional array given. Array must be at least two-dimensional" % M.ndim)
    rows, cols = M.type.shape[-2:]
    if rows is not None and cols is not None and rows != cols:
        raise ValueError("matrix_power: Last 2 dimensions of the array must be square, got %d x %d" % (rows, cols))
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("matrix_power: exponent must be an integer, got %r" % (n,)) from None
    if n < 0:
        try:
            from ffigraph.tensor.linalg.inverse import inv
        except ImportError:
            raise NotImplementedError("matrix_power: negative powers need a matrix inverse "
                                      "(ffigraph.tensor.linalg.inverse.inv), which is not available") from None
        M = inv(M)
        n = -n
    if n == 0:
        ident = eye(M.shape[-1], dtype=M.dtype)
        return alloc(ident, *[M.shape[i] for i in range(M.ndim)])
    if n == 1:
        return M
    if n == 2:
        return matmul(M, M)
    if n == 3:
        return matmul(matmul(M, M), M)
    result = z = None
    while n > 0:
        z = M if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


# ------------------------------------------------------------------ expm: Higham (2005)

THETA = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1, 9: 2.097847961257068e0,
         13: 5.371920351148152e0}
PADE = {
    3: [120., 60., 12., 1.],
    5: [30240., 15120., 3360., 420., 30., 1.],
    7: [17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.],
    9: [17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880., 3960., 90., 1.],
    13: [64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
         10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.],
}


def _expm_numpy(a):
    """``exp(a)`` of one finite float64 matrix (the algorithm of the C code, step for step)."""
    n = a.shape[0]
    if n == 0:
        return a.copy()
    ident = np.eye(n)
    norm = np.abs(a).sum(axis=0).max()
    s = 0
    for m in (3, 5, 7, 9):
        if norm <= THETA[m]:
            break
    else:
        m = 13
        if norm > THETA[13]:
            s = int(np.ceil(np.log2(norm / THETA[13])))
            a = a * 2.0 ** -s
    b = PADE[m]
    a2 = a @ a
    if m == 13:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u0 = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    else:
        powers = [ident, a2]
        for _ in range(2, (m + 1) // 2):
            powers.append(powers[-1] @ a2)
        u0 = sum(b[2 * p + 1] * powers[p] for p in range(len(powers)))
        v = sum(b[2 * p] * powers[p] for p in range(len(powers)))
    u = a @ u0
    try:
        x = np.linalg.solve(v - u, v + u)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError("expm: the Padé denominator is singular") from None
    for _ in range(s):
        x = x @ x
    return x


class Expm(SquareMatrixOp):
    """The matrix exponential of each square matrix (see the module doc)."""

    __props__ = ()
    what = "expm"
    c_version = (1,)

    def core_perform(self, a):
        if a.size and not np.all(np.isfinite(a)):
            return (np.full(a.shape, np.nan, a.dtype),)
        return (_expm_numpy(np.asarray(a, np.float64)).astype(a.dtype),)

    def L_op(self, inputs, outputs, output_grads):
        """PyTensor's: ``expm([[A^T, G], [0, A^T]])[..., :n, n:]``, batched."""
        from ffigraph.tensor.basic import concatenate, zeros_like
        from ffigraph.tensor.shapes import shape_i

        (a,), (g,) = inputs, output_grads
        n = shape_i(a, a.ndim - 1)
        at = mT(a)
        top = concatenate([at, g], axis=-1)
        bottom = concatenate([zeros_like(a), at], axis=-1)
        return [self(concatenate([top, bottom], axis=-2))[..., :n, n:]]

    # ---- C
    def c_routines(self, node):
        return []

    def c_support(self, node, dtype):
        getrf, getrs = lapack_c.symbol("getrf", "float64"), lapack_c.symbol("getrs", "float64")
        coefficients = "\n".join("static const double ffg_expm_b%d[%d] = {%s};" % (m, len(b), ", ".join(repr(x) for x in b))
                                 for m, b in sorted(PADE.items()))
        return "\n".join([lapack_c.prototype("getrf", "float64"), lapack_c.prototype("getrs", "float64"),
                          EXPM_C % dict(getrf=getrf, getrs=getrs, coefficients=coefficients,
                                        guard="FFG_EXPM_" + getrf.upper(),
                                        th3=THETA[3], th5=THETA[5], th7=THETA[7], th9=THETA[9], th13=THETA[13])])

    def c_core_out_shape(self, node, d):
        n = d.ins[0].dims[0]
        return [[n, n]]

    def c_workspace(self, node, d):
        n = d.ins[0].dims[0]
        return [("A and exp(A), column-major float64, and the Padé terms", "double", "9 * %s * %s" % (n, n)),
                ("getrf's pivots", "int64_t", n)]

    def c_core(self, node, d):
        a, z = d.ins[0], d.outs[0]
        w, ipiv = d.work[0].var, d.work[1].var
        return "\n".join([
            "const int64_t n = %s, nn = n * n;" % a.dims[0],
            "int64_t i, j, info = 0, finite = 1;",
            "double *wa = %s, *wx = %s + nn;" % (w, w),
            "for (j = 0; j < n; ++j)",
            "    for (i = 0; i < n; ++i) {",
            "        wa[i + j * n] = (double)%s[i * %s + j * %s];" % (a.ptr, a.strides[0], a.strides[1]),
            "        if (!isfinite(wa[i + j * n])) finite = 0;",
            "    }",
            "if (!finite) {",
            "    ffg_la_fill_nan_%s(%s, nn);" % (d.tag, z.ptr),
            "} else if (n > 0) {",
            "    info = ffg_expm_run(wa, wx, %s + 2 * nn, %s, n);" % (w, ipiv),
            "    if (info != 0) {",
            '        ffg_set_error(%s, FFG_ERR_LINALG, -1, "%s: the Pade denominator is singular (getrf info %%lld; '
            'batch entry %%lld)", (long long)info, (long long)bi);' % (d.err, d.label),
            "        " + d.fail,
            "    }",
            "    for (i = 0; i < n; ++i)",
            "        for (j = 0; j < n; ++j)",
            "            %s[i * n + j] = (%s)wx[i + j * n];" % (z.ptr, d.T),
            "}"])


EXPM_C = r"""
#ifndef %(guard)s
#define %(guard)s
%(coefficients)s

/* c = a b, n x n column-major float64 */
static void ffg_expm_mm(double *c, const double *a, const double *b, int64_t n)
{
    int64_t i, j, k;
    for (j = 0; j < n; ++j) {
        double *cj = c + j * n;
        for (i = 0; i < n; ++i)
            cj[i] = 0;
        for (k = 0; k < n; ++k) {
            const double bkj = b[k + j * n];
            const double *ak = a + k * n;
            for (i = 0; i < n; ++i)
                cj[i] += ak[i] * bkj;
        }
    }
}

/* x = exp(a) for the finite n x n column-major a (n > 0; a is scaled in place); w: 7 n^2
   doubles, ipiv: n. Returns getrf's or getrs's info (0: done). Higham (2005), as _expm_numpy. */
static int64_t ffg_expm_run(double *a, double *x, double *w, int64_t *ipiv, int64_t n)
{
    const int64_t nn = n * n;
    double *a2 = w, *a4 = w + nn, *a6 = w + 2 * nn, *a8 = w + 3 * nn, *u = w + 4 * nn, *v = w + 5 * nn,
           *t = w + 6 * nn;
    const double *b;
    double norm = 0;
    int64_t i, j, s = 0, p, info = 0;
    int m;
    const char trans = 'N';
    for (j = 0; j < n; ++j) {
        double col = 0;
        for (i = 0; i < n; ++i)
            col += fabs(a[i + j * n]);
        if (col > norm)
            norm = col;
    }
    if (norm <= %(th3)r) m = 3;
    else if (norm <= %(th5)r) m = 5;
    else if (norm <= %(th7)r) m = 7;
    else if (norm <= %(th9)r) m = 9;
    else {
        m = 13;
        if (norm > %(th13)r) {
            double scale;
            s = (int64_t)ceil(log2(norm / %(th13)r));
            scale = ldexp(1.0, (int)-s);
            for (i = 0; i < nn; ++i)
                a[i] *= scale;
        }
    }
    b = m == 3 ? ffg_expm_b3 : m == 5 ? ffg_expm_b5 : m == 7 ? ffg_expm_b7 : m == 9 ? ffg_expm_b9 : ffg_expm_b13;
    ffg_expm_mm(a2, a, a, n);
    if (m >= 5) ffg_expm_mm(a4, a2, a2, n);
    if (m >= 7) ffg_expm_mm(a6, a4, a2, n);
    if (m == 9) ffg_expm_mm(a8, a6, a2, n);
    if (m == 13) {
        for (i = 0; i < nn; ++i)
            a8[i] = b[13] * a6[i] + b[11] * a4[i] + b[9] * a2[i];
        ffg_expm_mm(t, a6, a8, n);
        for (i = 0; i < nn; ++i)
            t[i] += b[7] * a6[i] + b[5] * a4[i] + b[3] * a2[i];
        for (i = 0; i < nn; ++i)
            a8[i] = b[12] * a6[i] + b[10] * a4[i] + b[8] * a2[i];
        ffg_expm_mm(v, a6, a8, n);
        for (i = 0; i < nn; ++i)
            v[i] += b[6] * a6[i] + b[4] * a4[i] + b[2] * a2[i];
    } else {
        const double *pw[5];
        pw[1] = a2; pw[2] = a4; pw[3] = a6; pw[4] = a8;
        for (i = 0; i < nn; ++i) {
            double su = 0, sv = 0;
            for (p = 1; 2 * p < m; ++p) {
                su += b[2 * p + 1] * pw[p][i];
                sv += b[2 * p] * pw[p][i];
            }
            t[i] = su;
            v[i] = sv;
        }
    }
    for (i = 0; i < n; ++i) {
        t[i + i * n] += b[1];
        v[i + i * n] += b[0];
    }
    ffg_expm_mm(u, a, t, n);                 /* U = A (odd terms) */
    for (i = 0; i < nn; ++i) {
        x[i] = v[i] + u[i];                  /* the right-hand side V + U */
        t[i] = v[i] - u[i];                  /* the denominator V - U */
    }
    %(getrf)s(&n, &n, t, &n, ipiv, &info);
    if (info != 0)
        return info;
    %(getrs)s(&trans, &n, &n, t, &n, ipiv, x, &n, &info, 1);
    if (info != 0)
        return info;
    for (p = 0; p < s; ++p) {
        ffg_expm_mm(t, x, x, n);
        memcpy(x, t, (size_t)nn * sizeof(double));
    }
    return 0;
}
#endif
"""


def expm(A):
    """The matrix exponential of ``A`` (square; batched over leading axes), as PyTensor's and
    scipy's ``expm`` (see the module doc)."""
    return Expm()(A)

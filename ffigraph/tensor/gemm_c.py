"""Plain-C code of ``Gemm`` and ``Ger`` (see blas_ops.py).

``Gemm(z, a, x, y, b)``: the product ``dot(x, y)`` is computed into the output by Dot's own
generated code (``dot_c.c_code`` for the ``Dot22`` of ``x`` and ``y``: BLAS gemm for
float32/float64, any input strides, operands BLAS cannot read in place copied, the blocked
kernel without BLAS), then one loop over the C-contiguous result takes
``out = b * z + a * out``, reading ``z`` through its strides (negative and zero included).
``z`` and the product broadcast as in the unfused ``z + a * dot(x, y)``: a length-1 axis of ``z``
is read with stride 0; when the product is the one repeated (a single row or column beside a
larger ``z``), it is moved to a temporary and the output is allocated at the result's shape.

``Ger(A, alpha, x, y)``: one loop, ``out[i, j] = A[i, j] + alpha * (x[i] * y[j])``, with the
same broadcasting of ``A`` and the outer product.

Both compute in the output's dtype, which every input shares (the ops check it).
"""
from __future__ import annotations

from ffigraph.tensor import dot_c
from ffigraph.tensor.blas_ops import Dot22, Gemm
from ffigraph.tensor.ctype import c_element_type


def _is_gemm(op):
    return isinstance(op, Gemm)


def _product_node(node):
    """The ``Dot22`` node of Gemm's ``x`` and ``y``, whose C code computes the product."""
    return Dot22().make_node(node.inputs[2], node.inputs[3])


def c_libraries(op):
    return dot_c.c_libraries(op) if _is_gemm(op) else []


def c_lib_dirs(op):
    return dot_c.c_lib_dirs(op) if _is_gemm(op) else []


def c_support_code(op):
    return dot_c.c_support_code(op) if _is_gemm(op) else ""


def c_compile_args(op):
    return dot_c.c_compile_args(op) if _is_gemm(op) else []


def c_code_cache_version(op):
    return (1,) + (dot_c.c_code_cache_version(op) if _is_gemm(op) else ())


def c_support_code_apply(op, node, name):
    if not _is_gemm(op):
        return SUPPORT
    return dot_c.c_support_code_apply(op, _product_node(node), name) + "\n" + SUPPORT


SUPPORT = r"""
#ifndef FFG_GEMM_COMMON
#define FFG_GEMM_COMMON
/* The shape of z (an M x N matrix to accumulate into) broadcast with the product's (pm x pn), as
   the unfused z + a * product does (a length 1 of either is repeated), into out_shape; 0, or -1
   with err set (the message names who, both operands and both shapes). */
static int ffg_gemm_broadcast(const char *who, const char *zname, const char *pname, const int64_t *zs,
                              int64_t pm, int64_t pn, int64_t *out_shape, FfgError *err)
{
    const int64_t ps[2] = {pm, pn};
    int k;
    for (k = 0; k < 2; ++k) {
        if (zs[k] == ps[k] || zs[k] == 1)
            out_shape[k] = ps[k];
        else if (ps[k] == 1)
            out_shape[k] = zs[k];
        else {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: %s has shape (%lld, %lld) but %s has shape (%lld, %lld): "
                          "they cannot be broadcast together (dim %d: %lld vs %lld)", who, zname,
                          (long long)zs[0], (long long)zs[1], pname, (long long)pm, (long long)pn, k,
                          (long long)zs[k], (long long)ps[k]);
            return -1;
        }
    }
    return 0;
}
#endif
"""

GEMM_COMBINE = r"""
{
    /* %(out)s = b * %(z)s + a * product. The product (pm x pn, C-contiguous) is in %(out)s; when
       the result is larger (the product broadcast along a length-1 axis, a row or a column), it
       is moved to a temporary and %(out)s is allocated again at the result's shape. */
    const int64_t pm = %(out)s.shape[0], pn = %(out)s.shape[1];
    const %(T)s alpha = *(const %(T)s *)%(a)s.data, beta = *(const %(T)s *)%(b)s.data;
    int64_t shape[2], zrs, zcs, prs, pcs, i, j;
    const %(T)s *zp = (const %(T)s *)%(z)s.data, *pp;
    %(T)s *op;
    if (ffg_gemm_broadcast("Gemm", "z", "dot(x, y)", %(z)s.shape, pm, pn, shape, %(err)s))
        %(fail)s
    if (shape[0] != pm || shape[1] != pn) {
        if ((%(name)s_ptmp = ffg_dot_temp(pm * pn, sizeof(%(T)s), %(al)s, %(err)s)) == NULL)
            %(fail)s
        if (pm * pn > 0)
            memcpy(%(name)s_ptmp, %(out)s.data, (size_t)(pm * pn) * sizeof(%(T)s));
        ffg_release(%(al)s, %(out)s.owned);
        %(out)s.owned = NULL;
        if (ffg_alloc_array(&%(out)s, 2, shape, sizeof(%(T)s), %(al)s, %(err)s))
            %(fail)s
        pp = (const %(T)s *)%(name)s_ptmp;
    } else {
        pp = (const %(T)s *)%(out)s.data;   /* read and written in place, element by element */
    }
    zrs = %(z)s.shape[0] == 1 ? 0 : %(z)s.strides[0];
    zcs = %(z)s.shape[1] == 1 ? 0 : %(z)s.strides[1];
    prs = pm == 1 ? 0 : pn;
    pcs = pn == 1 ? 0 : 1;
    op = (%(T)s *)%(out)s.data;
    for (i = 0; i < shape[0]; ++i) {
        const %(T)s *zrow = zp + i * zrs, *prow = pp + i * prs;
        %(T)s *orow = op + i * shape[1];
        for (j = 0; j < shape[1]; ++j)
            orow[j] = beta * zrow[j * zcs] + alpha * prow[j * pcs];
    }
}"""

GER = r"""
/* %(out)s = %(A)s + alpha * outer(%(x)s, %(y)s), A and the outer product broadcast together */
{
    const int64_t xn = %(x)s.shape[0], yn = %(y)s.shape[0];
    const %(T)s alpha = *(const %(T)s *)%(alpha)s.data;
    const %(T)s *ap = (const %(T)s *)%(A)s.data, *xp = (const %(T)s *)%(x)s.data, *yp = (const %(T)s *)%(y)s.data;
    int64_t shape[2], ars, acs, xs, ys, i, j;
    %(T)s *op;
    if (ffg_gemm_broadcast("Ger", "A", "outer(x, y)", %(A)s.shape, xn, yn, shape, %(err)s))
        %(fail)s
    if (ffg_alloc_array(&%(out)s, 2, shape, sizeof(%(T)s), %(al)s, %(err)s))
        %(fail)s
    ars = %(A)s.shape[0] == 1 ? 0 : %(A)s.strides[0];
    acs = %(A)s.shape[1] == 1 ? 0 : %(A)s.strides[1];
    xs = xn == 1 ? 0 : %(x)s.strides[0];
    ys = yn == 1 ? 0 : %(y)s.strides[0];
    op = (%(T)s *)%(out)s.data;
    for (i = 0; i < shape[0]; ++i) {
        const %(T)s *arow = ap + i * ars;
        const %(T)s xi = xp[i * xs];
        %(T)s *orow = op + i * shape[1];
        for (j = 0; j < shape[1]; ++j)
            orow[j] = arow[j * acs] + alpha * (xi * yp[j * ys]);
    }
}"""


def c_code(op, node, name, inputs, outputs, sub):
    T = c_element_type(node.outputs[0].type.dtype)
    d = dict(name=name, out=outputs[0], T=T, err=sub["err"], fail=sub["fail"], al=sub["allocator"])
    if not _is_gemm(op):
        A, alpha, x, y = inputs
        return GER % dict(d, A=A, alpha=alpha, x=x, y=y)
    z, a, x, y, b = inputs
    product = dot_c.c_code(op, _product_node(node), name, [x, y], outputs, sub)
    return ("void *%s_ptmp = NULL;   /* the product, when the result broadcasts it */\n" % name
            + product + "\n" + GEMM_COMBINE % dict(d, z=z, a=a, b=b))


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    if not _is_gemm(op):
        return ""
    z, a, x, y, b = inputs
    return (dot_c.c_code_cleanup(op, _product_node(node), name, [x, y], outputs, sub)
            + "\nffg_release(%s, %s_ptmp);" % (sub["allocator"], name))

"""Plain-C code of the pooling ops (``ffigraph.tensor.signal.pool``): ``Pool``, ``MaxPoolGrad``,
``AveragePoolGrad`` and ``DownsampleFactorMaxGradGrad``, float32 and float64.

Every node runs the same three steps, helpers of the support code (one copy per library):

* ``ffg_pool_setup`` reads the window, stride and padding vectors (int64, any stride), checks them
  as ``perform`` does (a window or stride below 1, a negative padding: FFG_ERR_VALUE; a padding
  with ignore_border=False or not smaller than the window: FFG_ERR_VALUE too, as the ABI has no
  NotImplementedError; a constant one was refused when the node was made), and computes the
  geometry: the leading axes (collapsed into ``nplanes`` planes, each pooled on its own) and, per
  pooled axis, the input length, the number of windows, window, stride and padding. 2-d pooling
  is 3-d pooling with a first pooled axis of length 1 (window 1, stride 1), so one kernel serves
  both;
* the array shapes that must agree with x's (maxout and gz of the pooled shape, the second
  derivative's gz of x's shape) are checked (``ffg_pool_check_shape``, FFG_ERR_VALUE naming the
  array and both shapes), the output is allocated C-contiguous (and zeroed for the gradients,
  which add into it) and every array's strides (in elements, negative ones included) are bound;
* ``ffg_pool_exec_<kernel>_<T>`` runs the planes: on this thread, or cut by ``ffg_split_loop``
  into ranges of whole planes and run by the library's thread pool (threads_c) when the work is
  large. A plane is written by one chunk only, so the results are the same bits for any thread
  count.

The kernels (``fwd_max``, ``fwd_sum`` for sum and the averages, ``max_grad``, ``avg_grad``,
``max_gradgrad``) are the node's support code, only the one it runs and for its element type
(guarded, so nodes of the same kernel share one copy): a library compiles only what it uses.
Each copies the geometry and strides into locals first (the library is built with
-fno-strict-aliasing, so every store through the output would otherwise reload them).

Each kernel is one pass over its windows, without branches on the data (a comparison that goes
either way at random costs more than the rest of a 2x2 window). For a window: ``[a, b)`` its part inside the image
along each pooled axis, ``t`` its length clipped to the padded extent. Max tracks the running
maximum (a NaN wins); sum and the averages accumulate in double and divide by ``|A|`` or ``|T|``;
MaxPoolGrad adds ``gz[w]`` to each element equal to ``maxout[w]``; AveragePoolGrad adds
``gz[w] / divisor`` over ``A``; DownsampleFactorMaxGradGrad sums (in double) the second array
over the positions equal to ``maxout[w]``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined, c_format_text as _c_string
from ffigraph.tensor import threads_c

VERSION = (1,)

_MODES = {"max": "FFG_POOL_MAX", "sum": "FFG_POOL_SUM", "average_inc_pad": "FFG_POOL_AVG_INC",
          "average_exc_pad": "FFG_POOL_AVG_EXC"}
_KINDS = {"Pool": "FFG_POOL_FWD", "MaxPoolGrad": "FFG_POOL_MAX_GRAD", "AveragePoolGrad": "FFG_POOL_AVG_GRAD",
          "DownsampleFactorMaxGradGrad": "FFG_POOL_MAX_GRADGRAD"}
_TYPES = {"float32": ("float", "f32"), "float64": ("double", "f64")}

_COMMON_C = r"""
#ifndef FFG_POOL_DEFINED
#define FFG_POOL_DEFINED
/* ---- pooling (ffigraph.tensor.signal.pool): the geometry of a pooling node and its checks ---- */
enum { FFG_POOL_MAX, FFG_POOL_SUM, FFG_POOL_AVG_INC, FFG_POOL_AVG_EXC };
enum { FFG_POOL_FWD, FFG_POOL_MAX_GRAD, FFG_POOL_AVG_GRAD, FFG_POOL_MAX_GRADGRAD };
/* The arrays of a job: X the input, Y a second array of X's shape (what flows into MaxPoolGrad's
   output, for its derivative), M and G arrays of the pooled shape (maxout, gz), Z the output. */
enum { FFG_POOL_X, FFG_POOL_Y, FFG_POOL_M, FFG_POOL_G, FFG_POOL_Z, FFG_POOL_NARRAYS };

typedef struct ffg_pool_job {
    int kind, mode, nd, xnd, nlead;
    int64_t lead[FFG_MAX_NDIM];       /* the leading (not pooled) axes, collapsed into nplanes planes */
    int64_t nplanes, work;            /* work: elements visited per plane (for the cut over threads) */
    int64_t in[3], out[3], ws[3], st[3], pad[3];   /* the pooled axes; 2-d pooling: axis 0 has length 1 */
    const char *data[FFG_POOL_NARRAYS];
    int64_t lstr[FFG_POOL_NARRAYS][FFG_MAX_NDIM];  /* strides (elements) along the leading axes */
    int64_t pstr[FFG_POOL_NARRAYS][3];             /* and along the pooled ones */
} ffg_pool_job;

/* The number of windows along one axis of length n (Theano's formula; none for an empty axis). */
static int64_t ffg_pool_windows(int64_t n, int64_t w, int64_t s, int64_t p, int ignore_border)
{
    const int64_t v = n + 2 * p;
    if (v == 0)
        return 0;
    if (ignore_border)
        return v < w ? 0 : (v - w) / s + 1;
    if (s >= w)
        return (v - 1) / s + 1;
    return (v - 1 < w ? 0 : (v - 1 - w) / s + 1) + 1;   /* the last, partial, window */
}

/* Read ws, stride and pad (int64 vectors of nd values), check them and fill J's geometry from
   x's shape. 0, or -1 with *err set. */
static int ffg_pool_setup(ffg_pool_job *J, const char *op, int kind, int mode, int nd, int ignore_border,
                          int xnd, const int64_t *xshape, const ffg_array *ws, const ffg_array *st,
                          const ffg_array *pad, FfgError *err)
{
    const ffg_array *vec[3];
    static const char *const names[3] = {"ws", "stride", "pad"};
    int64_t val[3][3];
    int v, k, d;
    vec[0] = ws;
    vec[1] = st;
    vec[2] = pad;
    memset(J, 0, sizeof *J);
    J->kind = kind;
    J->mode = mode;
    J->nd = nd;
    J->xnd = xnd;
    J->nlead = xnd - nd;
    for (v = 0; v < 3; ++v) {
        if (vec[v]->shape[0] != nd) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: %s must have %d values, got %lld", op, names[v], nd,
                          (long long)vec[v]->shape[0]);
            return -1;
        }
        for (k = 0; k < nd; ++k)
            val[v][k] = ((const int64_t *)vec[v]->data)[k * vec[v]->strides[0]];
    }
    for (k = 0; k < nd; ++k) {
        const int64_t n = xshape[J->nlead + k], w = val[0][k], s = val[1][k], p = val[2][k];
        if (w < 1) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the pooling window ws must be positive, got ws[%d] = %lld",
                          op, k, (long long)w);
            return -1;
        }
        if (s < 1) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the stride must be positive, got stride[%d] = %lld", op, k,
                          (long long)s);
            return -1;
        }
        if (p < 0) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the padding pad must be non-negative, got pad[%d] = %lld",
                          op, k, (long long)p);
            return -1;
        }
        if (p != 0 && !ignore_border) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: padding works only with ignore_border=True", op);
            return -1;
        }
        if (p >= w) {
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: padding must be smaller than the window (pad[%d] = %lld, "
                          "ws[%d] = %lld)", op, k, (long long)p, k, (long long)w);
            return -1;
        }
        if (p > (INT64_MAX - n) / 4) {   /* n + 2 * pad and the window ends must not overflow */
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the padding pad[%d] = %lld is too large", op, k,
                          (long long)p);
            return -1;
        }
    }
    for (d = 0; d < 3; ++d) {   /* pooled axis d is the input's axis nlead + d - (3 - nd) */
        k = d - (3 - nd);
        if (k < 0) {
            J->in[d] = J->out[d] = J->ws[d] = J->st[d] = 1;
            J->pad[d] = 0;
            continue;
        }
        J->in[d] = xshape[J->nlead + k];
        J->ws[d] = val[0][k];
        J->st[d] = val[1][k];
        J->pad[d] = val[2][k];
        J->out[d] = ffg_pool_windows(J->in[d], J->ws[d], J->st[d], J->pad[d], ignore_border);
    }
    /* with padding, an empty axis still has windows (of padding only), and the maximum of an empty
       window does not exist (numpy's max of an empty array raises, and so does perform) */
    if (mode == FFG_POOL_MAX && J->out[0] * J->out[1] * J->out[2] > 0
        && (J->in[0] == 0 || J->in[1] == 0 || J->in[2] == 0)) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the windows over an empty axis hold only padding, and they "
                      "have no maximum", op);
        return -1;
    }
    for (d = 0; d < J->nlead; ++d)
        J->lead[d] = xshape[d];
    J->nplanes = ffg_size(J->nlead, J->lead);
    {   /* an estimate of the elements a plane visits: the larger of the image and the windows' cover */
        const int64_t img = J->in[0] * J->in[1] * J->in[2];
        const double cover = (double)J->out[0] * J->out[1] * J->out[2]
                             * (double)(J->ws[0] < J->in[0] + 1 ? J->ws[0] : J->in[0] + 1)
                             * (double)(J->ws[1] < J->in[1] + 1 ? J->ws[1] : J->in[1] + 1)
                             * (double)(J->ws[2] < J->in[2] + 1 ? J->ws[2] : J->in[2] + 1);
        J->work = cover > (double)img ? (cover < 1e15 ? (int64_t)cover : (int64_t)1e15) : img;
        if (J->work < 1)
            J->work = 1;
    }
    return 0;
}

/* The full shape of x (pooled = 0) or of the pooled result (pooled = 1), in shape[0..xnd). */
static void ffg_pool_shape(const ffg_pool_job *J, int pooled, int64_t *shape)
{
    int d;
    for (d = 0; d < J->nlead; ++d)
        shape[d] = J->lead[d];
    for (d = 0; d < J->nd; ++d)
        shape[J->nlead + d] = pooled ? J->out[3 - J->nd + d] : J->in[3 - J->nd + d];
}

/* FFG_ERR_VALUE unless array `a` (called `name`) has x's shape (pooled = 0) or the pooled one. */
static int ffg_pool_check_shape(const ffg_pool_job *J, const char *op, const char *name, const ffg_array *a,
                                int pooled, FfgError *err)
{
    int64_t want[FFG_MAX_NDIM];
    int d;
    ffg_pool_shape(J, pooled, want);
    for (d = 0; d < J->xnd; ++d)
        if (a->shape[d] != want[d]) {
            char got_s[160], want_s[160];
            ffg_format_shape(got_s, sizeof got_s, J->xnd, a->shape);
            ffg_format_shape(want_s, sizeof want_s, J->xnd, want);
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: %s has shape %s, expected %s", op, name, got_s, want_s);
            return -1;
        }
    return 0;
}

/* Array `a` in slot `slot` of the job: its data and its strides, leading and pooled. */
static void ffg_pool_bind(ffg_pool_job *J, int slot, const ffg_array *a)
{
    int d;
    J->data[slot] = a->data;
    for (d = 0; d < J->nlead; ++d)
        J->lstr[slot][d] = a->strides[d];
    for (d = 0; d < 3; ++d)
        J->pstr[slot][d] = d < 3 - J->nd ? 0 : a->strides[J->nlead + d - (3 - J->nd)];
}

/* The element offset of plane q in each array (the leading index unravelled in C order). */
static void ffg_pool_plane_offsets(const ffg_pool_job *J, int64_t q, int64_t *off)
{
    int d, k;
    for (k = 0; k < FFG_POOL_NARRAYS; ++k)
        off[k] = 0;
    for (d = J->nlead - 1; d >= 0; --d) {
        const int64_t i = q % J->lead[d];
        q /= J->lead[d];
        for (k = 0; k < FFG_POOL_NARRAYS; ++k)
            off[k] += i * J->lstr[k][d];
    }
}
#endif /* FFG_POOL_DEFINED */
"""

# The loops over the windows of a plane, for the kernels below: per pooled axis d, o<d> the window,
# [a<d>, b<d>) its part inside the image and t<d> its length within the padded extent.
_PROLOGUE = "".join(
    ["    /* the geometry and the strides in locals: with -fno-strict-aliasing a store through z would\n"
     "       otherwise make the compiler reload every field of *J */\n"]
    + ["    const int64_t out%(d)d = J->out[%(d)d], in%(d)d = J->in[%(d)d], ws%(d)d = J->ws[%(d)d], "
       "st%(d)d = J->st[%(d)d], pad%(d)d = J->pad[%(d)d];\n" % dict(d=d) for d in range(3)]
    + ["    const int64_t %s;\n" % ", ".join("%sS%d = J->pstr[FFG_POOL_%s][%d]" % (a, d, a, d) for d in range(3))
       for a in "XYMGZ"]
    + ["    const int mode = J->mode;\n",
       "    (void)mode; (void)x; (void)y; (void)m; (void)g;   /* each kernel reads some of these */\n"]
    + ["    (void)%sS0; (void)%sS1; (void)%sS2;\n" % (a, a, a) for a in "XYMGZ"])

_WINDOWS = r"""    int64_t o0, o1, o2, i0, i1, i2;
    for (o0 = 0; o0 < out0; ++o0) {
        const int64_t s0 = o0 * st0 - pad0, e0 = s0 + ws0;
        const int64_t a0 = s0 > 0 ? s0 : 0, b0 = e0 < in0 ? e0 : in0;
        const int64_t t0 = (e0 < in0 + pad0 ? e0 : in0 + pad0) - s0;
        for (o1 = 0; o1 < out1; ++o1) {
            const int64_t s1 = o1 * st1 - pad1, e1 = s1 + ws1;
            const int64_t a1 = s1 > 0 ? s1 : 0, b1 = e1 < in1 ? e1 : in1;
            const int64_t t1 = (e1 < in1 + pad1 ? e1 : in1 + pad1) - s1;
            for (o2 = 0; o2 < out2; ++o2) {
                const int64_t s2 = o2 * st2 - pad2, e2 = s2 + ws2;
                const int64_t a2 = s2 > 0 ? s2 : 0, b2 = e2 < in2 ? e2 : in2;
                const int64_t t2 = (e2 < in2 + pad2 ? e2 : in2 + pad2) - s2;
                const int64_t wm = o0 * MS0 + o1 * MS1 + o2 * MS2;   /* the window in maxout (M) */
                const int64_t wg = o0 * GS0 + o1 * GS1 + o2 * GS2;   /* in gz (G) */
                const int64_t wz = o0 * ZS0 + o1 * ZS1 + o2 * ZS2;   /* in the output (Z) */
                (void)t0; (void)t1; (void)t2; (void)wm; (void)wg; (void)wz;
%(body)s
            }
        }
    }
"""

# for (i0, i1, i2) over A, with xo: the element's offset in X, yo in Y, zo in Z
_OVER_A = r"""for (i0 = a0; i0 < b0; ++i0)
    for (i1 = a1; i1 < b1; ++i1)
        for (i2 = a2; i2 < b2; ++i2) {
            const int64_t xo = i0 * XS0 + i1 * XS1 + i2 * XS2;
            %s
        }"""

_KERNEL_BODIES = {
    "fwd_max": """/* Pool, max: the running maximum over A, without branches on the data (a compare
   that goes either way at random costs more than the rest of the window); a NaN wins */
%(T)s best = x[a0 * XS0 + a1 * XS1 + a2 * XS2];
int nan = 0;
""" + _OVER_A % """const %(T)s v = x[xo];
            best = v > best ? v : best;
            nan |= v != v;""" + """
z[wz] = nan ? (%(T)s)NAN : best;""",
    "fwd_sum": """/* Pool, sum and averages: the sum over A in double, divided by 1, |T| or |A| */
double acc = 0.0;
""" + _OVER_A % "acc += (double)x[xo];" + """
if (mode == FFG_POOL_AVG_INC)
    acc /= (double)(t0 * t1 * t2);
else if (mode == FFG_POOL_AVG_EXC)
    acc /= (double)((b0 - a0) * (b1 - a1) * (b2 - a2));
z[wz] = (%(T)s)acc;""",
    "max_grad": """/* MaxPoolGrad: gz[w] to every element of A equal to maxout[w] */
const %(T)s mx = m[wm], gw = g[wg];
""" + _OVER_A % """z[i0 * ZS0 + i1 * ZS1 + i2 * ZS2] += x[xo] == mx ? gw : (%(T)s)0;""",
    "avg_grad": """/* AveragePoolGrad: gz[w] (divided by |T| or |A| for the averages) over A */
double gd = (double)g[wg];
if (mode == FFG_POOL_AVG_INC)
    gd /= (double)(t0 * t1 * t2);
else if (mode == FFG_POOL_AVG_EXC)
    gd /= (double)((b0 - a0) * (b1 - a1) * (b2 - a2));
{
    const %(T)s gw = (%(T)s)gd;
    """ + (_OVER_A % "z[i0 * ZS0 + i1 * ZS1 + i2 * ZS2] += gw; (void)xo;").replace("\n", "\n    ") + """
}""",
    "max_gradgrad": """/* DownsampleFactorMaxGradGrad: the sum of Y over the elements of A equal to maxout[w] */
const %(T)s mx = m[wm];
double acc = 0.0;
""" + _OVER_A % """acc += x[xo] == mx ? (double)y[i0 * YS0 + i1 * YS1 + i2 * YS2] : 0.0;""" + """
z[wz] = (%(T)s)acc;""",
}



def _indent(text, n):
    pad = " " * n
    return "\n".join(pad + ln if ln else ln for ln in text.split("\n"))


def _kernel_c(kernel, ctype, suffix):
    """One kernel for one element type (``ffg_pool_<kernel>_<suffix>``): the function over one
    plane, the loop over a range of planes and the run (threaded when the pool is in the library).
    Guarded, so that every node of that kernel and type may give the same text."""
    name = "%s_%s" % (kernel, suffix)
    parts = ["\n#ifndef FFG_POOL_%s_DEFINED\n#define FFG_POOL_%s_DEFINED\n" % (name.upper(), name.upper()),
             "/* ---- pooling kernel %s for %s: one pass over the windows of one plane ---- */\n" % (kernel, ctype),
             "static void ffg_pool_plane_%s(const ffg_pool_job *J, const %s *x, const %s *y, const %s *m, "
             "const %s *g, %s *z)\n{\n" % (name, ctype, ctype, ctype, ctype, ctype),
             _PROLOGUE,
             _WINDOWS % dict(body=_indent(_KERNEL_BODIES[kernel] % dict(T=ctype), 16)),
             "}\n"]
    parts.append(r"""
/* Planes [lo, hi) of job J. */
static void ffg_pool_planes_%(s)s(const ffg_pool_job *J, int64_t lo, int64_t hi)
{
    int64_t q, off[FFG_POOL_NARRAYS];
    const %(T)s *p[FFG_POOL_NARRAYS];
    int k;
    for (q = lo; q < hi; ++q) {
        ffg_pool_plane_offsets(J, q, off);
        for (k = 0; k < FFG_POOL_NARRAYS; ++k)   /* (an array the op does not use stays NULL) */
            p[k] = J->data[k] ? (const %(T)s *)J->data[k] + off[k] : NULL;
        ffg_pool_plane_%(s)s(J, p[FFG_POOL_X], p[FFG_POOL_Y], p[FFG_POOL_M], p[FFG_POOL_G], (%(T)s *)p[FFG_POOL_Z]);
    }
}
""" % dict(s=name, T=ctype))
    if threads_c.enabled():
        parts.append(r"""
/* The planes cut into ranges run by the library's pool (threads_c): each plane is one chunk's. */
static int ffg_pool_chunk_%(s)s(void *ctx, int chunk, FfgError *err)
{
    const ffg_pool_par *P = (const ffg_pool_par *)ctx;
    int64_t lo, hi;
    (void)err;
    ffg_split_range(&P->split, chunk, P->J->nplanes, &lo, &hi);
    ffg_pool_planes_%(s)s(P->J, lo, hi);
    return 0;
}

static int ffg_pool_exec_%(s)s(const ffg_pool_job *J, FfgError *err)
{
    ffg_pool_par P;
    if (ffg_pool_cut(&P, J) <= 1) {
        ffg_pool_planes_%(s)s(J, 0, J->nplanes);
        return 0;
    }
    return ffg_parallel(ffg_pool_chunk_%(s)s, &P, P.split.n, err);
}
""" % dict(s=name))
    else:
        parts.append(r"""
static int ffg_pool_exec_%(s)s(const ffg_pool_job *J, FfgError *err)
{
    (void)err;
    ffg_pool_planes_%(s)s(J, 0, J->nplanes);
    return 0;
}
""" % dict(s=name))
    parts.append("#endif\n")
    return "".join(parts)


_THREADED_C = r"""
#ifndef FFG_POOL_PAR_DEFINED
#define FFG_POOL_PAR_DEFINED
/* A pooling job cut over the library's threads: ranges of whole planes, from the number of planes
   and the work per plane only (so the cut, and every result, does not depend on the threads). */
typedef struct ffg_pool_par {
    const ffg_pool_job *J;
    ffg_split split;
} ffg_pool_par;

static int ffg_pool_cut(ffg_pool_par *P, const ffg_pool_job *J)
{
    int64_t shape[2];
    shape[0] = J->nplanes;
    shape[1] = J->work;
    P->J = J;
    ffg_split_loop(&P->split, 2, shape, 1, 0x1ULL, 0x0ULL, 0);
    return P->split.n;
}
#endif
"""


def _kernel(op):
    kind = type(op).__name__
    if kind == "Pool":
        return "fwd_max" if op.mode == "max" else "fwd_sum"
    return {"MaxPoolGrad": "max_grad", "AveragePoolGrad": "avg_grad",
            "DownsampleFactorMaxGradGrad": "max_gradgrad"}[kind]


def _element(op, dtype):
    name = np.dtype(dtype).name
    if name not in _TYPES:
        raise MethodNotDefined("%s: C code for float32 and float64 only, not %s" % (op, name))
    return _TYPES[name]



# ------------------------------------------------------------------ the DelegatedCOp interface


def c_support_code(op):
    # the pool first (its types are used by the threaded runs), then the helpers
    return threads_c.pool_support_code() + _COMMON_C + (_THREADED_C if threads_c.enabled() else "")


def c_support_code_apply(op, node, name):
    # only the kernel this node runs, for its element type (the same text for every such node)
    ctype, suffix = _element(op, node.inputs[0].type.dtype)
    return _kernel_c(_kernel(op), ctype, suffix)


def c_code(op, node, name, inputs, outputs, sub):
    kind = type(op).__name__
    xtype = node.inputs[0].type
    ctype, suffix = _element(op, xtype.dtype)
    for v in node.inputs[1:-3]:
        _element(op, v.type.dtype)
    xnd = xtype.ndim
    err, fail = sub["err"], sub["fail"]
    (z,) = outputs
    label = _c_string(op)
    arrays = inputs[:-3]
    ws, st, pad = inputs[-3:]
    x = arrays[0]
    lines = ["/* %s: %s */" % (op, {"Pool": "pooling over the last %d axes" % op.ndim,
                                     "MaxPoolGrad": "the gradient of max pooling",
                                     "AveragePoolGrad": "the gradient of sum / average pooling",
                                     "DownsampleFactorMaxGradGrad": "the second derivative of max pooling"}[kind]),
             "{",
             "    ffg_pool_job job_;",
             "    int64_t zshape_[%d];" % max(xnd, 1),
             '    if (ffg_pool_setup(&job_, "%s", %s, %s, %d, %d, %d, %s.shape, &%s, &%s, &%s, %s))'
             % (label, _KINDS[kind], _MODES[op.mode], op.ndim, int(op.ignore_border), xnd, x, ws, st, pad, err),
             "        " + fail]
    # (slot, array, name, pooled shape?) of the inputs besides x
    if kind == "MaxPoolGrad":
        others = [("FFG_POOL_M", arrays[1], "maxout", 1), ("FFG_POOL_G", arrays[2], "gz", 1)]
    elif kind == "AveragePoolGrad":
        others = [("FFG_POOL_G", arrays[1], "gz", 1)]
    elif kind == "DownsampleFactorMaxGradGrad":
        others = [("FFG_POOL_M", arrays[1], "maxout", 1), ("FFG_POOL_Y", arrays[2], "gz", 0)]
    else:
        others = []
    for slot, arr, aname, pooled in others:
        lines += ['    if (ffg_pool_check_shape(&job_, "%s", "%s", &%s, %d, %s))' % (label, aname, arr, pooled, err),
                  "        " + fail]
    lines.append("    ffg_pool_bind(&job_, FFG_POOL_X, &%s);" % x)
    for slot, arr, aname, pooled in others:
        lines.append("    ffg_pool_bind(&job_, %s, &%s);" % (slot, arr))
    pooled_out = kind in ("Pool", "DownsampleFactorMaxGradGrad")
    lines += ["    /* the output, C-contiguous, of %s */" % ("the pooled shape" if pooled_out else "x's shape"),
              "    ffg_pool_shape(&job_, %d, zshape_);" % int(pooled_out),
              "    if (ffg_alloc_array(&%s, %d, zshape_, sizeof(%s), %s, %s))" % (z, xnd, ctype, sub["allocator"], err),
              "        " + fail]
    if not pooled_out:
        lines.append("    /* the gradients add into it */")
        lines.append("    memset(%s.data, 0, (size_t)ffg_size(%d, zshape_) * sizeof(%s));" % (z, xnd, ctype))
    lines += ["    ffg_pool_bind(&job_, FFG_POOL_Z, &%s);" % z,
              "    if (ffg_pool_exec_%s_%s(&job_, %s))" % (_kernel(op), suffix, err),
              "        " + fail,
              "}"]
    return "\n".join(lines)


def c_headers(op):
    return ["<math.h>", "<string.h>", "<stdint.h>"]


def c_compile_args(op):
    return threads_c.compile_args()


def c_code_cache_version(op):
    return VERSION + (int(threads_c.enabled()),)

"""Plain-C code of the abstract convolution ops (``abstract_conv.py``): forward, grad_weights and
grad_inputs, in 2d and 3d, for float32 and float64.

The semantics are Theano's ``AbstractConv*`` (see the contract in ``abstract_conv``): per spatial
axis a dilated kernel ``dk = (K - 1) * d + 1``, pads ``(pl, pr)`` from the border mode, and
``P = (S + pl + pr - dk) // s + 1`` outputs; the kernel is flipped along every spatial axis when
``filter_flip`` is set (a true convolution), else it is a correlation.

How the C computes it (one code for 2d and 3d: a 2d op is a 3d one whose first spatial axis has
length 1, so every spatial loop nest is the same three loops):

* The kernel is packed once per call into a C-contiguous ``O x (C/G * prod K)`` matrix ``wm``,
  flipped on the way when ``filter_flip`` (so the rest of the code only ever correlates).
* Per image and group, **im2col** copies the padded windows of the image into a contiguous
  ``(C/G * prod K) x prod P`` matrix ``col`` (row ``(c, k)``, column ``p`` holds
  ``xpad[c, p * s + k * d]``; zeros where the window reads padding). It reads the image through
  its own strides, negative ones included, and only inside the image, so it also absorbs any
  layout. Then one gemm per (image, group):

  - forward:      ``out[b, group] (O/G x prod P) = wm[group] . col``
  - grad_weights: ``dw[group] (O/G x C/G*prod K) += top[b, group] . col^T``, summed over the batch,
    flipped back when ``filter_flip`` when written out;
  - grad_inputs:  ``col = wm[group]^T . top[b, group]``, then **col2im** adds every entry of
    ``col`` into the (zeroed) input gradient at the position it was read from; positions that
    fall in the padding are dropped, which is the crop.

* ``conv_fused.AbstractConvEpilogue`` (a forward op with a per-channel output epilogue, made by the
  rewrite ``ffigraph.rewriting.conv``) is the forward code plus one pass over each (image, group)
  ``Og x prod P`` block right after its gemm wrote it, while it is in cache:
  ``act(out + bias[o])`` or ``act(out * scale[o] + shift[o])``, ``act`` the identity or relu
  (``v <= 0 ? 0 : v``). The vectors are read through their strides; their length is checked against
  O. With nothing to multiply (no input channels) the epilogue still runs over the zero sums.
* A 1x1 kernel with unit stride and no padding (``P == S``) needs no im2col: the image (or the
  input gradient) is itself the ``C/G x prod S`` matrix when its spatial axes are C-contiguous.
  That branch is generated only when the static kernel shape does not rule it out.
* ``top`` is read in place by the gemm when its spatial axes are C-contiguous, else packed per
  image.
* The gemm is the BLAS ``sgemm``/``dgemm`` of the ILP64 OpenBLAS ``dot_c`` links (its prototypes,
  ``c_libraries`` and ``c_lib_dirs``), or, when BLAS is off (``dot_c.blas_enabled()`` false),
  ``dot_c``'s cache-blocked C kernel.

Threads (``threads_c``, when ``config.threads > 1``): the batch is cut into contiguous ranges of
images, one chunk each, run by the library's pool; each chunk has its own workspace. As in
``dot_c``, this happens only where the BLAS would not thread the gemms itself: when it runs one
thread (``openblas_get_num_threads() == 1``), when each (image, group) gemm is below OpenBLAS's own
threading threshold (m * n * k < 4 * 65536: such a call runs on its calling thread, so several run
at once on the pool's threads without two pools fighting over the cores), or without BLAS. A
larger gemm on a multi-threaded BLAS is threaded by the BLAS, image after image. forward and
grad_inputs give the same bits whatever the thread count (every output element is computed by one
chunk, in the same order). grad_weights sums over the batch: each chunk sums its images into its own accumulator and the accumulators are
added in chunk order, so the result is deterministic for a given ``config.threads`` (and may
differ from one thread's in the last bits).

Run-time checks (FFG_ERR_VALUE, messages naming the op and the numbers): channel counts against
the groups and the filters, a filter larger than the padded input, the ``shape`` input of the
gradient ops (``convdim`` entries >= 1), and topgrad's batch, channels and spatial size. Every
size is an int64 and every product that sizes a workspace is checked for overflow. Empty batches,
zero channels and empty outputs give empty or zero results.

Temporaries (the packed kernel, the workspaces, the grad_weights accumulators) are released by
``c_code_cleanup``, on success and on failure alike.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor import blas, dot_c, threads_c
from ffigraph.tensor.ctype import c_element_type

VERSION = (2,)

# A call is split over the pool from this many multiply-adds times config.threads_min_size (the
# product's threshold in dot_c).
PAR_MIN_FACTOR = dot_c.GEMM_MIN_FACTOR

#: OpenBLAS threads a gemm from m * n * k >= 4 * 65536 (interface/gemm.c: SMP_THRESHOLD_MIN *
#: GEMM_MULTITHREAD_THRESHOLD); a smaller one runs on the calling thread, so several may run at once
#: on the pool's threads without oversubscribing the cores.
OPENBLAS_THREADING_THRESHOLD = 4 * 65536

_KIND_NAMES = {"forward": "AbstractConv", "grad_weights": "AbstractConv_gradWeights",
               "grad_inputs": "AbstractConv_gradInputs"}


# ---------------------------------------------------------------- helpers


def _message(text):
    """``text`` inside a C string literal used as a printf format."""
    return (str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("%", "%%")
            .replace("?", "\\?"))


def _dtype(op, node):
    dtype = node.outputs[0].type.dtype
    if np.dtype(dtype).name not in ("float32", "float64"):
        raise MethodNotDefined("%s: C code for float32 and float64 only, not %s" % (op, dtype))
    for v in node.inputs[:2]:
        if v.type.dtype != dtype:
            raise MethodNotDefined("%s: inputs of %s beside a %s output" % (op, v.type.dtype, dtype))
    return np.dtype(dtype).name


def _epilogue(op):
    """(kind, relu) of a forward op's fused output epilogue (``conv_fused.AbstractConvEpilogue``): kind 0
    none (the plain ops), 1 ``act(out + bias[o])``, 2 ``act(out * scale[o] + shift[o])``; relu 1 for the
    rectifier."""
    epilogue = getattr(op, "epilogue", None)
    if epilogue is None:
        return 0, 0
    return {"bias": 1, "scale_shift": 2}[epilogue], 1 if op.activation == "relu" else 0


def _uses_blas():
    return dot_c.blas_enabled()


def _who(op):
    """The op's name in messages: its class (AbstractConv2d, AbstractConv3d_gradWeights, ...)."""
    return type(op).__name__


def _static_kernel(op, node):
    """The spatial kernel sizes the graph knows before run time (None where unknown): the ``kshp``
    hint, the filters' static shape (forward, grad_inputs), a constant ``shape`` input (grad_weights)."""
    known = list(tuple(op.kshp)[2:]) if op.kshp is not None else [None] * op.convdim
    if op.kind == "grad_weights":
        data = getattr(node.inputs[2], "data", None)
        sizes = list(np.asarray(data).ravel()) if data is not None and np.ndim(data) == 1 else [None] * op.convdim
    else:
        sizes = list(node.inputs[0 if op.kind == "grad_inputs" else 1].type.shape[2:])
    if len(sizes) != op.convdim:
        sizes = [None] * op.convdim
    return [k if k is not None else (None if s is None else int(s)) for k, s in zip(known, sizes)]


def _may_be_pointwise(op, node):
    """Whether the 1x1 / unit stride / no padding branch can be taken: the props allow it and the static
    kernel shape (``_static_kernel``) does not rule out a 1x1 kernel."""
    if any(s != 1 for s in op.subsample):
        return False
    bm = op.border_mode
    if isinstance(bm, tuple):
        if any(lo != 0 or hi != 0 for lo, hi in bm):
            return False
    elif bm not in ("valid", "half", "full"):
        return False
    return all(k is None or k == 1 for k in _static_kernel(op, node))


# ---------------------------------------------------------------- optional contract methods


def c_libraries(op):
    return dot_c.c_libraries(op)


def c_lib_dirs(op):
    return dot_c.c_lib_dirs(op)


def c_support_code(op):
    # the pool (threads_c): one copy per library, when config.threads > 1
    return threads_c.pool_support_code()


def c_compile_args(op):
    return threads_c.compile_args()


def c_headers(op):
    return ["<string.h>"]


def c_code_cache_version(op):
    return (VERSION, dot_c.c_code_cache_version(op), threads_c.enabled())


# ---------------------------------------------------------------- support code

COMMON = r"""
#ifndef FFG_CONV_COMMON
#define FFG_CONV_COMMON
/* ---- convolution (AbstractConv*): the geometry shared by the three kinds ----
   A 2d convolution is a 3d one whose first spatial axis has length 1. */
typedef struct ffg_conv_geom {
    int64_t B, C, O, G;          /* batch, input channels, output channels, groups */
    int64_t Cg, Og;              /* channels per group: C / G and O / G */
    int64_t S[3], K[3], P[3];    /* spatial input, kernel and output sizes */
    int64_t st[3], dl[3];        /* stride and dilation */
    int64_t pl[3], pr[3];        /* padding before and after */
    int64_t KK, CK, Pn, Sn;      /* prod K, Cg * KK (rows of col), prod P (its columns), prod S */
} ffg_conv_geom;

/* *out = a * b for a, b >= 0; 1 (and *out untouched) when it does not fit in an int64. */
static int ffg_conv_mul(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a)
        return 1;
    *out = a * b;
    return 0;
}

/* *out = a + b for a, b >= 0; 1 when it does not fit in an int64. */
static int ffg_conv_add(int64_t a, int64_t b, int64_t *out)
{
    if (b > INT64_MAX - a)
        return 1;
    *out = a + b;
    return 0;
}

/* "5x5" (convdim 2) or "3x5x5" (convdim 3) from three sizes, the first dropped in 2d. */
static void ffg_conv_dims(char *buf, size_t size, int convdim, const int64_t *v)
{
    if (convdim == 2)
        snprintf(buf, size, "%lldx%lld", (long long)v[1], (long long)v[2]);
    else
        snprintf(buf, size, "%lldx%lldx%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
}

/* Fill pads and output sizes of g from g->S, g->K, g->st, g->dl and the border mode
   (0 valid, 1 full, 2 half, 3 explicit: the pads already in g->pl, g->pr) and check that the
   dilated filter fits in the padded input and that every size stays in range.
   0, or -1 with err set (the message begins with `who`). */
static int ffg_conv_setup(ffg_conv_geom *g, const char *who, int convdim, int mode, FfgError *err)
{
    int a;
    int64_t dk[3], padded[3];
    char s1[80], s2[80];
    for (a = 0; a < 3; ++a) {
        if (g->K[a] < 1 || g->S[a] < 0) {
            ffg_conv_dims(s1, sizeof s1, convdim, g->K);
            ffg_conv_dims(s2, sizeof s2, convdim, g->S);
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the filter (%s) must have every spatial size >= 1 "
                          "(input %s)", who, s1, s2);
            return -1;
        }
        if (g->K[a] - 1 > (INT64_MAX / 4) / g->dl[a] || g->S[a] > INT64_MAX / 4 || g->pl[a] > INT64_MAX / 4
            || g->pr[a] > INT64_MAX / 4) {   /* (so S + pads and the dilated kernel cannot overflow) */
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: spatial sizes too large (filter %lld, input %lld, "
                          "pads %lld and %lld on axis %d)", who, (long long)g->K[a], (long long)g->S[a],
                          (long long)g->pl[a], (long long)g->pr[a], a - (3 - convdim));
            return -1;
        }
        dk[a] = (g->K[a] - 1) * g->dl[a] + 1;
        if (mode == 0) {
            g->pl[a] = g->pr[a] = 0;
        } else if (mode == 1) {
            g->pl[a] = g->pr[a] = dk[a] - 1;
        } else if (mode == 2) {
            g->pl[a] = g->pr[a] = dk[a] / 2;
        }
        padded[a] = g->S[a] + g->pl[a] + g->pr[a];
    }
    for (a = 0; a < 3; ++a) {
        if (padded[a] < dk[a]) {
            ffg_conv_dims(s1, sizeof s1, convdim, dk);
            ffg_conv_dims(s2, sizeof s2, convdim, padded);
            ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the filter (%s, dilated) is larger than the padded "
                          "input (%s)", who, s1, s2);
            return -1;
        }
        g->P[a] = (padded[a] - dk[a]) / g->st[a] + 1;
    }
    if (ffg_conv_mul(g->K[0], g->K[1], &g->KK) || ffg_conv_mul(g->KK, g->K[2], &g->KK)
        || ffg_conv_mul(g->Cg, g->KK, &g->CK) || ffg_conv_mul(g->P[0], g->P[1], &g->Pn)
        || ffg_conv_mul(g->Pn, g->P[2], &g->Pn) || ffg_conv_mul(g->S[0], g->S[1], &g->Sn)
        || ffg_conv_mul(g->Sn, g->S[2], &g->Sn)) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the sizes of the convolution overflow an int64", who);
        return -1;
    }
    return 0;
}

/* Check C % G == 0, O % G == 0 and the filters' channels against C / G; fill Cg, Og. */
static int ffg_conv_channels(ffg_conv_geom *g, const char *who, int64_t kern_channels, FfgError *err)
{
    if (g->C % g->G != 0 || g->O % g->G != 0) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: %lld groups must divide the input channels (%lld) and the "
                      "output channels (%lld)", who, (long long)g->G, (long long)g->C, (long long)g->O);
        return -1;
    }
    g->Cg = g->C / g->G;
    g->Og = g->O / g->G;
    if (kern_channels != g->Cg) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "%s: the filters have %lld input channels per group, the "
                      "image %lld (%lld channels in %lld groups)", who, (long long)kern_channels,
                      (long long)g->Cg, (long long)g->C, (long long)g->G);
        return -1;
    }
    return 0;
}

/* Can a (rows x prod n) matrix, rows `rs` apart and spatial strides sz, sy, sx over sizes n, be read
   in place as row-major with leading dimension *ld? (The spatial axes C-contiguous, rows not
   overlapping; a stride along a length-1 axis is never used.) */
static int ffg_conv_in_place(int64_t rows, int64_t rs, const int64_t *n, int64_t sz, int64_t sy, int64_t sx,
                             int64_t *ld)
{
    const int64_t cols = n[0] * n[1] * n[2];
    if ((n[2] > 1 && sx != 1) || (n[1] > 1 && sy != n[2]) || (n[0] > 1 && sz != n[1] * n[2]))
        return 0;
    if (rows > 1 && rs < (cols > 1 ? cols : 1))
        return 0;
    *ld = rows > 1 ? rs : (cols > 1 ? cols : 1);
    return 1;
}

/* The px with 0 <= px * st + off < S, as [*lo, *hi) within [0, P). */
static void ffg_conv_inside(int64_t off, int64_t st, int64_t S, int64_t P, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + st - 1) / st;
    int64_t h = S - 1 - off >= 0 ? (S - 1 - off) / st + 1 : 0;
    if (h > P)
        h = P;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* The range [*lo, *hi) of images of chunk c of n over a batch of B (the same cut for every call). */
static void ffg_conv_chunk_range(int64_t B, int n, int c, int64_t *lo, int64_t *hi)
{
    const int64_t q = B / n, r = B % n;
    *lo = c * q + (c < r ? c : r);
    *hi = *lo + q + (c < r ? 1 : 0);
}
#endif
"""

KERNEL = r"""
#ifndef FFG_CONV_%(tag)s
#define FFG_CONV_%(tag)s
/* ---- convolution (AbstractConv*) for %(tag)s: packing, im2col, col2im, gemm and the chunks ---- */

/* wm (O x Cg*KK, C-contiguous) = the kernel w (strides ws: o, c, z, y, x), flipped along every spatial
   axis when flip: wm then correlates. Also used to write a grad_weights result back (flip again). */
static void ffg_conv_pack_kernel_%(tag)s(%(T)s *wm, const %(T)s *w, const int64_t *ws, const ffg_conv_geom *g,
                                        int flip)
{
    int64_t o, c, kz, ky, kx;
    %(T)s *dst = wm;
    for (o = 0; o < g->O; ++o)
        for (c = 0; c < g->Cg; ++c)
            for (kz = 0; kz < g->K[0]; ++kz)
                for (ky = 0; ky < g->K[1]; ++ky) {
                    const int64_t fz = flip ? g->K[0] - 1 - kz : kz, fy = flip ? g->K[1] - 1 - ky : ky;
                    const %(T)s *row = w + o * ws[0] + c * ws[1] + fz * ws[2] + fy * ws[3];
                    if (flip)
                        for (kx = 0; kx < g->K[2]; ++kx)
                            *dst++ = row[(g->K[2] - 1 - kx) * ws[4]];
                    else
                        for (kx = 0; kx < g->K[2]; ++kx)
                            *dst++ = row[kx * ws[4]];
                }
}

/* col (Cg*KK x Pn, C-contiguous) = the windows of one image's group of Cg channels x (strides xs:
   c, z, y, x); zeros where a window reads the padding. Reads x only inside the image. */
static void ffg_conv_im2col_%(tag)s(%(T)s *col, const %(T)s *x, const int64_t *xs, const ffg_conv_geom *g)
{
    int64_t c, kz, ky, kx, pz, py, px;
    %(T)s *dst = col;
    for (c = 0; c < g->Cg; ++c)
        for (kz = 0; kz < g->K[0]; ++kz)
            for (ky = 0; ky < g->K[1]; ++ky)
                for (kx = 0; kx < g->K[2]; ++kx) {
                    const int64_t offx = kx * g->dl[2] - g->pl[2];
                    int64_t lo, hi;
                    ffg_conv_inside(offx, g->st[2], g->S[2], g->P[2], &lo, &hi);
                    for (pz = 0; pz < g->P[0]; ++pz) {
                        const int64_t iz = pz * g->st[0] + kz * g->dl[0] - g->pl[0];
                        for (py = 0; py < g->P[1]; ++py, dst += g->P[2]) {
                            const int64_t iy = py * g->st[1] + ky * g->dl[1] - g->pl[1];
                            if (iz < 0 || iz >= g->S[0] || iy < 0 || iy >= g->S[1]) {
                                memset(dst, 0, (size_t)g->P[2] * sizeof(%(T)s));   /* a padding row */
                                continue;
                            }
                            {
                                const %(T)s *src = x + c * xs[0] + iz * xs[1] + iy * xs[2];
                                const int64_t step = g->st[2] * xs[3];
                                int64_t at = (lo * g->st[2] + offx) * xs[3];
                                for (px = 0; px < lo; ++px)
                                    dst[px] = 0;
                                if (step == 1)
                                    for (px = lo; px < hi; ++px)
                                        dst[px] = src[at + (px - lo)];
                                else
                                    for (px = lo; px < hi; ++px, at += step)
                                        dst[px] = src[at];
                                for (px = hi; px < g->P[2]; ++px)
                                    dst[px] = 0;
                            }
                        }
                    }
                }
}

/* dx (Cg x Sn, C-contiguous, one image's group) += every entry of col (Cg*KK x Pn) at the position
   im2col read it from; positions in the padding are dropped (the crop). */
static void ffg_conv_col2im_%(tag)s(%(T)s *dx, const %(T)s *col, const ffg_conv_geom *g)
{
    int64_t c, kz, ky, kx, pz, py, px;
    const %(T)s *src = col;
    for (c = 0; c < g->Cg; ++c)
        for (kz = 0; kz < g->K[0]; ++kz)
            for (ky = 0; ky < g->K[1]; ++ky)
                for (kx = 0; kx < g->K[2]; ++kx) {
                    const int64_t offx = kx * g->dl[2] - g->pl[2];
                    int64_t lo, hi;
                    ffg_conv_inside(offx, g->st[2], g->S[2], g->P[2], &lo, &hi);
                    for (pz = 0; pz < g->P[0]; ++pz) {
                        const int64_t iz = pz * g->st[0] + kz * g->dl[0] - g->pl[0];
                        for (py = 0; py < g->P[1]; ++py, src += g->P[2]) {
                            const int64_t iy = py * g->st[1] + ky * g->dl[1] - g->pl[1];
                            int64_t at;   /* dx's index of px = lo */
                            if (iz < 0 || iz >= g->S[0] || iy < 0 || iy >= g->S[1])
                                continue;
                            at = c * g->Sn + (iz * g->S[1] + iy) * g->S[2] + lo * g->st[2] + offx;
                            if (g->st[2] == 1)
                                for (px = lo; px < hi; ++px, ++at)
                                    dx[at] += src[px];
                            else
                                for (px = lo; px < hi; ++px, at += g->st[2])
                                    dx[at] += src[px];
                        }
                    }
                }
}

/* c (M x N, row stride ldc) = op(a) op(b) (accumulate: += instead), M, N, K >= 1, a stored with leading
   dimension lda (transposed when ta), b likewise. %(gemm_how)s */
static void ffg_conv_gemm_%(tag)s(int ta, int tb, int64_t M, int64_t N, int64_t K, const %(T)s *a, int64_t lda,
                                 const %(T)s *b, int64_t ldb, int accumulate, %(T)s *c, int64_t ldc,
                                 %(T)s *pack, %(T)s *tmp)
{
%(gemm_body)s
}

/* One call's work, shared by its chunks (each chunk: a range of images and its own workspace). */
typedef struct ffg_conv_job_%(tag)s {
    ffg_conv_geom g;
    int kind;                 /* 0 forward, 1 grad_weights, 2 grad_inputs */
    int n_chunks;
    int pointwise;            /* a 1x1 kernel, unit strides, no padding: the image is its own col */
    const %(T)s *img;         /* forward, grad_weights: the image, strides is */
    int64_t is[5];
    const %(T)s *top;         /* grad_weights, grad_inputs: topgrad, strides ts */
    int64_t ts[5];
    int top_in_place;         /* top's (Og x Pn) blocks are read in place, row stride top_ld */
    int64_t top_ld;
    int img_in_place;         /* pointwise: the image's (Cg x Sn) blocks in place, row stride img_ld */
    int64_t img_ld;
    const %(T)s *wm;          /* forward, grad_inputs: the packed kernel (O x CK) */
    %(T)s *out;               /* the C-contiguous output */
    %(T)s *acc;               /* grad_weights: chunk c sums into acc + c * acc_stride (O x CK) */
    int64_t acc_stride;
    %(T)s *work;              /* chunk c's workspace: work + c * work_stride */
    int64_t work_stride, col_size, top_size, pack_size, tmp_size;   /* (elements) */
    int ep_kind;              /* forward's fused epilogue (AbstractConvEpilogue): 0 none, 1 bias, 2 scale/shift */
    int ep_relu;              /* ... then the rectifier */
    const %(T)s *ep_a;        /* scale[o] at ep_a[o * ep_as] (kind 2) */
    int64_t ep_as;
    const %(T)s *ep_b;        /* bias or shift[o] at ep_b[o * ep_bs] */
    int64_t ep_bs;
} ffg_conv_job_%(tag)s;

/* The fused output epilogue of AbstractConvEpilogue: y (rows x n, C-contiguous: output channels o0 ..
   o0 + rows - 1 of one image) = act(y + b[o]) (kind 1) or act(y * a[o] + b[o]) (kind 2), act the
   rectifier when ep_relu (v <= 0 ? 0 : v, relu's switch(v <= 0, 0, v): NaN stays NaN). Run on each
   gemm's block right after the gemm wrote it, while it is still in cache. */
static void ffg_conv_epilogue_%(tag)s(%(T)s *y, int64_t rows, int64_t n, int64_t o0,
                                     const ffg_conv_job_%(tag)s *J)
{
    int64_t r, j;
    for (r = 0; r < rows; ++r) {
        %(T)s *row = y + r * n;
        const %(T)s b = J->ep_b[(o0 + r) * J->ep_bs];
        if (J->ep_kind == 2) {
            const %(T)s a = J->ep_a[(o0 + r) * J->ep_as];
            if (J->ep_relu)
                for (j = 0; j < n; ++j) {
                    const %(T)s v = row[j] * a + b;
                    row[j] = v <= 0 ? 0 : v;
                }
            else
                for (j = 0; j < n; ++j)
                    row[j] = row[j] * a + b;
        } else if (J->ep_relu) {
            for (j = 0; j < n; ++j) {
                const %(T)s v = row[j] + b;
                row[j] = v <= 0 ? 0 : v;
            }
        } else {
            for (j = 0; j < n; ++j)
                row[j] += b;
        }
    }
}

/* Chunk `chunk` of the job: its images, group by group. Cannot fail. */
static int ffg_conv_chunk_%(tag)s(void *ctx, int chunk, FfgError *err)
{
    const ffg_conv_job_%(tag)s *J = (const ffg_conv_job_%(tag)s *)ctx;
    const ffg_conv_geom *g = &J->g;
    %(T)s *col = J->work + chunk * J->work_stride;   /* (CK x Pn) */
    %(T)s *topbuf = col + J->col_size;                /* (Og x Pn), when top is packed */
    %(T)s *pack = topbuf + J->top_size;               /* the C kernel's packing space (no BLAS) */
    %(T)s *tmp = pack + J->pack_size;                 /* grad_weights without BLAS: one product */
    int64_t lo, hi, b, grp, o;
    int first = 1;
    (void)err;
    ffg_conv_chunk_range(g->B, J->n_chunks, chunk, &lo, &hi);
    for (b = lo; b < hi; ++b) {
        for (grp = 0; grp < g->G; ++grp) {
            const %(T)s *topg = NULL;
            int64_t ldt = g->Pn, ldcol = g->Pn;
            const %(T)s *colp = col;
            if (J->kind != 0) {   /* topgrad's (Og x Pn) block of this image and group */
                const %(T)s *t = J->top + b * J->ts[0] + grp * g->Og * J->ts[1];
                if (J->top_in_place) {
                    topg = t;
                    ldt = J->top_ld;
                } else {
                    int64_t pz, py, px;
                    %(T)s *dst = topbuf;
                    for (o = 0; o < g->Og; ++o)
                        for (pz = 0; pz < g->P[0]; ++pz)
                            for (py = 0; py < g->P[1]; ++py) {
                                const %(T)s *row = t + o * J->ts[1] + pz * J->ts[2] + py * J->ts[3];
                                for (px = 0; px < g->P[2]; ++px)
                                    *dst++ = row[px * J->ts[4]];
                            }
                    topg = topbuf;
                }
            }
            if (J->kind != 2) {   /* the image's windows: col, or the image itself (pointwise) */
                const %(T)s *x = J->img + b * J->is[0] + grp * g->Cg * J->is[1];
                if (J->pointwise && J->img_in_place) {
                    colp = x;
                    ldcol = J->img_ld;
                } else {
                    const int64_t xs[4] = {J->is[1], J->is[2], J->is[3], J->is[4]};
                    ffg_conv_im2col_%(tag)s(col, x, xs, g);
                }
            }
            if (J->kind == 0) {
                /* forward: out[b, group] (Og x Pn) = wm[group] (Og x CK) . col (CK x Pn) */
                ffg_conv_gemm_%(tag)s(0, 0, g->Og, g->Pn, g->CK, J->wm + grp * g->Og * g->CK, g->CK, colp, ldcol,
                                     0, J->out + (b * g->O + grp * g->Og) * g->Pn, g->Pn, pack, tmp);
                if (J->ep_kind)   /* the fused epilogue, on the block just written */
                    ffg_conv_epilogue_%(tag)s(J->out + (b * g->O + grp * g->Og) * g->Pn, g->Og, g->Pn, grp * g->Og, J);
            } else if (J->kind == 1) {
                /* grad_weights: acc[group] (Og x CK) += top[b, group] (Og x Pn) . col^T (Pn x CK) */
                %(T)s *acc = J->acc + chunk * J->acc_stride + grp * g->Og * g->CK;
                ffg_conv_gemm_%(tag)s(0, 1, g->Og, g->CK, g->Pn, topg, ldt, colp, ldcol, !first, acc, g->CK,
                                     pack, tmp);
            } else {
                /* grad_inputs: col (CK x Pn) = wm[group]^T (CK x Og) . top[b, group] (Og x Pn), then
                   scattered into dx[b, group] (Cg x Sn); pointwise: straight into dx */
                %(T)s *dx = J->out + (b * g->C + grp * g->Cg) * g->Sn;
                if (J->pointwise) {
                    ffg_conv_gemm_%(tag)s(1, 0, g->CK, g->Pn, g->Og, J->wm + grp * g->Og * g->CK, g->CK, topg, ldt,
                                         0, dx, g->Pn, pack, tmp);
                } else {
                    ffg_conv_gemm_%(tag)s(1, 0, g->CK, g->Pn, g->Og, J->wm + grp * g->Og * g->CK, g->CK, topg, ldt,
                                         0, col, g->Pn, pack, tmp);
                    memset(dx, 0, (size_t)(g->Cg * g->Sn) * sizeof(%(T)s));
                    ffg_conv_col2im_%(tag)s(dx, col, g);
                }
            }
        }
        first = 0;
    }
    if (J->kind == 1 && first)   /* a chunk without images (cannot happen: chunks <= B) sums nothing */
        memset(J->acc + chunk * J->acc_stride, 0, (size_t)(g->O * g->CK) * sizeof(%(T)s));
    return 0;
}
#endif
"""

GEMM_BLAS = r"""    (void)pack;
    (void)tmp;
    %(gemm)s(FFG_CBLAS_ROW_MAJOR, ta ? FFG_CBLAS_TRANS : FFG_CBLAS_NO_TRANS, tb ? FFG_CBLAS_TRANS : FFG_CBLAS_NO_TRANS,
             M, N, K, 1, a, lda, b, ldb, accumulate ? 1 : 0, c, ldc);"""

GEMM_C = r"""    /* op(a) as (M x K) with strides (ars, acs), op(b) as (K x N) with (brs, bcs) */
    const int64_t ars = ta ? 1 : lda, acs = ta ? lda : 1, brs = tb ? 1 : ldb, bcs = tb ? ldb : 1;
    int64_t i, j;
    if (!accumulate && ldc == N) {
        ffg_dot_gemm_%(tag)s(M, N, K, a, ars, acs, b, brs, bcs, c, pack);
        return;
    }
    ffg_dot_gemm_%(tag)s(M, N, K, a, ars, acs, b, brs, bcs, tmp, pack);
    for (i = 0; i < M; ++i)
        for (j = 0; j < N; ++j)
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + tmp[i * N + j] : tmp[i * N + j];"""


def c_support_code_apply(op, node, name):
    tag = _dtype(op, node)
    T = c_element_type(tag)
    parts = [COMMON]
    if _uses_blas():
        letter = "d" if tag == "float64" else "s"
        lib = blas.library()
        parts.append(dot_c._blas_common())
        gemm_body = GEMM_BLAS % dict(gemm=lib.symbol(letter + "gemm"))
        how = "BLAS %sgemm (%s)." % (letter, dot_c._blas_origin())
        if threads_c.enabled():
            parts.append("int %sopenblas_get_num_threads%s(void);   /* BLAS threads: 1 lets our pool cut the batch */"
                         % (lib.prefix, lib.suffix))
    else:
        parts.append(dot_c._kernel_code(tag))
        gemm_body = GEMM_C % dict(tag=tag)
        how = "dot_c's blocked C kernel (no BLAS): pack holds its panels, tmp M x N results when accumulating."
    parts.append(KERNEL % dict(tag=tag, T=T, gemm_body=gemm_body, gemm_how=how))
    return "\n".join(parts)


# ---------------------------------------------------------------- the node's code


def _border(op):
    """(mode, pads): mode 0 valid, 1 full, 2 half, 3 explicit; pads: 3 (lo, hi) pairs (2d: first (0, 0))."""
    bm = op.border_mode
    if isinstance(bm, tuple):
        pads = [tuple(int(v) for v in p) for p in bm]
        mode = 3
    else:
        mode = {"valid": 0, "full": 1, "half": 2}[bm]
        pads = [(0, 0)] * op.convdim
    return mode, [(0, 0)] * (3 - op.convdim) + pads


def _three(values, fill):
    """Three per-axis values from convdim of them (2d: `fill` first)."""
    values = [str(v) for v in values]
    return [str(fill)] * (3 - len(values)) + values


def _strides5(var, nd):
    """C initializer of the 5 element strides (b, c, z, y, x) of a (2 + convdim)-d array."""
    if nd == 4:
        return "{%s.strides[0], %s.strides[1], 0, %s.strides[2], %s.strides[3]}" % (var, var, var, var)
    return "{%s}" % ", ".join("%s.strides[%d]" % (var, a) for a in range(5))


def _spatial(var, nd, first):
    """C initializer of three spatial sizes of var (axes first.. of a (2 + convdim)-d array)."""
    cd = nd - 2
    sizes = ["%s.shape[%d]" % (var, first + a) for a in range(cd)]
    return "{%s}" % ", ".join(["1"] * (3 - cd) + sizes)


def c_code(op, node, name, inputs, outputs, sub):
    tag = _dtype(op, node)
    T = c_element_type(tag)
    kind = op.kind
    if kind not in _KIND_NAMES or op.convdim not in (2, 3):
        raise MethodNotDefined("%s: no C code for kind %r in %sd" % (op, kind, op.convdim))
    if getattr(op, "unshared", False):
        raise MethodNotDefined("%s: no C code for unshared filters" % op)
    cd = op.convdim
    nd = cd + 2
    out = outputs[0]
    err, fail, al = sub["err"], sub["fail"], sub["allocator"]
    who = _message(_who(op))
    mode, pads = _border(op)
    pointwise = _may_be_pointwise(op, node)
    use_blas = _uses_blas()
    threaded = threads_c.enabled()
    d = dict(name=name, T=T, tag=tag, out=out, err=err, fail=fail, al=al, who=who, nd=nd, cd=cd, mode=mode,
             G=int(op.num_groups), flip=1 if op.filter_flip else 0,
             st=", ".join(_three(op.subsample, 1)), dl=", ".join(_three(op.filter_dilation, 1)),
             pl=", ".join(str(p[0]) for p in pads), pr=", ".join(str(p[1]) for p in pads),
             kindno={"forward": 0, "grad_weights": 1, "grad_inputs": 2}[kind], op=_message(op),
             border=_message(op.border_mode))
    L = []
    add = L.append
    add("/* %(op)s: %(kind)s %(cd)dd convolution (border %(border)s, %(flipword)s), by im2col + %(how)s */"
        % dict(d, kind=kind, flipword="flipped filters" if op.filter_flip else "correlation",
               how="BLAS gemm" if use_blas else "the blocked C gemm"))
    add("/* temporaries, released by the cleanup below on every path */")
    add("void *%(name)s_wm = NULL;     /* the kernel packed as O x CK (flipped when filter_flip) */" % d)
    add("void *%(name)s_work = NULL;   /* per chunk: col, packed topgrad, gemm scratch */" % d)
    add("void *%(name)s_acc = NULL;    /* grad_weights: per chunk O x CK sums */" % d)
    add("{")
    add("    ffg_conv_job_%(tag)s job;" % d)
    add("    ffg_conv_geom *g = &job.g;")
    add("    const char *who = \"%(who)s\";" % d)
    add("    int64_t out_shape[%(nd)d];" % d)
    add("    int64_t per_chunk = 0, total = 0, ck_o = 0;   /* workspace sizes (elements) */")
    if kind == "grad_weights":
        add("    int64_t acc_total = 0;                          /* the chunks' sums (elements) */")
    add("    int too_big = 0;                              /* a size overflowed */")
    add("    int n;")
    add("    memset(&job, 0, sizeof job);")
    add("    job.kind = %(kindno)d;" % d)
    add("    g->G = %(G)d;" % d)
    add("    {")
    add("        const int64_t st[3] = {%(st)s}, dl[3] = {%(dl)s}, pl[3] = {%(pl)s}, pr[3] = {%(pr)s};" % d)
    add("        memcpy(g->st, st, sizeof st);")
    add("        memcpy(g->dl, dl, sizeof dl);")
    add("        memcpy(g->pl, pl, sizeof pl);")
    add("        memcpy(g->pr, pr, sizeof pr);")
    add("    }")
    if kind == "forward":
        img, kern = inputs[:2]
        d.update(img=img, kern=kern)
        add("    /* img (B, C, *S), kern (O, C/G, *K) -> out (B, O, *P) */")
        add("    {")
        add("        const int64_t S[3] = %s, K[3] = %s;" % (_spatial(img, nd, 2), _spatial(kern, nd, 2)))
        add("        const int64_t is[5] = %s;" % _strides5(img, nd))
        add("        memcpy(g->S, S, sizeof S);")
        add("        memcpy(g->K, K, sizeof K);")
        add("        memcpy(job.is, is, sizeof is);")
        add("    }")
        add("    g->B = %(img)s.shape[0];" % d)
        add("    g->C = %(img)s.shape[1];" % d)
        add("    g->O = %(kern)s.shape[0];" % d)
        add(CHECK_GEOMETRY % dict(d, channels="%(kern)s.shape[1]" % d))
        add("        %(fail)s" % d)
        add("    job.img = (const %(T)s *)%(img)s.data;" % d)
        ep_kind, ep_relu = _epilogue(op)
        if ep_kind:
            vecs = list(zip(("scale", "shift") if ep_kind == 2 else ("bias",), inputs[2:]))
            add("    /* the fused epilogue's per-channel vectors (%s), O entries each, read through their stride */"
                % ", ".join(n for n, _ in vecs))
            for what, v in vecs:
                add("    if (%s.shape[0] != g->O) {" % v)
                add("        ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%%s: %s has %%lld entries, the convolution %%lld "
                    "output channels\", who, (long long)%s.shape[0], (long long)g->O);" % (err, what, v))
                add("        %(fail)s" % d)
                add("    }")
            add("    job.ep_kind = %d;" % ep_kind)
            add("    job.ep_relu = %d;" % ep_relu)
            if ep_kind == 2:
                add("    job.ep_a = (const %s *)%s.data;" % (T, inputs[2]))
                add("    job.ep_as = %s.strides[0];" % inputs[2])
            add("    job.ep_b = (const %s *)%s.data;" % (T, inputs[-1]))
            add("    job.ep_bs = %s.strides[0];" % inputs[-1])
        add("    out_shape[0] = g->B;")
        add("    out_shape[1] = g->O;")
        for a in range(cd):
            add("    out_shape[%d] = g->P[%d];" % (2 + a, 3 - cd + a))
    elif kind == "grad_weights":
        img, top, shp = inputs
        d.update(img=img, top=top, shp=shp, SH=c_element_type(node.inputs[2].type.dtype))
        add("    /* img (B, C, *S), topgrad (B, O, *P), shape (K) -> the filters' gradient (O, C/G, *K) */")
        add("    {")
        add("        const int64_t S[3] = %s;" % _spatial(img, nd, 2))
        add("        const int64_t is[5] = %s;" % _strides5(img, nd))
        add("        memcpy(g->S, S, sizeof S);")
        add("        memcpy(job.is, is, sizeof is);")
        add("    }")
        _read_shape(add, d, "K", "filter_shape for gradWeights")
        add("    g->B = %(img)s.shape[0];" % d)
        add("    g->C = %(img)s.shape[1];" % d)
        add("    g->O = %(top)s.shape[1];" % d)
        add("    if (%(top)s.shape[0] != g->B) {" % d)
        add("        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, \"%%s: topgrad has %%lld images, the image %%lld\","
            " who, (long long)%(top)s.shape[0], (long long)g->B);" % d)
        add("        %(fail)s" % d)
        add("    }")
        add(CHECK_GEOMETRY % dict(d, channels="g->C / g->G"))
        add("        %(fail)s" % d)
        _check_top(add, d, cd)
        add("    job.img = (const %(T)s *)%(img)s.data;" % d)
        add("    out_shape[0] = g->O;")
        add("    out_shape[1] = g->Cg;")
        for a in range(cd):
            add("    out_shape[%d] = g->K[%d];" % (2 + a, 3 - cd + a))
    else:
        kern, top, shp = inputs
        d.update(kern=kern, top=top, shp=shp, SH=c_element_type(node.inputs[2].type.dtype))
        add("    /* kern (O, C/G, *K), topgrad (B, O, *P), shape (S) -> the image's gradient (B, C, *S) */")
        add("    {")
        add("        const int64_t K[3] = %s;" % _spatial(kern, nd, 2))
        add("        memcpy(g->K, K, sizeof K);")
        add("    }")
        _read_shape(add, d, "S", "input_shape for gradInputs")
        add("    g->B = %(top)s.shape[0];" % d)
        add("    g->O = %(kern)s.shape[0];" % d)
        add("    if (%(top)s.shape[1] != g->O) {" % d)
        add("        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, \"%%s: topgrad has %%lld channels, the filters %%lld\", "
            "who, (long long)%(top)s.shape[1], (long long)g->O);" % d)
        add("        %(fail)s" % d)
        add("    }")
        add("    if (ffg_conv_mul(%(kern)s.shape[1], g->G, &g->C)) {" % d)
        add("        ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, \"%%s: too many channels\", who);" % d)
        add("        %(fail)s" % d)
        add("    }")
        add(CHECK_GEOMETRY % dict(d, channels="%(kern)s.shape[1]" % d))
        add("        %(fail)s" % d)
        _check_top(add, d, cd)
        add("    out_shape[0] = g->B;")
        add("    out_shape[1] = g->C;")
        for a in range(cd):
            add("    out_shape[%d] = g->S[%d];" % (2 + a, 3 - cd + a))
    if kind != "forward":
        add("    {")
        add("        const int64_t ts[5] = %s;" % _strides5(top, nd))
        add("        memcpy(job.ts, ts, sizeof ts);")
        add("    }")
        add("    job.top = (const %(T)s *)%(top)s.data;" % d)
        add("    job.top_in_place = ffg_conv_in_place(g->Og, job.ts[1], g->P, job.ts[2], job.ts[3], job.ts[4],")
        add("                                         &job.top_ld);")
    add("    if (ffg_alloc_array(&%(out)s, %(nd)d, out_shape, sizeof(%(T)s), %(al)s, %(err)s))" % d)
    add("        %(fail)s" % d)
    add("    job.out = (%(T)s *)%(out)s.data;" % d)
    add("    /* nothing to multiply: the output is all zeros (or empty) */")
    add("    if (g->B == 0 || g->Og == 0 || g->CK == 0 || g->Pn == 0) {")
    add("        memset(%(out)s.data, 0, (size_t)ffg_size(%(nd)d, out_shape) * sizeof(%(T)s));" % d)
    if kind == "forward" and _epilogue(op)[0]:
        add("        {   /* the fused epilogue of the zero sums: act(0 + bias[o]) or act(0 * scale[o] + shift[o]) */")
        add("            int64_t b_;")
        add("            for (b_ = 0; b_ < g->B; ++b_)")
        add("                ffg_conv_epilogue_%(tag)s(job.out + b_ * g->O * g->Pn, g->O, g->Pn, 0, &job);" % d)
        add("        }")
    add("    } else {")
    B = "        "
    if pointwise:
        add(B + "/* a 1x1 kernel, unit strides, no padding: P == S, and the image is its own col matrix */")
        add(B + "job.pointwise = g->KK == 1 && g->st[0] == 1 && g->st[1] == 1 && g->st[2] == 1")
        add(B + "                && g->pl[0] == 0 && g->pl[1] == 0 && g->pl[2] == 0")
        add(B + "                && g->pr[0] == 0 && g->pr[1] == 0 && g->pr[2] == 0;")
        if kind != "grad_inputs":
            add(B + "job.img_in_place = job.pointwise && ffg_conv_in_place(g->Cg, job.is[1], g->S, job.is[2], "
                "job.is[3],")
            add(B + "                                                      job.is[4], &job.img_ld);")
    add(B + "/* the filters' size: it fits, as the filters (or the output) exist; checked all the same */")
    add(B + "if (ffg_conv_mul(g->O, g->CK, &ck_o)) {")
    add(B + "    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, \"%%s: the filters are too big\", who);" % d)
    add(B + "    %(fail)s" % d)
    add(B + "}")
    if kind != "grad_weights":
        add(B + "/* the kernel, packed (and flipped) once for every image */")
        add(B + "if ((%(name)s_wm = ffg_malloc(%(al)s, (size_t)ck_o * sizeof(%(T)s))) == NULL) {" % d)
        add(B + "    ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, \"%%s: could not allocate the packed kernel (%%lld "
            "elements)\", who, (long long)ck_o);" % d)
        add(B + "    %(fail)s" % d)
        add(B + "}")
        add(B + "{")
        add(B + "    const int64_t ws[5] = %s;" % _strides5(d["kern"], nd))
        add(B + "    ffg_conv_pack_kernel_%(tag)s((%(T)s *)%(name)s_wm, (const %(T)s *)%(kern)s.data, ws, g, "
            "%(flip)d);" % d)
        add(B + "}")
        add(B + "job.wm = (const %(T)s *)%(name)s_wm;" % d)
    # how many chunks
    add(B + "/* chunks: ranges of images over the library's pool (one when threads are off, or when the BLAS threads")
    add(B + "   each gemm itself) */")
    add(B + "n = 1;")
    if threaded:
        if use_blas:
            # as dot_c: our pool only where the BLAS would not thread the gemm itself (one BLAS thread, or a
            # product below OpenBLAS's own threading threshold, which then runs on the calling thread)
            cond = ("(%sopenblas_get_num_threads%s() == 1 || (double)g->Og * (double)g->Pn * (double)g->CK < %d.0)"
                    % (blas.library().prefix, blas.library().suffix, OPENBLAS_THREADING_THRESHOLD))
        else:
            cond = "1"
        most = "FFG_THREADS" if kind == "grad_weights" else "%d * FFG_THREADS" % threads_c.UNITS_PER_THREAD
        add(B + "if (g->B > 1 && (double)g->B * (double)g->O * (double)g->CK * (double)g->Pn")
        add(B + "        >= %d.0 * (double)FFG_THREADS_MIN_SIZE && %s)" % (PAR_MIN_FACTOR, cond))
        add(B + "    n = g->B < %s ? (int)g->B : %s;" % (most, most))
    add(B + "job.n_chunks = n;")
    # workspace sizes
    add(B + "/* each chunk's workspace: col (CK x Pn), packed topgrad (Og x Pn), gemm scratch; every size checked */")
    add(B + "if (!job.pointwise || (job.kind != 2 && !job.img_in_place))")
    add(B + "    too_big |= ffg_conv_mul(g->CK, g->Pn, &job.col_size);")
    if kind != "forward":
        add(B + "if (!job.top_in_place)")
        add(B + "    too_big |= ffg_conv_mul(g->Og, g->Pn, &job.top_size);")
    if not use_blas:
        mnk = {"forward": "g->Og, g->Pn, g->CK", "grad_weights": "g->Og, g->CK, g->Pn",
               "grad_inputs": "g->CK, g->Pn, g->Og"}[kind]
        add(B + "job.pack_size = ffg_dot_pack_size_%s(%s);" % (tag, mnk))
        if kind == "grad_weights":
            add(B + "too_big |= ffg_conv_mul(g->Og, g->CK, &job.tmp_size);   /* one product, added to the sums */")
    add(B + "too_big |= ffg_conv_add(job.col_size, job.top_size, &per_chunk);")
    add(B + "too_big |= !too_big && ffg_conv_add(per_chunk, job.pack_size, &per_chunk);")
    add(B + "too_big |= !too_big && ffg_conv_add(per_chunk, job.tmp_size, &per_chunk);")
    add(B + "/* (+16: two chunks' buffers off one cache line) */")
    add(B + "too_big |= !too_big && ffg_conv_add(per_chunk, 16, &per_chunk);")
    add(B + "too_big |= !too_big && ffg_conv_mul(per_chunk, n, &total);")
    if kind == "grad_weights":
        add(B + "/* the sums over the batch: one (O x CK) block per chunk, added in chunk order below */")
        add(B + "job.acc_stride = ck_o + 16;")
        add(B + "too_big |= ffg_conv_mul(job.acc_stride, n, &acc_total);")
        add(B + "too_big |= acc_total > INT64_MAX / (int64_t)sizeof(%(T)s)" % d)
        add(B + "           || (uint64_t)acc_total * sizeof(%(T)s) > (uint64_t)SIZE_MAX;" % d)
    add(B + "if (too_big || total > INT64_MAX / (int64_t)sizeof(%(T)s)" % d)
    add(B + "    || (uint64_t)total * sizeof(%(T)s) > (uint64_t)SIZE_MAX) {" % d)
    add(B + "    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, \"%%s: the workspace of the convolution is too big (its "
        "size overflows)\", who);" % d)
    add(B + "    %(fail)s" % d)
    add(B + "}")
    add(B + "job.work_stride = per_chunk;")
    add(B + "if ((%(name)s_work = ffg_malloc(%(al)s, (size_t)total * sizeof(%(T)s))) == NULL) {" % d)
    add(B + "    ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, \"%%s: could not allocate a workspace of %%lld elements\", "
        "who, (long long)total);" % d)
    add(B + "    %(fail)s" % d)
    add(B + "}")
    add(B + "job.work = (%(T)s *)%(name)s_work;" % d)
    if kind == "grad_weights":
        add(B + "if ((%(name)s_acc = ffg_malloc(%(al)s, (size_t)acc_total * sizeof(%(T)s))) == NULL) {" % d)
        add(B + "    ffg_set_error(%(err)s, FFG_ERR_NOMEM, -1, \"%%s: could not allocate the sums (%%lld elements)\", "
            "who, (long long)acc_total);" % d)
        add(B + "    %(fail)s" % d)
        add(B + "}")
        add(B + "job.acc = (%(T)s *)%(name)s_acc;" % d)
    if threaded:
        add(B + "if (ffg_parallel(ffg_conv_chunk_%(tag)s, &job, n, %(err)s))" % d)
        add(B + "    %(fail)s" % d)
    else:
        add(B + "ffg_conv_chunk_%(tag)s(&job, 0, %(err)s);" % d)
    if kind == "grad_weights":
        add(B + "{")
        add(B + "    /* add the chunks' sums in chunk order, then write them out (flipped back when filter_flip) */")
        add(B + "    int c;")
        add(B + "    int64_t j;")
        add(B + "    const int64_t ws[5] = {g->CK, g->KK, g->K[1] * g->K[2], g->K[2], 1};")
        add(B + "    for (c = 1; c < n; ++c) {")
        add(B + "        const %(T)s *part = job.acc + c * job.acc_stride;" % d)
        add(B + "        for (j = 0; j < ck_o; ++j)")
        add(B + "            job.acc[j] += part[j];")
        add(B + "    }")
        add(B + "    ffg_conv_pack_kernel_%(tag)s(job.out, job.acc, ws, g, %(flip)d);" % d)
        add(B + "}")
    add("    }")
    add("}")
    return "\n".join(L)


CHECK_GEOMETRY = """    if (ffg_conv_channels(g, who, %(channels)s, %(err)s)
        || ffg_conv_setup(g, who, %(cd)d, %(mode)d, %(err)s))"""


def _read_shape(add, d, field, what):
    """C reading the gradient op's `shape` input (convdim entries >= 1) into g->field."""
    add("    /* the `shape` input: %(cd)d spatial sizes, each >= 1 */" % d)
    add("    if (%(shp)s.shape[0] != %(cd)d) {" % d)
    add("        ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%%s: invalid %s: %%lld entries for %d spatial axes\", who, "
        "(long long)%s.shape[0]);" % (d["err"], what, d["cd"], d["shp"]))
    add("        %(fail)s" % d)
    add("    }")
    add("    {")
    add("        int a_;")
    add("        g->%s[0] = g->%s[1] = g->%s[2] = 1;" % (field, field, field))
    add("        for (a_ = 0; a_ < %(cd)d; ++a_) {" % d)
    add("            const int64_t v_ = (int64_t)((const %(SH)s *)%(shp)s.data)[a_ * %(shp)s.strides[0]];" % d)
    add("            if (v_ < 1) {")
    add("                ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%%s: invalid %s: entry %%d is %%lld (must be >= 1)\", "
        "who, a_, (long long)v_);" % (d["err"], what))
    add("                %(fail)s" % d)
    add("            }")
    add("            g->%s[3 - %d + a_] = v_;" % (field, d["cd"]))
    add("        }")
    add("    }")


def _check_top(add, d, cd):
    """C checking topgrad's spatial size against the computed P (Theano's messages)."""
    what = "filter_shape for gradWeights" if "img" in d else "input_shape for gradInputs"
    conds = " || ".join("%s.shape[%d] != g->P[%d]" % (d["top"], 2 + a, 3 - cd + a) for a in range(cd))
    add("    if (%s) {" % conds)
    add("        char want_[80], got_[80];")
    add("        const int64_t got3_[3] = %s;" % _spatial(d["top"], cd + 2, 2))
    add("        ffg_conv_dims(want_, sizeof want_, %d, g->P);" % cd)
    add("        ffg_conv_dims(got_, sizeof got_, %d, got3_);" % cd)
    add("        ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%%s: invalid %s: topgrad's spatial size is %%s, the "
        "convolution gives %%s\", who, got_, want_);" % (d["err"], what))
    add("        %(fail)s" % d)
    add("    }")
    add("    if (%s.shape[1] != g->O) {" % d["top"])
    add("        ffg_set_error(%s, FFG_ERR_VALUE, -1, \"%%s: topgrad has %%lld channels, expected %%lld\", who, "
        "(long long)%s.shape[1], (long long)g->O);" % (d["err"], d["top"]))
    add("        %(fail)s" % d)
    add("    }")


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    d = dict(name=name, al=sub["allocator"])
    return "\n".join(["/* release the temporaries of the convolution */",
                      "ffg_release(%(al)s, %(name)s_wm);" % d,
                      "ffg_release(%(al)s, %(name)s_work);" % d,
                      "ffg_release(%(al)s, %(name)s_acc);" % d])

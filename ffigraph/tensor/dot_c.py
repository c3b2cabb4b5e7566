"""Plain-C code of ``Dot`` (vector·vector, matrix·vector, vector·matrix, matrix·matrix).

Two ways to multiply, chosen when the code is generated:

* BLAS, for float32 and float64 results, when an ILP64 OpenBLAS is at hand (and
  ``USE_BLAS`` is true): the copy numpy has loaded itself where it can be called,
  so that numpy and ffigraph share one library and one thread pool, else the
  ``scipy-openblas64`` package, the OpenBLAS build that NumPy and SciPy ship in
  their wheels, installable from PyPI on every platform they support (exports
  always take the package; ``ffigraph.tensor.blas`` chooses and says why). We use
  the ILP64 flavour (symbols ``scipy_cblas_dgemm64_``, or ``cblas_dgemm64_`` in
  numpy 1.26's copy): every dimension, leading dimension and increment is an
  ``int64_t``, so arrays with more than 2**31 - 1 elements along an axis (or in a
  leading dimension) need no special case and cannot overflow a 32-bit ``int``.
  We declare the few prototypes we call ourselves (below) rather than include a
  ``cblas.h``. The library's folder is passed through ``c_lib_dirs``, which the
  build turns into ``-L`` and ``-Wl,-rpath``, so the compiled graph finds the
  library at load time (numpy's copy is found already loaded).

  BLAS wants each matrix with one unit stride and a leading dimension at least
  max(1, columns). A C-contiguous matrix is passed as is ("no transpose"), a
  transposed view (strides (1, n)) as its transpose, and anything else
  (negative, zero or non-unit strides, or another dtype than the result) is
  first copied into a C-contiguous temporary of the result dtype. Vectors may
  have any non-zero stride, negative ones included.

* A cache-blocked C kernel otherwise: integers, bool (logical or of ands), and
  floats when no BLAS is there. It is the GotoBLAS loop nest: blocks of B
  (KC x NC) and of A (MC x KC) are packed into contiguous panels, which also
  absorbs any input strides, and a register tile of MR x NR results is
  accumulated over a whole KC block. Matrix·vector products use a plain
  strided loop instead. Signed integers are accumulated in the unsigned type
  of their width, so overflow wraps as NumPy's does without C's undefined
  behaviour.

Operands of another dtype than the result are converted (NumPy promotion)
into a C-contiguous temporary first. Temporaries are released by
``c_code_cleanup``, on success and on failure alike.
"""
from __future__ import annotations

import os

import numpy as np

from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor import blas, threads_c
from ffigraph.tensor.ctype import c_element_type

#: Use BLAS for float32/float64 results when an OpenBLAS is at hand (see ``ffigraph.tensor.blas``).
#: Tests set this to False to exercise the blocked kernel on floats.
USE_BLAS = True

#: A gemm is split over the library's threads (threads_c) from m * n * k >= GEMM_MIN_FACTOR *
#: config.threads_min_size multiply-adds (OpenBLAS threads its own gemm from 4 * 65536); a gemv from a
#: matrix of config.threads_min_size elements.
GEMM_MIN_FACTOR = 4

# Register tile and cache blocks of the blocked kernel (elements).
MR, NR = 4, 8
MC, KC, NC = 128, 256, 1024


def blas_info():
    """(lib_dir, include_dir, library) of the scipy-openblas64 package, or None when it is not
    installed (``ffigraph.tensor.blas.package_info``)."""
    return blas.package_info()


def blas_enabled():
    """True when the next compiled Dot on float32/float64 will call BLAS."""
    return bool(USE_BLAS) and blas.library() is not None


def _uses_blas(node):
    return blas_enabled() and node.outputs[0].type.dtype in ("float32", "float64")


def _dtypes(op, node):
    dtypes = [v.type.dtype for v in node.inputs] + [node.outputs[0].type.dtype]
    for d in dtypes:
        if np.dtype(d).kind == "c":
            raise MethodNotDefined("%s: no C code for complex dot yet" % op)
        try:
            c_element_type(d)
        except KeyError:
            raise MethodNotDefined("%s: no C element type for %s" % (op, d)) from None
    return dtypes


# ---------------------------------------------------------------- optional contract methods


def c_libraries(op):
    return [blas.library().link_name] if blas_enabled() else []


def c_lib_dirs(op):
    # the build adds -Wl,-rpath for each of these, so the library is found at load time
    return [blas.library().lib_dir] if blas_enabled() else []


def c_support_code(op):
    # the pool (threads_c), which the BLAS calls use when config.threads > 1
    return threads_c.pool_support_code() if blas_enabled() else ""


def c_compile_args(op):
    return threads_c.compile_args() if blas_enabled() else []


def c_code_cache_version(op):
    lib = blas.library() if USE_BLAS else None
    return (2, MR, NR, MC, KC, NC, lib.origin if lib is not None else False)


# ---------------------------------------------------------------- support code

COMMON = r"""
#ifndef FFG_DOT_COMMON
#define FFG_DOT_COMMON
/* ---- Dot: shared helpers ---- */

/* Report that x (x_ndim-d) and y (y_ndim-d) cannot be multiplied. */
static void ffg_dot_not_aligned(FfgError *err, int x_ndim, const int64_t *x_shape,
                                int y_ndim, const int64_t *y_shape)
{
    char sx[160], sy[160];
    ffg_format_shape(sx, sizeof sx, x_ndim, x_shape);
    ffg_format_shape(sy, sizeof sy, y_ndim, y_shape);
    ffg_set_error(err, FFG_ERR_VALUE, -1, "dot: shapes %s and %s not aligned: %lld (dim %d) != %lld (dim 0)",
                  sx, sy, (long long)x_shape[x_ndim - 1], x_ndim - 1, (long long)y_shape[0]);
}

/* A temporary of n elements of the given size from the allocator; NULL (and err set) on failure.
   n is an operand's size, so n * itemsize fits; checked all the same, so it can never wrap. */
static void *ffg_dot_temp(int64_t n, size_t itemsize, const FfgAllocator *al, FfgError *err)
{
    void *p;
    if (n < 0 || itemsize == 0 || itemsize > (size_t)INT64_MAX || n > INT64_MAX / (int64_t)itemsize
        || (uint64_t)n * itemsize > (uint64_t)SIZE_MAX) {
        ffg_set_error(err, FFG_ERR_VALUE, -1, "dot: a temporary of %lld %lld-byte items is too big "
                      "(its size in bytes overflows)", (long long)n, (long long)itemsize);
        return NULL;
    }
    p = ffg_malloc(al, (size_t)n * itemsize);
    if (p == NULL)
        ffg_set_error(err, FFG_ERR_NOMEM, -1, "dot: could not allocate a temporary of %lld bytes",
                      (long long)(n * (int64_t)itemsize));
    return p;
}
#endif
"""

BLAS_COMMON = r"""
#ifndef FFG_DOT_BLAS
#define FFG_DOT_BLAS
/* ---- Dot: the CBLAS entry points of an ILP64 OpenBLAS (every size is an int64_t) ---- */
/* linked against %(which)s */
enum { FFG_CBLAS_ROW_MAJOR = 101, FFG_CBLAS_NO_TRANS = 111, FFG_CBLAS_TRANS = 112 };
double %(ddot)s(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy);
float %(sdot)s(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy);
void %(dgemv)s(int order, int trans, int64_t m, int64_t n, double alpha, const double *a,
               int64_t lda, const double *x, int64_t incx, double beta, double *y, int64_t incy);
void %(sgemv)s(int order, int trans, int64_t m, int64_t n, float alpha, const float *a,
               int64_t lda, const float *x, int64_t incx, float beta, float *y, int64_t incy);
void %(dgemm)s(int order, int transa, int transb, int64_t m, int64_t n, int64_t k,
               double alpha, const double *a, int64_t lda, const double *b, int64_t ldb,
               double beta, double *c, int64_t ldc);
void %(sgemm)s(int order, int transa, int transb, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
               float beta, float *c, int64_t ldc);

/* Can a rows x cols matrix with element strides (rs, cs) go to row-major BLAS as it is?
   1 with *trans and *ld set when it can, 0 when it must be copied first.
   A stride along an axis of length 1 is never stepped, so any value is taken there. */
static int ffg_dot_blas_matrix(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans, int64_t *ld)
{
    int64_t r = rows > 1 ? rs : (cols > 1 ? cols : 1);
    int64_t c = cols > 1 ? cs : 1;
    if (c == 1 && r >= (cols > 1 ? cols : 1)) {      /* rows are contiguous: as it is */
        *trans = FFG_CBLAS_NO_TRANS;
        *ld = r;
        return 1;
    }
    r = rows > 1 ? rs : 1;
    c = cols > 1 ? cs : (rows > 1 ? rows : 1);
    if (r == 1 && c >= (rows > 1 ? rows : 1)) {      /* columns are contiguous: its transpose */
        *trans = FFG_CBLAS_TRANS;
        *ld = c;
        return 1;
    }
    return 0;
}
#endif
"""

# Per dtype T: copy/convert from every source dtype S (COPY), the blocked kernel and the
# strided matrix·vector loop (KERNEL), the BLAS driver (BLAS, float32/float64 only).

COPY = r"""
#ifndef FFG_DOT_COPY_%(src)s_%(dst)s
#define FFG_DOT_COPY_%(src)s_%(dst)s
/* dst (rows x cols, row stride ld) = src (%(src)s, strides rs, cs) converted to %(dst)s. */
static void ffg_dot_copy_%(src)s_%(dst)s(%(T)s *dst, int64_t ld, const %(S)s *src, int64_t rows, int64_t cols,
                                      int64_t rs, int64_t cs)
{
    int64_t i, j;
    for (i = 0; i < rows; ++i) {
        const %(S)s *row = src + i * rs;
        %(T)s *out = dst + i * ld;
        if (cs == 1) {
            for (j = 0; j < cols; ++j)
                out[j] = %(convert_j)s;
        } else {
            for (j = 0; j < cols; ++j)
                out[j] = %(convert_jcs)s;
        }
    }
}
#endif
"""

KERNEL = r"""
#ifndef FFG_DOT_KERNEL_%(dst)s
#define FFG_DOT_KERNEL_%(dst)s
/* ---- Dot: blocked kernel for %(dst)s, accumulating in %(U)s ---- */

/* Pack an mc x kc block of A (strides ars, acs) into panels of %(MR)d rows: within a panel,
   the %(MR)d values of one column are adjacent. A short last panel is padded with zeros. */
static void ffg_dot_pack_a_%(dst)s(%(T)s *dst, const %(T)s *a, int64_t ars, int64_t acs, int64_t mc, int64_t kc)
{
    int64_t i0, k, r;
    for (i0 = 0; i0 < mc; i0 += %(MR)d) {
        const int64_t mr = mc - i0 < %(MR)d ? mc - i0 : %(MR)d;
        const %(T)s *rows = a + i0 * ars;
        for (k = 0; k < kc; ++k) {
            for (r = 0; r < mr; ++r)
                dst[r] = rows[r * ars + k * acs];
            for (; r < %(MR)d; ++r)
                dst[r] = 0;
            dst += %(MR)d;
        }
    }
}

/* Pack a kc x nc block of B (strides brs, bcs) into panels of %(NR)d columns: within a panel,
   the %(NR)d values of one row are adjacent. A short last panel is padded with zeros. */
static void ffg_dot_pack_b_%(dst)s(%(T)s *dst, const %(T)s *b, int64_t brs, int64_t bcs, int64_t kc, int64_t nc)
{
    int64_t j0, k, j;
    for (j0 = 0; j0 < nc; j0 += %(NR)d) {
        const int64_t nr = nc - j0 < %(NR)d ? nc - j0 : %(NR)d;
        const %(T)s *cols = b + j0 * bcs;
        for (k = 0; k < kc; ++k) {
            const %(T)s *row = cols + k * brs;
            if (bcs == 1) {
                for (j = 0; j < nr; ++j)
                    dst[j] = row[j];
            } else {
                for (j = 0; j < nr; ++j)
                    dst[j] = row[j * bcs];
            }
            for (; j < %(NR)d; ++j)
                dst[j] = 0;
            dst += %(NR)d;
        }
    }
}

/* One %(MR)dx%(NR)d tile: acc = (packed A panel) . (packed B panel) over kc, then the mr x nr
   valid part is stored into C (first KC block) or added to it (later blocks). */
static void ffg_dot_tile_%(dst)s(int64_t kc, const %(T)s *restrict ap, const %(T)s *restrict bp,
                                %(T)s *restrict c, int64_t ldc, int64_t mr, int64_t nr, int first)
{
    %(U)s acc[%(MR)d][%(NR)d];
    int64_t k;
    int r, j;
    for (r = 0; r < %(MR)d; ++r)
        for (j = 0; j < %(NR)d; ++j)
            acc[r][j] = 0;
    for (k = 0; k < kc; ++k) {
        for (r = 0; r < %(MR)d; ++r) {
            const %(U)s a = %(load_a)s;
            for (j = 0; j < %(NR)d; ++j)
                %(mac)s;
        }
        ap += %(MR)d;
        bp += %(NR)d;
    }
    for (r = 0; r < mr; ++r) {
        %(T)s *crow = c + r * ldc;
        if (first) {
            for (j = 0; j < nr; ++j)
                crow[j] = (%(T)s)acc[r][j];
        } else {
            for (j = 0; j < nr; ++j)
                crow[j] = %(add_acc)s;
        }
    }
}

/* Scratch elements ffg_dot_gemm_%(dst)s needs for these sizes. */
static int64_t ffg_dot_pack_size_%(dst)s(int64_t M, int64_t N, int64_t K)
{
    const int64_t mc = M < %(MC)d ? M : %(MC)d, kc = K < %(KC)d ? K : %(KC)d, nc = N < %(NC)d ? N : %(NC)d;
    return ((mc + %(MR)d - 1) / %(MR)d * %(MR)d) * kc + kc * ((nc + %(NR)d - 1) / %(NR)d * %(NR)d);
}

/* C (M x N, C-contiguous) = A (M x K, strides ars, acs) . B (K x N, strides brs, bcs), with
   M, N, K >= 1; pack holds ffg_dot_pack_size_%(dst)s(M, N, K) elements. */
static void ffg_dot_gemm_%(dst)s(int64_t M, int64_t N, int64_t K, const %(T)s *a, int64_t ars, int64_t acs,
                                const %(T)s *b, int64_t brs, int64_t bcs, %(T)s *c, %(T)s *pack)
{
    const int64_t mcmax = M < %(MC)d ? M : %(MC)d;
    %(T)s *apack = pack;
    %(T)s *bpack = pack + ((mcmax + %(MR)d - 1) / %(MR)d * %(MR)d) * (K < %(KC)d ? K : %(KC)d);
    int64_t jc, pc, ic, jr, ir;
    for (jc = 0; jc < N; jc += %(NC)d) {
        const int64_t nc = N - jc < %(NC)d ? N - jc : %(NC)d;
        for (pc = 0; pc < K; pc += %(KC)d) {
            const int64_t kc = K - pc < %(KC)d ? K - pc : %(KC)d;
            ffg_dot_pack_b_%(dst)s(bpack, b + pc * brs + jc * bcs, brs, bcs, kc, nc);
            for (ic = 0; ic < M; ic += %(MC)d) {
                const int64_t mc = M - ic < %(MC)d ? M - ic : %(MC)d;
                ffg_dot_pack_a_%(dst)s(apack, a + ic * ars + pc * acs, ars, acs, mc, kc);
                for (jr = 0; jr < nc; jr += %(NR)d) {
                    const int64_t nr = nc - jr < %(NR)d ? nc - jr : %(NR)d;
                    for (ir = 0; ir < mc; ir += %(MR)d) {
                        const int64_t mr = mc - ir < %(MR)d ? mc - ir : %(MR)d;
                        ffg_dot_tile_%(dst)s(kc, apack + ir * kc, bpack + jr * kc,
                                            c + (ic + ir) * N + jc + jr, N, mr, nr, pc == 0);
                    }
                }
            }
        }
    }
}

/* y (rows, contiguous) = A (rows x cols, strides rs, cs) . x (stride xs), rows, cols >= 1.
   Walks A in memory order: a dot product per row, or, when A is stored by columns,
   x[k] times column k added for each k. */
static void ffg_dot_gemv_%(dst)s(int64_t rows, int64_t cols, const %(T)s *a, int64_t rs, int64_t cs,
                                const %(T)s *x, int64_t xs, %(T)s *y)
{
    int64_t i, k;
    if (rows > 1 && rs == 1 && cs != 1) {
        for (i = 0; i < rows; ++i)
            y[i] = 0;
        for (k = 0; k < cols; ++k) {
            const %(U)s xk = %(load_xk)s;
            const %(T)s *col = a + k * cs;
            for (i = 0; i < rows; ++i)
                y[i] = %(axpy)s;
        }
        return;
    }
    for (i = 0; i < rows; ++i) {
        const %(T)s *row = a + i * rs;
        /* four partial sums, so consecutive multiply-adds do not wait on each other */
        %(U)s s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (k = 0; k + 4 <= cols; k += 4) {
            %(dot4)s
        }
        for (; k < cols; ++k) {
            %(dot1)s
        }
        y[i] = (%(T)s)%(combine4)s;
    }
}
#endif
"""

BLAS = r"""
#ifndef FFG_DOT_BLAS_%(dst)s
#define FFG_DOT_BLAS_%(dst)s
/* ---- Dot through BLAS for %(dst)s ---- */

/* A vector of n elements with stride s as a BLAS (pointer, increment): BLAS starts a negative
   increment at the lowest address. 0 when it must be copied first (a zero stride). */
static int ffg_dot_blas_vector_%(dst)s(const %(T)s *v, int64_t n, int64_t s, const %(T)s **p, int64_t *inc)
{
    if (n <= 1)
        s = 1;
    if (s == 0)
        return 0;
    *p = s > 0 ? v : v + (n - 1) * s;
    *inc = s;
    return 1;
}

/* C (M x N, C-contiguous) = A (M x K, strides ars, acs) . B (K x N, strides brs, bcs) by BLAS,
   M, N, K >= 1. An operand BLAS cannot read in place is copied into *atmp / *btmp, which
   the caller releases (an operand the caller converted is already C-contiguous, so its
   slot is never filled twice). 0 on success, -1 with err set. */
static int ffg_dot_blas_%(dst)s(int64_t M, int64_t N, int64_t K, const %(T)s *a, int64_t ars, int64_t acs,
                               const %(T)s *b, int64_t brs, int64_t bcs, %(T)s *c, void **atmp, void **btmp,
                               const FfgAllocator *al, FfgError *err)
{
    int ta, tb;
    int64_t lda, ldb, inca, incb;
    const %(T)s *pa, *pb;
    if (M == 1 || N == 1) {
        /* A vector operand: a dot product or a matrix-vector product. */
        const int64_t xn = K;
        const %(T)s *x = N == 1 ? b : a;                   /* the vector ...         */
        const int64_t xs = N == 1 ? brs : acs;
        const %(T)s *m = N == 1 ? a : b;                   /* ... and the other side */
        const int64_t rows = N == 1 ? M : N;               /* seen as rows x K        */
        const int64_t rs = N == 1 ? ars : bcs, cs = N == 1 ? acs : brs;
        void **mtmp = N == 1 ? atmp : btmp, **xtmp = N == 1 ? btmp : atmp;
        if (!ffg_dot_blas_vector_%(dst)s(x, xn, xs, &pb, &incb)) {
            if ((*xtmp = ffg_dot_temp(xn, sizeof(%(T)s), al, err)) == NULL)
                return -1;
            ffg_dot_copy_%(dst)s_%(dst)s((%(T)s *)*xtmp, 1, x, xn, 1, xs, 1);
            pb = (const %(T)s *)*xtmp;
            incb = 1;
        }
        if (rows == 1) {
            if (!ffg_dot_blas_vector_%(dst)s(m, K, cs, &pa, &inca)) {
                if ((*mtmp = ffg_dot_temp(K, sizeof(%(T)s), al, err)) == NULL)
                    return -1;
                ffg_dot_copy_%(dst)s_%(dst)s((%(T)s *)*mtmp, 1, m, K, 1, cs, 1);
                pa = (const %(T)s *)*mtmp;
                inca = 1;
            }
            c[0] = %(dot)s(K, pa, inca, pb, incb);
            return 0;
        }
        if (!ffg_dot_blas_matrix(rows, K, rs, cs, &ta, &lda)) {
            if ((*mtmp = ffg_dot_temp(rows * K, sizeof(%(T)s), al, err)) == NULL)
                return -1;
            ffg_dot_copy_%(dst)s_%(dst)s((%(T)s *)*mtmp, K, m, rows, K, rs, cs);
            m = (const %(T)s *)*mtmp;
            ta = FFG_CBLAS_NO_TRANS;
            lda = K;
        }
        if (ta == FFG_CBLAS_NO_TRANS)   /* m is rows x K, row-major */
            %(gemv_nt)s
        else                            /* m is stored as its K x rows transpose */
            %(gemv_t)s
        return 0;
    }
    /* matrix . matrix */
    if (!ffg_dot_blas_matrix(M, K, ars, acs, &ta, &lda)) {
        if ((*atmp = ffg_dot_temp(M * K, sizeof(%(T)s), al, err)) == NULL)
            return -1;
        ffg_dot_copy_%(dst)s_%(dst)s((%(T)s *)*atmp, K, a, M, K, ars, acs);
        a = (const %(T)s *)*atmp;
        ta = FFG_CBLAS_NO_TRANS;
        lda = K;
    }
    if (!ffg_dot_blas_matrix(K, N, brs, bcs, &tb, &ldb)) {
        if ((*btmp = ffg_dot_temp(K * N, sizeof(%(T)s), al, err)) == NULL)
            return -1;
        ffg_dot_copy_%(dst)s_%(dst)s((%(T)s *)*btmp, N, b, K, N, brs, bcs);
        b = (const %(T)s *)*btmp;
        tb = FFG_CBLAS_NO_TRANS;
        ldb = N;
    }
    %(gemm_call)s
    return 0;
}
#endif
"""


# The BLAS calls split over the library's own threads (threads_c), per dtype T.
PAR = r"""
#ifndef FFG_DOT_PAR_%(dst)s
#define FFG_DOT_PAR_%(dst)s
/* ---- Dot through BLAS for %(dst)s, split over the library's threads (threads_c) ----

   When the BLAS runs one thread (%(get_threads)s() == 1: OPENBLAS_NUM_THREADS=1, or a pool
   lowered beside numpy's), a large product is cut by ffg_split_loop into blocks, each computed by
   one BLAS call on blocks of the operands, run by the library's pool. The cut runs along a kept
   axis (rows or columns of the output: every block writes its own part of it), or along the summed
   axis when the output is too small to be cut (a per-chunk partial result, the chunks' results added
   in chunk order once all are done). It depends on the shapes and FFG_THREADS only, so the results
   are the same bits from call to call. A BLAS with more threads threads the whole call itself. */
int %(get_threads)s(void);

typedef struct ffg_dot_par_%(dst)s {
    ffg_split split;
    int gemm;                 /* 0: gemv (y = a x, or a^T x when ta is FFG_CBLAS_TRANS), 1: gemm */
    int ta, tb;
    int64_t m, n, k;          /* gemv: a is stored m x n; gemm: c is m x n, summed over k */
    const %(T)s *a;
    const %(T)s *b;           /* gemv: the vector x, increment ldb */
    %(T)s *c;
    int64_t lda, ldb, ldc;
    %(T)s *part;              /* a cut along the sum: chunk c > 0 writes part + (c - 1) * stride */
    int64_t stride;
} ffg_dot_par_%(dst)s;

static int ffg_dot_par_chunk_%(dst)s(void *ctx, int chunk, FfgError *err)
{
    const ffg_dot_par_%(dst)s *P = (const ffg_dot_par_%(dst)s *)ctx;
    const int axis = P->split.axis;
    %(T)s *out = P->split.partial && chunk > 0 ? P->part + (chunk - 1) * P->stride : P->c;
    int64_t lo, hi;
    (void)err;   /* a BLAS call cannot fail */
    if (!P->gemm) {
        const int by_rows = P->ta == FFG_CBLAS_NO_TRANS;   /* y's elements are the rows of a */
        ffg_split_range(&P->split, chunk, axis == 0 ? P->m : P->n, &lo, &hi);
        if (!P->split.partial) {   /* y[lo:hi]: rows (a x) or columns (a^T x) [lo, hi) of a */
            %(gemv)s(FFG_CBLAS_ROW_MAJOR, P->ta, by_rows ? hi - lo : P->m, by_rows ? P->n : hi - lo, 1,
                     P->a + (by_rows ? lo * P->lda : lo), P->lda, P->b, P->ldb, 0, P->c + lo, 1);
        } else {                   /* columns (a x) or rows (a^T x) [lo, hi) of a times x[lo:hi] */
            const int64_t len = axis == 0 ? P->m : P->n;   /* x's; a negative increment starts at its end */
            const %(T)s *x = P->ldb > 0 ? P->b + lo * P->ldb : P->b + (len - hi) * -P->ldb;
            %(gemv)s(FFG_CBLAS_ROW_MAJOR, P->ta, by_rows ? P->m : hi - lo, by_rows ? hi - lo : P->n, 1,
                     P->a + (by_rows ? lo : lo * P->lda), P->lda, x, P->ldb, 0, out, 1);
        }
    } else if (axis == 0) {   /* rows [lo, hi) of c: those of op(a), times op(b) */
        ffg_split_range(&P->split, chunk, P->m, &lo, &hi);
        %(gemm)s(FFG_CBLAS_ROW_MAJOR, P->ta, P->tb, hi - lo, P->n, P->k, 1,
                 P->a + (P->ta == FFG_CBLAS_NO_TRANS ? lo * P->lda : lo), P->lda, P->b, P->ldb,
                 0, P->c + lo * P->ldc, P->ldc);
    } else if (axis == 1) {   /* columns [lo, hi) of c: op(a) times those of op(b) */
        ffg_split_range(&P->split, chunk, P->n, &lo, &hi);
        %(gemm)s(FFG_CBLAS_ROW_MAJOR, P->ta, P->tb, P->m, hi - lo, P->k, 1, P->a, P->lda,
                 P->b + (P->tb == FFG_CBLAS_NO_TRANS ? lo : lo * P->ldb), P->ldb, 0, P->c + lo, P->ldc);
    } else {                  /* the sum over [lo, hi): columns of op(a) times rows of op(b) */
        ffg_split_range(&P->split, chunk, P->k, &lo, &hi);
        %(gemm)s(FFG_CBLAS_ROW_MAJOR, P->ta, P->tb, P->m, P->n, hi - lo, 1,
                 P->a + (P->ta == FFG_CBLAS_NO_TRANS ? lo : lo * P->lda), P->lda,
                 P->b + (P->tb == FFG_CBLAS_NO_TRANS ? lo * P->ldb : lo), P->ldb, 0, out, P->ldc);
    }
    return 0;
}

/* Run the chunks of P->split over the product (the fields of ffg_dot_par_%(dst)s). A cut along the
   sum gives chunk 0's partial result in c (count elements, contiguous) and the others' in a
   temporary, added into c in chunk order once all are done. */
static int ffg_dot_par_run_%(dst)s(ffg_dot_par_%(dst)s *P, int gemm, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                  const %(T)s *a, int64_t lda, const %(T)s *b, int64_t ldb, %(T)s *c, int64_t ldc,
                                  int64_t count, const FfgAllocator *al, FfgError *err)
{
    const ffg_split split = P->split;
    int ch, status;
    int64_t j;
    *P = (ffg_dot_par_%(dst)s){.split = split, .gemm = gemm, .ta = ta, .tb = tb, .m = m, .n = n, .k = k,
                              .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb, .ldc = ldc,
                              .part = NULL, .stride = count + FFG_PART_GAP};
    if (P->split.partial
        && (P->part = (%(T)s *)ffg_dot_temp((P->split.n - 1) * P->stride, sizeof(%(T)s), al, err)) == NULL)
        return -1;
    status = ffg_parallel(ffg_dot_par_chunk_%(dst)s, P, P->split.n, err);
    if (status == 0 && P->split.partial) {
        for (ch = 1; ch < P->split.n; ++ch) {
            const %(T)s *p = P->part + (ch - 1) * P->stride;
            for (j = 0; j < count; ++j)
                c[j] += p[j];
        }
    }
    ffg_release(al, P->part);
    return status;
}

/* y (contiguous) = a x, or a^T x when ta is FFG_CBLAS_TRANS; a is stored m x n (leading dimension
   lda). From FFG_THREADS_MIN_SIZE elements of a: cut along y (rows of a for a x, blocks of %(block)d
   columns for a^T x), or along the sum when y is short against a. */
static int ffg_dot_par_gemv_%(dst)s(int ta, int64_t m, int64_t n, const %(T)s *a, int64_t lda,
                                   const %(T)s *x, int64_t incx, %(T)s *y, const FfgAllocator *al,
                                   FfgError *err)
{
    ffg_dot_par_%(dst)s P;
    const int64_t shape[2] = {m, n};
    const int64_t ylen = ta == FFG_CBLAS_NO_TRANS ? m : n;
    P.split.n = 1;
    if (%(get_threads)s() == 1)
        ffg_split_loop(&P.split, 2, shape, %(block)d, 0x3ULL, ta == FFG_CBLAS_NO_TRANS ? 0x2ULL : 0x1ULL, ylen);
    if (P.split.n <= 1) {
        %(gemv)s(FFG_CBLAS_ROW_MAJOR, ta, m, n, 1, a, lda, x, incx, 0, y, 1);
        return 0;
    }
    return ffg_dot_par_run_%(dst)s(&P, 0, ta, FFG_CBLAS_NO_TRANS, m, n, 0, a, lda, x, incx, y, ylen, ylen, al, err);
}

/* c (m x n, C-contiguous) = op(a) op(b), summed over k. From m * n * k >= %(gemm_factor)d *
   FFG_THREADS_MIN_SIZE (OpenBLAS's own threshold for threading a gemm, with the default size): cut
   along rows of c, else columns, else (c too small) the sum. */
static int ffg_dot_par_gemm_%(dst)s(int ta, int tb, int64_t m, int64_t n, int64_t k, const %(T)s *a,
                                   int64_t lda, const %(T)s *b, int64_t ldb, %(T)s *c,
                                   const FfgAllocator *al, FfgError *err)
{
    ffg_dot_par_%(dst)s P;
    const int64_t shape[3] = {m, n, k};
    P.split.n = 1;
    if ((double)m * (double)n * (double)k >= %(gemm_factor)d.0 * (double)FFG_THREADS_MIN_SIZE
        && %(get_threads)s() == 1)
        ffg_split_loop(&P.split, 3, shape, 1, 0x7ULL, 0x4ULL, m * n);
    if (P.split.n <= 1) {
        %(gemm)s(FFG_CBLAS_ROW_MAJOR, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n);
        return 0;
    }
    return ffg_dot_par_run_%(dst)s(&P, 1, ta, tb, m, n, k, a, lda, b, ldb, c, n, m * n, al, err);
}
#endif
"""

def _names(dtype):
    """C spellings for one element dtype: (tag, element type, accumulation type, kind)."""
    dt = np.dtype(dtype)
    T = c_element_type(dt)
    if dt.kind == "b":
        return dt.name, T, "uint8_t", "b"
    if dt.kind in "iu":
        # wrap-around arithmetic in an unsigned type at least as wide as int (no promotion to int)
        return dt.name, T, "uint64_t" if dt.itemsize == 8 else "uint32_t", "i"
    return dt.name, T, T, "f"


def _copy_code(src, dst):
    stag, S, _, skind = _names(src)
    dtag, T, _, dkind = _names(dst)

    def convert(index):
        value = "row[%s]" % index
        if dkind == "b" and skind != "b":
            return "(%s)(%s != 0)" % (T, value)
        return "(%s)%s" % (T, value)

    return COPY % dict(src=stag, dst=dtag, S=S, T=T, convert_j=convert("j"), convert_jcs=convert("j * cs"))


def _kernel_code(dtype):
    tag, T, U, kind = _names(dtype)
    if kind == "b":
        load_a, mac = "ap[r] != 0", "acc[r][j] |= (%s)(a & (bp[j] != 0))" % U
        add_acc = "(%s)(crow[j] | acc[r][j])" % T
        load_xk, axpy = "x[k * xs] != 0", "(%s)(y[i] | (xk & (col[i] != 0)))" % T
        dot_step = "s%d |= (%s)((row[(k + %d) * cs] != 0) & (x[(k + %d) * xs] != 0));"
        dot1 = "s0 |= (%s)((row[k * cs] != 0) & (x[k * xs] != 0));" % U
        combine4 = "(s0 | s1 | s2 | s3)"
    else:
        load_a = "(%s)ap[r]" % U
        mac = "acc[r][j] += a * (%s)bp[j]" % U
        if kind == "f":
            add_acc = "crow[j] + acc[r][j]"
            axpy = "y[i] + xk * col[i]"
        else:
            add_acc = "(%s)((%s)crow[j] + acc[r][j])" % (T, U)
            axpy = "(%s)((%s)y[i] + xk * (%s)col[i])" % (T, U, U)
        load_xk = "(%s)x[k * xs]" % U
        dot_step = "s%d += (" + U + ")row[(k + %d) * cs] * (" + U + ")x[(k + %d) * xs];"
        dot1 = "s0 += (%s)row[k * cs] * (%s)x[k * xs];" % (U, U)
        combine4 = "((s0 + s1) + (s2 + s3))"
    if kind == "b":
        dot4 = "\n            ".join(dot_step % (q, U, q, q) for q in range(4))
    else:
        dot4 = "\n            ".join(dot_step % (q, q, q) for q in range(4))
    return KERNEL % dict(dst=tag, T=T, U=U, MR=MR, NR=NR, MC=MC, KC=KC, NC=NC, load_a=load_a, mac=mac,
                         add_acc=add_acc, load_xk=load_xk, axpy=axpy, dot4=dot4, dot1=dot1,
                         combine4=combine4)


def _blas_common():
    """The prototypes of the CBLAS functions under the chosen library's names, and which library
    that is (so a graph linked against another BLAS has another source, hence another library)."""
    lib = blas.library()
    which = ("numpy's own OpenBLAS %s, %s (one thread pool with numpy)" if lib.origin == "numpy"
             else "the scipy-openblas64 package %s, %s") % (lib.version, os.path.basename(lib.path))
    names = {f: lib.symbol(f) for f in blas.CBLAS_FUNCTIONS}
    return BLAS_COMMON % dict(names, which=which.replace("*/", "* /"))


def _blas_origin():
    lib = blas.library()
    return "numpy's OpenBLAS" if lib.origin == "numpy" else "scipy-openblas64"


def _blas_code(dtype):
    tag, T, _, _ = _names(dtype)
    letter = "d" if tag == "float64" else "s"
    lib = blas.library()
    gemv, gemm = lib.symbol(letter + "gemv"), lib.symbol(letter + "gemm")
    if threads_c.enabled():   # through the library's pool when large (PAR)
        par = "return ffg_dot_par_%s_" + tag + "(%s);"
        calls = dict(gemv_nt=par % ("gemv", "FFG_CBLAS_NO_TRANS, rows, K, m, lda, pb, incb, c, al, err"),
                     gemv_t=par % ("gemv", "FFG_CBLAS_TRANS, K, rows, m, lda, pb, incb, c, al, err"),
                     gemm_call=par % ("gemm", "ta, tb, M, N, K, a, lda, b, ldb, c, al, err"))
    else:
        calls = dict(
            gemv_nt="%s(FFG_CBLAS_ROW_MAJOR, FFG_CBLAS_NO_TRANS, rows, K, 1, m, lda, pb, incb, 0, c, 1);" % gemv,
            gemv_t="%s(FFG_CBLAS_ROW_MAJOR, FFG_CBLAS_TRANS, K, rows, 1, m, lda, pb, incb, 0, c, 1);" % gemv,
            gemm_call="%s(FFG_CBLAS_ROW_MAJOR, ta, tb, M, N, K, 1, a, lda, b, ldb, 0, c, N);" % gemm)
    code = BLAS % dict(calls, dst=tag, T=T, dot=lib.symbol(letter + "dot"))
    if not threads_c.enabled():
        return code
    par = PAR % dict(dst=tag, T=T, gemv=gemv, gemm=gemm, block=64 // np.dtype(dtype).itemsize,
                     get_threads="%sopenblas_get_num_threads%s" % (lib.prefix, lib.suffix),
                     gemm_factor=GEMM_MIN_FACTOR, per_thread=threads_c.UNITS_PER_THREAD)
    return par + code


def c_support_code_apply(op, node, name):
    dx, dy, dout = _dtypes(op, node)
    parts = [COMMON]
    for src in sorted({dx, dy} - {dout}):
        parts.append(_copy_code(src, dout))
    if _uses_blas(node):
        parts += [_blas_common(), _copy_code(dout, dout), _blas_code(dout)]
    else:
        parts.append(_kernel_code(dout))
    return "\n".join(parts)


# ---------------------------------------------------------------- the node's code


def c_code(op, node, name, inputs, outputs, sub):
    dx, dy, dout = _dtypes(op, node)
    x, y = inputs
    out = outputs[0]
    xnd, ynd = node.inputs[0].type.ndim, node.inputs[1].type.ndim
    if xnd not in (1, 2) or ynd not in (1, 2):
        raise MethodNotDefined("%s: dot of %d-d and %d-d" % (op, xnd, ynd))
    tag, T, _, _ = _names(dout)
    use_blas = _uses_blas(node)
    d = dict(name=name, x=x, y=y, out=out, T=T, tag=tag, xnd=xnd, ynd=ynd, ond=xnd + ynd - 2,
             err=sub["err"], fail=sub["fail"], al=sub["allocator"],
             M="%s.shape[0]" % x if xnd == 2 else "1",
             K="%s.shape[%d]" % (x, xnd - 1),
             N="%s.shape[1]" % y if ynd == 2 else "1",
             xrs="%s.strides[0]" % x if xnd == 2 else "0",
             xcs="%s.strides[%d]" % (x, xnd - 1),
             yrs="%s.strides[0]" % y,
             ycs="%s.strides[1]" % y if ynd == 2 else "0")
    shape = ([d["M"]] if xnd == 2 else []) + ([d["N"]] if ynd == 2 else [])
    d["shape"] = ", ".join(shape) or "0"
    d["nshape"] = max(len(shape), 1)
    for ptr, var, src in (("a", x, dx), ("b", y, dy)):
        d[ptr + "_init"] = ("(const %s *)%s.data;" % (T, var) if src == dout
                            else "NULL;   /* %s: its %s copy, made below */" % (src, tag))
    d["how"] = ("BLAS (%s)" % _blas_origin() if use_blas else "the blocked C kernel")
    lines = [
        "/* %(out)s = dot(%(x)s, %(y)s): %(xnd)d-d %(dx)s . %(ynd)d-d %(dy)s -> %(ond)d-d %(dout)s, by %(how)s. */"
        % dict(d, dx=dx, dy=dy, dout=dout),
        "/* temporaries, released by the cleanup below on every path */",
        "void *%(name)s_xtmp = NULL;   /* x converted to %(tag)s, or copied for BLAS */" % d,
        "void *%(name)s_ytmp = NULL;   /* the same for y */" % d,
    ]
    if not use_blas:
        lines.append("void *%(name)s_pack = NULL;   /* packing space of the blocked kernel */" % d)
    lines.append(r"""{
    /* x is seen as an M x K matrix and y as K x N; a vector is one row (x) or one column (y). */
    const int64_t M = %(M)s, K = %(K)s, N = %(N)s;
    const %(T)s *a = %(a_init)s
    const %(T)s *b = %(b_init)s
    /* element strides (a vector's missing axis has length 1, so its stride is never used) */
    int64_t ars = %(xrs)s, acs = %(xcs)s, brs = %(yrs)s, bcs = %(ycs)s;
    const int64_t out_shape[%(nshape)d] = {%(shape)s};
    if (K != %(y)s.shape[0]) {
        ffg_dot_not_aligned(%(err)s, %(xnd)d, %(x)s.shape, %(ynd)d, %(y)s.shape);
        %(fail)s
    }
    if (ffg_alloc_array(&%(out)s, %(ond)d, out_shape, sizeof(%(T)s), %(al)s, %(err)s))
        %(fail)s""" % d)
    lines.append(r"""    if (M == 0 || N == 0) {
        /* an empty result: nothing to compute */
    } else if (K == 0) {
        /* a sum over nothing */
        memset(%(out)s.data, 0, (size_t)(M * N) * sizeof(%(T)s));
    } else {""" % d)
    body = []
    for which, src, rows, cols, rs, cs, ptr in (("x", dx, "M", "K", "ars", "acs", "a"),
                                                ("y", dy, "K", "N", "brs", "bcs", "b")):
        if src == dout:
            continue
        body.append(r"""/* %(which)s is %(src)s: convert it to a C-contiguous %(tag)s temporary */
if ((%(name)s_%(which)stmp = ffg_dot_temp(%(rows)s * %(cols)s, sizeof(%(T)s), %(al)s, %(err)s)) == NULL)
    %(fail)s
ffg_dot_copy_%(stag)s_%(tag)s((%(T)s *)%(name)s_%(which)stmp, %(cols)s, (const %(S)s *)%(var)s.data,
                    %(rows)s, %(cols)s, %(rs)s, %(cs)s);
%(ptr)s = (const %(T)s *)%(name)s_%(which)stmp;
%(rs)s = %(cols)s;
%(cs)s = 1;""" % dict(d, which=which, src=src, stag=_names(src)[0], S=c_element_type(src), rows=rows,
                      cols=cols, rs=rs, cs=cs, ptr=ptr, var=x if which == "x" else y))
    if use_blas:
        body.append(r"""/* BLAS; an operand it cannot read in place is copied into the free temporary slot */
if (ffg_dot_blas_%(tag)s(M, N, K, a, ars, acs, b, brs, bcs, (%(T)s *)%(out)s.data,
                      &%(name)s_xtmp, &%(name)s_ytmp, %(al)s, %(err)s))
    %(fail)s""" % d)
    else:
        body.append(r"""if (M == 1 || N == 1) {
    /* a vector operand: the strided loop out = A . v (vector . matrix as y^T . x) */
    if (N == 1)
        ffg_dot_gemv_%(tag)s(M, K, a, ars, acs, b, brs, (%(T)s *)%(out)s.data);
    else
        ffg_dot_gemv_%(tag)s(N, K, b, bcs, brs, a, acs, (%(T)s *)%(out)s.data);
} else {
    /* blocked matrix product; the packing space absorbs any strides */
    if ((%(name)s_pack = ffg_dot_temp(ffg_dot_pack_size_%(tag)s(M, N, K), sizeof(%(T)s), %(al)s, %(err)s)) == NULL)
        %(fail)s
    ffg_dot_gemm_%(tag)s(M, N, K, a, ars, acs, b, brs, bcs, (%(T)s *)%(out)s.data, (%(T)s *)%(name)s_pack);
}""" % d)
    lines.append("\n".join("        " + ln if ln else ln for ln in "\n".join(body).split("\n")))
    lines.append("    }\n}")
    return "\n".join(lines)


def c_code_cleanup(op, node, name, inputs, outputs, sub):
    d = dict(name=name, al=sub["allocator"])
    code = ["/* release the temporaries of the dot */",
            "ffg_release(%(al)s, %(name)s_xtmp);" % d,
            "ffg_release(%(al)s, %(name)s_ytmp);" % d]
    if not _uses_blas(node):
        code.append("ffg_release(%(al)s, %(name)s_pack);" % d)
    return "\n".join(code)

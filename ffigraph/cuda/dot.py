"""``GpuDot``: the inner product of 1-d and 2-d arrays on a CUDA device.

The four cases of the CPU ``Dot`` (matrix.matrix, matrix.vector,
vector.matrix, vector.vector -> 0-d), with the same output dtype (NumPy
promotion) and static shape. The launcher sees ``x`` as an M x K matrix and
``y`` as a K x N matrix (a vector is one row of x, or one column of y) and
writes a fresh C-contiguous result.

Two ways to multiply:

* A tiled shared-memory kernel, for every supported dtype. Each block of
  TILE x TILE threads stages a tile of A and a tile of B in shared memory,
  converted to the accumulation type, and every thread adds TILE products to
  its own result. Inputs are read through their element strides (any sign,
  zero included), so transposed, sliced, reversed and broadcast views need no
  copy. Floats accumulate in the output dtype; integers in the unsigned type
  of their width (at least 32 bits), so overflow wraps as NumPy's does without
  C++'s undefined behaviour; bool is NumPy's logical or of ands.

* cuBLAS (``cublasSgemm`` / ``cublasDgemm``), chosen when the code is
  generated only if the toolkit has cuBLAS (``toolchain.cublas_available()``)
  and both inputs and the result are float32, or all float64. At run time each
  matrix must have a unit stride on one axis and a leading dimension at least
  the length of that axis (and every size must fit an ``int``); otherwise the
  tiled kernel runs. One cuBLAS handle per device is created on first use and
  kept for the life of the process.

K == 0 gives zeros (a memset); an empty M or N allocates the empty result and
launches nothing.
"""
from __future__ import annotations

import numpy as np

from ffigraph.abi import dtype_code
from ffigraph.cuda import toolchain
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.prelude import LAUNCHER_PARAMS
from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.basic import Apply
from ffigraph.abi import c_element_type

#: Threads per tile side of the tiled kernel (TILE x TILE threads per block).
TILE = 16

#: Element dtypes GpuDot computes (complex and float16 have no kernel).
SUPPORTED_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float32", "float64")

_CUBLAS_GEMM = {"float32": "cublasSgemm", "float64": "cublasDgemm"}

_CASES = {(2, 2): "matrix . matrix", (2, 1): "matrix . vector", (1, 2): "vector . matrix",
          (1, 1): "vector . vector"}


def gpu_dot_supported(node):
    """True when a CPU ``Dot`` node's inputs and output have dtypes GpuDot computes."""
    variables = list(node.inputs) + list(node.outputs)
    if any(getattr(v.type, "ndim", None) is None for v in variables):
        return False
    if any(v.ndim not in (1, 2) for v in node.inputs):
        return False
    return all(np.dtype(v.type.dtype).name in SUPPORTED_DTYPES for v in variables)


def cublas_enabled():
    """True when GpuDot code generated now calls cuBLAS for float32/float64."""
    return bool(toolchain.cublas_available())


class GpuDot(GpuKernelOp):
    """Inner product of 1-d/2-d GPU arrays, like ``Dot``; the result stays on the device."""

    __props__ = ()

    # ---- the graph

    def make_node(self, x, y):
        from ffigraph.tensor.math import Dot

        for pos, v in enumerate((x, y)):
            if not isinstance(getattr(v, "type", None), GpuArrayType):
                raise TypeError("GpuDot: input %d (%s) is not on the GPU (its type is %s); move it there "
                                "with gpu_from_host first" % (pos, v, getattr(v, "type", type(v).__name__)))
        if x.type.ndim not in (1, 2) or y.type.ndim not in (1, 2):
            raise TypeError("GpuDot supports 1-d and 2-d inputs; got %s (%d-d) and %s (%d-d)"
                            % (x, x.type.ndim, y, y.type.ndim))
        for v in (x, y):
            if v.type.dtype not in SUPPORTED_DTYPES:
                raise TypeError("GpuDot: no GPU kernel for dtype %s (%s); supported: %s"
                                % (v.type.dtype, v, ", ".join(SUPPORTED_DTYPES)))
        # the CPU Dot's rules give the dtype and static shape (and refuse mismatched static lengths)
        host = Dot().make_node(x.type.host_type()(x.name), y.type.host_type()(y.name))
        out = host.outputs[0].type
        return Apply(self, [x, y], [GpuArrayType(out.dtype, out.shape)()])

    def infer_shape(self, fgraph, node, input_shapes):
        sx, sy = input_shapes
        return [tuple(sx[:-1]) + tuple(sy[1:])]

    # ---- build requirements

    def uses_cublas(self, node):
        """True when this node's launcher is generated with the cuBLAS path."""
        dtypes = {v.type.dtype for v in list(node.inputs) + list(node.outputs)}
        return len(dtypes) == 1 and dtypes.pop() in _CUBLAS_GEMM and cublas_enabled()

    def c_libraries(self, **kwargs):
        # linked by gcc into the graph's library together with the nvcc object
        return ["cublas"] if cublas_enabled() else []

    def c_lib_dirs(self, **kwargs):
        # libcublas.so lies beside libcudart.so; the build adds -Wl,-rpath for it too
        return [toolchain.runtime_lib_dir()] if cublas_enabled() else []

    def c_code_cache_version(self):
        return (1, TILE, cublas_enabled())

    # ---- the .cu text

    def cuda_launcher(self, node, symbol):
        x, y = node.inputs
        out = node.outputs[0]
        xnd, ynd = x.type.ndim, y.type.ndim
        tx, ty, tout = x.type.dtype, y.type.dtype, out.type.dtype
        acc, load_x, load_y, mac, store = _arithmetic(tx, ty, tout)
        xcode, xbits = dtype_code(x.type.numpy_dtype)
        ycode, ybits = dtype_code(y.type.numpy_dtype)
        ocode, obits = dtype_code(out.type.numpy_dtype)
        d = dict(symbol=symbol, TILE=TILE, TX=c_element_type(tx), TY=c_element_type(ty), T=c_element_type(tout),
                 U=acc, load_x=load_x % "a[row * ars + ka * acs]",
                 load_y=load_y % "b[kb * brs + col * bcs]", mac=mac, store=store,
                 dx=tx, dy=ty, dout=tout, xnd=xnd, ynd=ynd, ond=xnd + ynd - 2, case=_CASES[(xnd, ynd)],
                 xcode=xcode, xbits=xbits, ycode=ycode, ybits=ybits, ocode=ocode, obits=obits,
                 params=_wrapped_params(len("FFG_CU_LAUNCHER int32_t %s(" % symbol)))
        # x is M x K (a vector: one row), y is K x N (a vector: one column)
        d["x_sizes"] = ("M = x->shape[0];\n    K = x->shape[1];\n    ars = xs[0];\n    acs = xs[1];" if xnd == 2
                        else "M = 1;\n    K = x->shape[0];\n    ars = 0;   /* one row: never stepped */\n"
                             "    acs = xs[0];")
        d["y_sizes"] = ("N = y->shape[1];\n    brs = ys[0];\n    bcs = ys[1];" if ynd == 2
                        else "N = 1;\n    brs = ys[0];\n    bcs = 0;   /* one column: never stepped */")
        shape = (["M"] if xnd == 2 else []) + (["N"] if ynd == 2 else [])
        d["out_shape"] = "\n    ".join("out_shape[%d] = %s;" % (i, s) for i, s in enumerate(shape)) \
            or "/* a 0-d result: no lengths */"
        d = _with_padding(d)
        parts = [KERNEL % d, LAUNCH_TILED % d]
        if self.uses_cublas(node):
            parts = [CUBLAS_COMMON] + parts + [CUBLAS_GEMM % dict(d, gemm=_CUBLAS_GEMM[tout])]
            d["multiply"] = MULTIPLY_CUBLAS % d
        else:
            d["multiply"] = MULTIPLY_TILED % d
        parts.append(LAUNCHER % d)
        return "\n".join(parts)


def _arithmetic(tx, ty, tout):
    """(accumulation type, load of x, load of y, multiply-add, store) in C for these dtypes."""
    dt = np.dtype(tout)
    T = c_element_type(tout)
    if dt.kind == "b":
        # NumPy's bool dot: is any x[k] and y[k] pair both true?
        return ("unsigned int", "(unsigned int)(%s != 0)", "(unsigned int)(%s != 0)", "acc |= a_k & b_k",
                "(%s)(acc != 0)" % T)
    if dt.kind in "iu":
        # convert to the result type, then wrap-around arithmetic in an unsigned type of its width
        U = "uint64_t" if dt.itemsize == 8 else "uint32_t"
        return U, "(%s)(%s)%%s" % (U, T), "(%s)(%s)%%s" % (U, T), "acc += a_k * b_k", "(%s)acc" % T
    return T, "(%s)%%s" % T, "(%s)%%s" % T, "acc += a_k * b_k", "acc"


# ---------------------------------------------------------------- CUDA text
# Substituted per node; every kernel and helper of a node is named from its launcher's symbol.

KERNEL = r"""
/* GpuDot (%(case)s, %(dx)s . %(dy)s -> %(dout)s): the tiled kernel.
   out (M x N, C-contiguous) = A (M x K) . B (K x N), where A[i][k] = a[i * ars + k * acs] and
   B[k][j] = b[k * brs + j * bcs]: strides in elements, of any sign, zero included.
   Each block computes %(TILE)d x %(TILE)d results at a time, stepping over the tiles of out by the
   grid's size, so any M and N fit the grid. For every %(TILE)d-wide slice of K its threads stage a
   tile of A and a tile of B in shared memory, converted to the accumulation type %(U)s
   (entries past the edges are staged as 0 and never reach a stored result), then each
   thread adds %(TILE)d products to its own sum. */
static __global__ void __launch_bounds__(%(TILE)d * %(TILE)d)
%(symbol)s_tiled(const %(TX)s *__restrict__ a, int64_t ars, int64_t acs,
%(pad)s const %(TY)s *__restrict__ b, int64_t brs, int64_t bcs,
%(pad)s %(T)s *__restrict__ out, int64_t M, int64_t N, int64_t K)
{
    __shared__ %(U)s a_tile[%(TILE)d][%(TILE)d];   /* a_tile[i][k] = A[tile row + i][k0 + k] */
    __shared__ %(U)s b_tile[%(TILE)d][%(TILE)d];   /* b_tile[k][j] = B[k0 + k][tile column + j] */
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t tiles_m = (M + %(TILE)d - 1) / %(TILE)d, tiles_n = (N + %(TILE)d - 1) / %(TILE)d;
    int64_t tm, tn, k0;
    int k;

    for (tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
        for (tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
            const int64_t row = tm * %(TILE)d + ty, col = tn * %(TILE)d + tx;
            %(U)s acc = 0;
            for (k0 = 0; k0 < K; k0 += %(TILE)d) {
                /* thread (ty, tx) stages A[row][ka] and B[kb][col] */
                const int64_t ka = k0 + tx, kb = k0 + ty;
                a_tile[ty][tx] = row < M && ka < K ? %(load_x)s : 0;
                b_tile[ty][tx] = kb < K && col < N ? %(load_y)s : 0;
                __syncthreads();
#pragma unroll
                for (k = 0; k < %(TILE)d; ++k) {
                    const %(U)s a_k = a_tile[ty][k], b_k = b_tile[k][tx];
                    %(mac)s;
                }
                __syncthreads();   /* the tiles are overwritten by the next slice */
            }
            if (row < M && col < N)
                out[row * N + col] = %(store)s;
        }
    }
}
"""

LAUNCH_TILED = r"""
/* Launch %(symbol)s_tiled over out (M, N, K >= 1); FFG_OK, or FFG_ERR_CUDA when the launch fails. */
static int32_t %(symbol)s_launch_tiled(const %(TX)s *a, int64_t ars, int64_t acs,
%(lpad)s const %(TY)s *b, int64_t brs, int64_t bcs,
%(lpad)s %(T)s *out, int64_t M, int64_t N, int64_t K, FfgError *err)
{
    const int64_t tiles_m = (M + %(TILE)d - 1) / %(TILE)d, tiles_n = (N + %(TILE)d - 1) / %(TILE)d;
    const dim3 block(%(TILE)d, %(TILE)d);
    /* blocks beyond 65535 a side are not needed: the kernel steps over the remaining tiles */
    const dim3 grid((unsigned int)(tiles_n < 65535 ? tiles_n : 65535),
                    (unsigned int)(tiles_m < 65535 ? tiles_m : 65535));
    %(symbol)s_tiled<<<grid, block>>>(a, ars, acs, b, brs, bcs, out, M, N, K);
    return ffg_cu_launched(err, "GpuDot: launching the tiled kernel");
}
"""

CUBLAS_COMMON = r"""
#ifndef FFG_CU_DOT_CUBLAS
#define FFG_CU_DOT_CUBLAS
/* ---- GpuDot: cuBLAS, with one handle per device made on first use ---- */
#include <cublas_v2.h>
#include <mutex>

#define FFG_CU_DOT_MAX_DEVICES 64

static std::mutex ffg_cu_dot_lock;   /* guards the handles' creation */
static cublasHandle_t ffg_cu_dot_handles[FFG_CU_DOT_MAX_DEVICES];   /* kept until the process ends */

static const char *ffg_cu_dot_status_name(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "an unknown cuBLAS status";
    }
}

/* 0 when status is CUBLAS_STATUS_SUCCESS; otherwise FFG_ERR_CUDA in err, naming the status
   (err->detail stays 0: it holds a cudaError_t, and this is none). */
static int32_t ffg_cu_dot_cublas_check(FfgError *err, cublasStatus_t status, const char *what)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return FFG_OK;
    ffg_cu_error(err, FFG_ERR_CUDA, -1, "%s: cuBLAS status %d (%s)", what, (int)status,
                 ffg_cu_dot_status_name(status));
    return FFG_ERR_CUDA;
}

/* The handle of the calling thread's current device, created on first use; NULL (err set) when
   it cannot be made. A failed creation is tried again by the next call. */
static cublasHandle_t ffg_cu_dot_handle(FfgError *err)
{
    int device = 0;
    cublasHandle_t handle = NULL;
    if (ffg_cu_check(err, cudaGetDevice(&device), "GpuDot: cudaGetDevice"))
        return NULL;
    if (device < 0 || device >= FFG_CU_DOT_MAX_DEVICES) {
        ffg_cu_error(err, FFG_ERR_RUNTIME, -1, "GpuDot: device %d is past the %d devices cuBLAS handles "
                     "are kept for", device, FFG_CU_DOT_MAX_DEVICES);
        return NULL;
    }
    std::lock_guard<std::mutex> guard(ffg_cu_dot_lock);
    if (ffg_cu_dot_handles[device] == NULL) {
        if (ffg_cu_dot_cublas_check(err, cublasCreate(&handle), "GpuDot: cublasCreate"))
            return NULL;
        ffg_cu_dot_handles[device] = handle;   /* on the default stream, no TF32: NumPy's precision */
    }
    return ffg_cu_dot_handles[device];
}

/* Can cuBLAS read a rows x cols matrix with element strides (rs, cs) in place? 1 with *row_major
   and *ld set when one axis has a unit stride and the other a leading dimension of at least that
   axis's length and within an int; 0 when not (the tiled kernel takes it then). A stride along
   an axis of length 1 is never stepped, so any value is taken there. */
static int ffg_cu_dot_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *row_major,
                                  int64_t *ld)
{
    int64_t r = rows > 1 ? rs : (cols > 1 ? cols : 1);
    int64_t c = cols > 1 ? cs : 1;
    if (c == 1 && r >= (cols > 1 ? cols : 1) && r <= INT32_MAX) {   /* rows are contiguous */
        *row_major = 1;
        *ld = r;
        return 1;
    }
    r = rows > 1 ? rs : 1;
    c = cols > 1 ? cs : (rows > 1 ? rows : 1);
    if (r == 1 && c >= (rows > 1 ? rows : 1) && c <= INT32_MAX) {   /* columns are contiguous */
        *row_major = 0;
        *ld = c;
        return 1;
    }
    return 0;
}
#endif
"""

CUBLAS_GEMM = r"""
/* out (M x N, C-contiguous) = A . B by %(gemm)s when cuBLAS can read A and B in place
   (*done = 1), else nothing is done (*done = 0). M, N, K >= 1.
   cuBLAS is column-major: the row-major M x N out is, to it, the column-major N x M matrix
   out^T = B^T . A^T, with leading dimension N. A row-major operand read as column-major is
   already its transpose (CUBLAS_OP_N); a column-major one is transposed (CUBLAS_OP_T). */
static int32_t %(symbol)s_cublas(const %(T)s *a, int64_t ars, int64_t acs,
%(cpad)s const %(T)s *b, int64_t brs, int64_t bcs,
%(cpad)s %(T)s *out, int64_t M, int64_t N, int64_t K, int *done, FfgError *err)
{
    const %(T)s one = 1, zero = 0;
    int a_row_major, b_row_major;
    int64_t lda, ldb;
    cublasHandle_t handle;
    cublasStatus_t status;
    *done = 0;
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return FFG_OK;
    if (!ffg_cu_dot_blas_layout(M, K, ars, acs, &a_row_major, &lda) ||
        !ffg_cu_dot_blas_layout(K, N, brs, bcs, &b_row_major, &ldb))
        return FFG_OK;
    if ((handle = ffg_cu_dot_handle(err)) == NULL)
        return err->code;
    status = %(gemm)s(handle,
                         b_row_major ? CUBLAS_OP_N : CUBLAS_OP_T,   /* B^T, N x K */
                         a_row_major ? CUBLAS_OP_N : CUBLAS_OP_T,   /* A^T, K x M */
                         (int)N, (int)M, (int)K, &one, b, (int)ldb, a, (int)lda, &zero, out, (int)N);
    *done = 1;
    return ffg_cu_dot_cublas_check(err, status, "GpuDot: %(gemm)s");
}
"""

MULTIPLY_TILED = r"""status = %(symbol)s_launch_tiled(a, ars, acs, b, brs, bcs, (%(T)s *)data, M, N, K, err);"""

MULTIPLY_CUBLAS = r"""/* cuBLAS when it can read both matrices in place, else the tiled kernel */
        int done = 0;
        status = %(symbol)s_cublas(a, ars, acs, b, brs, bcs, (%(T)s *)data, M, N, K, &done, err);
        if (status == FFG_OK && !done)
            status = %(symbol)s_launch_tiled(a, ars, acs, b, brs, bcs, (%(T)s *)data, M, N, K, err);"""

LAUNCHER = r"""
/* GpuDot launcher: out = dot(x, y), %(case)s: %(xnd)d-d %(dx)s . %(ynd)d-d %(dy)s -> %(ond)d-d %(dout)s.
   x is seen as an M x K matrix and y as K x N; a vector is one row (x) or one column (y).
   The result is a fresh C-contiguous block from device_alloc (cudaMalloc when NULL). */
FFG_CU_LAUNCHER int32_t %(symbol)s(%(params)s)
{
    static const char who[] = "GpuDot";
    const FfgTensor *x, *y;
    const %(TX)s *a;
    const %(TY)s *b;
    int64_t xs[2], ys[2];                  /* element strides of x and y */
    int64_t M, N, K, ars, acs, brs, bcs;   /* sizes, and strides of x and y as matrices */
    int64_t out_shape[2];
    void *data;
    int32_t status;

    (void)host_alloc;   /* nothing of the result lives on the host */
    if ((status = ffg_cu_check_call(err, who, inputs, n_inputs, 2, outputs, owned, n_outputs, 1)))
        return status;
    x = &inputs[0];
    y = &inputs[1];
    if ((status = ffg_cu_check_tensor(err, who, x, 0, FFG_DEVICE_CUDA, %(xcode)d, %(xbits)d, %(xnd)d)) ||
        (status = ffg_cu_check_tensor(err, who, y, 1, FFG_DEVICE_CUDA, %(ycode)d, %(ybits)d, %(ynd)d)))
        return status;
    ffg_cu_strides(x, xs);
    ffg_cu_strides(y, ys);
    %(x_sizes)s
    %(y_sizes)s
    if (K != y->shape[0]) {
        ffg_cu_error(err, FFG_ERR_VALUE, -1, "%%s: shapes not aligned: x has %%lld columns (its last axis) "
                     "but y has %%lld rows (its first axis)", who, (long long)K, (long long)y->shape[0]);
        return FFG_ERR_VALUE;
    }
    a = (const %(TX)s *)((const char *)x->data + x->byte_offset);
    b = (const %(TY)s *)((const char *)y->data + y->byte_offset);

    /* the result: M x N elements, C-contiguous */
    %(out_shape)s
    {
        const int64_t mn[2] = {M, N};
        data = ffg_cu_alloc_array(device_alloc, 2, mn, sizeof(%(T)s), err);
    }
    if (data == NULL)
        return err->code != FFG_OK ? err->code : FFG_ERR_NOMEM;
    ffg_cu_set_output(&outputs[0], data, FFG_DEVICE_CUDA, %(ocode)d, %(obits)d, %(ond)d, out_shape);
    owned[0] = data;

    if (M == 0 || N == 0) {
        return FFG_OK;   /* an empty result: nothing to compute */
    } else if (K == 0) {
        /* a sum over nothing */
        status = ffg_cu_check(err, cudaMemsetAsync(data, 0, (size_t)(M * N) * sizeof(%(T)s), 0),
                              "GpuDot: cudaMemsetAsync");
    } else {
        %(multiply)s
    }
    if (status != FFG_OK) {
        /* the caller releases nothing of a failed call */
        ffg_cu_free(device_alloc, data);
        owned[0] = NULL;
        outputs[0].data = NULL;
        return status;
    }
    return FFG_OK;
}
"""


def _wrapped_params(indent, width=110):
    """LAUNCHER_PARAMS broken over lines of at most ``width`` characters, aligned at ``indent``."""
    lines, line = [], ""
    for param in LAUNCHER_PARAMS.split(", "):
        if line and indent + len(line) + len(param) + 2 > width:
            lines.append(line + ",")
            line = param
        else:
            line = line + ", " + param if line else param
    lines.append(line)
    return ("\n" + " " * indent).join(lines)


def _with_padding(d):
    """Continuation lines of the parameter lists, aligned under the first parameter."""
    d = dict(d)
    d["pad"] = " " * len("%s_tiled" % d["symbol"])
    d["lpad"] = " " * len("static int32_t %s_launch_tiled" % d["symbol"])
    d["cpad"] = " " * len("static int32_t %s_cublas" % d["symbol"])
    return d


__all__ = ["GpuDot", "gpu_dot_supported", "cublas_enabled", "SUPPORTED_DTYPES", "TILE"]

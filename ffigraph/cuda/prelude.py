"""The CUDA prelude pasted at the top of every generated ``.cu`` file, and the launcher contract.

A GPU node's C code (plain C, compiled by gcc with the rest of the graph) calls
one ``extern "C"`` *launcher* compiled by nvcc. Every launcher has the signature
``ffg_cu_launcher_fn`` below; it takes the same ABI structs as the library's
``P_run`` (inputs on device = CUDA, or on the CPU for a host-to-device
transfer), so a launcher can also be called on its own from any host::

  inputs       n_inputs tensors; the launcher checks each one (device, dtype,
               ndim, NULL pointers) and answers FFG_ERR_TYPE / FFG_ERR_ABI /
               FFG_ERR_VALUE with a message naming the input;
  outputs      n_outputs tensors whose ``shape`` and ``strides`` point at
               FFG_MAX_NDIM int64 each, owned by the caller; the launcher fills
               every field (strides in elements);
  owned        n_outputs pointers: the block each output lies in, to be
               released by the caller with the allocator of that output's
               device (NULL when the output owns nothing);
  host_alloc   where CPU memory comes from (NULL: malloc/free);
  device_alloc where CUDA memory comes from (NULL: cudaMalloc/cudaFree);
  err          the error record; a failing CUDA call gives FFG_ERR_CUDA with
               ``err->detail`` = the cudaError_t and CUDA's own name and
               string in the message.

The return value is FFG_OK or the FFG_ERR_* code also stored in ``err``.

Kernels run on the default stream. A launch error is caught at once
(``cudaGetLastError``); a fault inside a running kernel surfaces at the next
synchronising call (a device-to-host copy), which reports it.
"""
from __future__ import annotations

LAUNCHER_PARAMS = ("const FfgTensor *inputs, int32_t n_inputs, FfgTensor *outputs, void **owned, "
                   "int32_t n_outputs, const FfgAllocator *host_alloc, const FfgAllocator *device_alloc, "
                   "FfgError *err")


def launcher_prototype(symbol):
    """The C declaration of one launcher, for the gcc side of the graph."""
    return "int32_t %s(%s);" % (symbol, LAUNCHER_PARAMS)


CUDA_PRELUDE = r"""/* ---- ffigraph CUDA prelude: errors, memory, checks of ABI tensors ---- */
#include "ffigraph_abi.h"
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Launchers are hidden inside a graph library; tests build them visible to call one alone. */
#ifdef FFG_CU_EXPORT_LAUNCHERS
#define FFG_CU_LAUNCHER extern "C" __attribute__((visibility("default")))
#else
#define FFG_CU_LAUNCHER extern "C" __attribute__((visibility("hidden")))
#endif

#define FFG_CU_THREADS 256

static void ffg_cu_error(FfgError *err, int32_t code, int32_t input, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || err->code != FFG_OK)
        return;   /* the first error is the cause */
    err->code = code;
    err->input = input;
    va_start(ap, fmt);
    vsnprintf(err->message, FFG_ERROR_MESSAGE_SIZE, fmt, ap);
    va_end(ap);
}

/* 0 when status is cudaSuccess; otherwise FFG_ERR_CUDA in err, with CUDA's own words. */
static int32_t ffg_cu_check(FfgError *err, cudaError_t status, const char *what)
{
    if (status == cudaSuccess)
        return FFG_OK;
    cudaGetLastError();   /* clear a non-sticky error so the next call starts clean */
    ffg_cu_error(err, FFG_ERR_CUDA, -1, "%s: CUDA error %d (%s): %s", what, (int)status,
                 cudaGetErrorName(status), cudaGetErrorString(status));
    if (err != NULL && err->code == FFG_ERR_CUDA && err->detail == 0)
        err->detail = (int32_t)status;
    return FFG_ERR_CUDA;
}

static const char *ffg_cu_device_name(int32_t device_type)
{
    return device_type == FFG_DEVICE_CPU ? "CPU" : device_type == FFG_DEVICE_CUDA ? "CUDA" : "unknown";
}

/* Check one input tensor against what the launcher was generated for; 0 when it fits. */
static int32_t ffg_cu_check_tensor(FfgError *err, const char *who, const FfgTensor *t, int32_t index,
                                   int32_t device_type, int code, int bits, int ndim)
{
    int d;
    if (t == NULL) {
        ffg_cu_error(err, FFG_ERR_ABI, index, "%s: input %d is NULL", who, (int)index);
        return FFG_ERR_ABI;
    }
    if (t->device.device_type != device_type) {
        ffg_cu_error(err, FFG_ERR_TYPE, index, "%s: input %d is on device type %d (%s), expected %s", who,
                     (int)index, (int)t->device.device_type, ffg_cu_device_name(t->device.device_type),
                     ffg_cu_device_name(device_type));
        return FFG_ERR_TYPE;
    }
    if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
        ffg_cu_error(err, FFG_ERR_TYPE, index, "%s: input %d has dtype code %d bits %d lanes %d, expected "
                     "code %d bits %d", who, (int)index, (int)t->dtype.code, (int)t->dtype.bits,
                     (int)t->dtype.lanes, code, bits);
        return FFG_ERR_TYPE;
    }
    if (t->ndim != ndim) {
        ffg_cu_error(err, FFG_ERR_TYPE, index, "%s: input %d has %d dimensions, expected %d", who,
                     (int)index, (int)t->ndim, ndim);
        return FFG_ERR_TYPE;
    }
    if (ndim > 0 && t->shape == NULL) {
        ffg_cu_error(err, FFG_ERR_ABI, index, "%s: input %d has a NULL shape pointer", who, (int)index);
        return FFG_ERR_ABI;
    }
    for (d = 0; d < ndim; ++d) {
        if (t->shape[d] < 0) {
            ffg_cu_error(err, FFG_ERR_VALUE, index, "%s: input %d has a negative length on axis %d", who,
                         (int)index, d);
            return FFG_ERR_VALUE;
        }
    }
    if (t->data == NULL) {
        int64_t n = 1;
        for (d = 0; d < ndim; ++d)
            n *= t->shape[d];
        if (n > 0) {
            /* (ABI 2.1: a NULL pointer where the header asks for one is a misused call) */
            ffg_cu_error(err, FFG_ERR_ABI, index, "%s: input %d has a NULL data pointer", who, (int)index);
            return FFG_ERR_ABI;
        }
    }
    return FFG_OK;
}

/* The common checks of a launcher's arguments (counts and arrays). */
static int32_t ffg_cu_check_call(FfgError *err, const char *who, const FfgTensor *inputs, int32_t n_inputs,
                                 int32_t want_inputs, FfgTensor *outputs, void **owned, int32_t n_outputs,
                                 int32_t want_outputs)
{
    int32_t k;
    if (err == NULL)
        return FFG_ERR_ABI;
    if (n_inputs != want_inputs || n_outputs != want_outputs) {
        ffg_cu_error(err, FFG_ERR_ABI, -1, "%s: expected %d inputs and %d outputs, got %d and %d", who,
                     (int)want_inputs, (int)want_outputs, (int)n_inputs, (int)n_outputs);
        return FFG_ERR_ABI;
    }
    if ((inputs == NULL && n_inputs > 0) || outputs == NULL || owned == NULL) {
        ffg_cu_error(err, FFG_ERR_ABI, -1, "%s: the %s array is NULL", who,
                     inputs == NULL && n_inputs > 0 ? "inputs" : outputs == NULL ? "outputs" : "owned");
        return FFG_ERR_ABI;
    }
    for (k = 0; k < n_outputs; ++k) {
        owned[k] = NULL;
        if (outputs[k].shape == NULL || outputs[k].strides == NULL) {
            ffg_cu_error(err, FFG_ERR_ABI, -1, "%s: output %d has no shape/strides storage", who, (int)k);
            return FFG_ERR_ABI;
        }
    }
    return FFG_OK;
}

/* Device memory from the host's allocator, or cudaMalloc; NULL (and err set) on failure. */
static void *ffg_cu_alloc(const FfgAllocator *al, size_t nbytes, FfgError *err)
{
    void *p = NULL;
    if (nbytes == 0)
        nbytes = 1;   /* a distinct, releasable block even for an empty array */
    if (al != NULL) {
        p = al->alloc(al->ctx, nbytes);
        if (p == NULL)
            ffg_cu_error(err, FFG_ERR_NOMEM, -1, "the device allocator could not give %llu bytes",
                         (unsigned long long)nbytes);
        return p;
    }
    if (ffg_cu_check(err, cudaMalloc(&p, nbytes), "cudaMalloc"))
        return NULL;
    return p;
}

static void ffg_cu_free(const FfgAllocator *al, void *p)
{
    if (p == NULL)
        return;
    if (al != NULL)
        al->release(al->ctx, p);
    else
        cudaFree(p);
}

/* The graph's C side releases device blocks through this (its prototype is in GpuArrayType's support code). */
extern "C" __attribute__((visibility("hidden"))) void ffg_cuda_release(const FfgAllocator *al, void *p)
{
    ffg_cu_free(al, p);
}

static void *ffg_cu_host_alloc(const FfgAllocator *al, size_t nbytes, FfgError *err)
{
    void *p;
    if (nbytes == 0)
        nbytes = 1;
    p = al != NULL ? al->alloc(al->ctx, nbytes) : malloc(nbytes);
    if (p == NULL)
        ffg_cu_error(err, FFG_ERR_NOMEM, -1, "could not allocate %llu bytes of host memory",
                     (unsigned long long)nbytes);
    return p;
}

static void ffg_cu_host_free(const FfgAllocator *al, void *p)
{
    if (p == NULL)
        return;
    if (al != NULL)
        al->release(al->ctx, p);
    else
        free(p);
}

static int64_t ffg_cu_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < ndim; ++d)
        n *= shape[d];
    return n;
}

/* A C-contiguous device block for this shape, its byte size checked before any product is
   formed (a size past int64 is FFG_ERR_VALUE, "too big", never a wrapped small block). */
static void *ffg_cu_alloc_array(const FfgAllocator *al, int ndim, const int64_t *shape, size_t itemsize,
                                FfgError *err)
{
    int64_t n = (int64_t)itemsize;
    int d;
    for (d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return ffg_cu_alloc(al, 0, err);
    for (d = 0; d < ndim; ++d) {
        if (shape[d] < 0 || shape[d] > INT64_MAX / n) {
            ffg_cu_error(err, FFG_ERR_VALUE, -1, "the result is too big: its byte size does not fit in "
                         "64 bits (axis %d has length %lld)", d, (long long)shape[d]);
            return NULL;
        }
        n *= shape[d];
    }
    return ffg_cu_alloc(al, (size_t)n, err);
}

/* A tensor's strides in elements (C order when t->strides is NULL). */
static void ffg_cu_strides(const FfgTensor *t, int64_t *strides)
{
    int64_t s = 1;
    int d;
    for (d = t->ndim - 1; d >= 0; --d) {
        strides[d] = t->strides ? t->strides[d] : s;
        s *= t->shape[d];
    }
}

/* Describe a fresh C-contiguous output of this shape at data (strides in the caller's storage). */
static void ffg_cu_set_output(FfgTensor *o, void *data, int32_t device_type, int code, int bits, int ndim,
                              const int64_t *shape)
{
    int64_t s = 1;
    int d;
    o->data = data;
    o->device.device_type = device_type;
    o->device.device_id = 0;
    if (device_type == FFG_DEVICE_CUDA)
        cudaGetDevice(&o->device.device_id);
    o->ndim = ndim;
    o->dtype.code = (uint8_t)code;
    o->dtype.bits = (uint8_t)bits;
    o->dtype.lanes = 1;
    o->byte_offset = 0;
    for (d = ndim - 1; d >= 0; --d) {
        o->shape[d] = shape[d];
        o->strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* Blocks of FFG_CU_THREADS threads covering n items (grid-stride loops cover the rest). */
static unsigned int ffg_cu_blocks(int64_t n)
{
    int64_t b = (n + FFG_CU_THREADS - 1) / FFG_CU_THREADS;
    return (unsigned int)(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

/* After a launch: the launch's own error (bad configuration, no device, no driver). */
static int32_t ffg_cu_launched(FfgError *err, const char *what)
{
    return ffg_cu_check(err, cudaGetLastError(), what);
}
/* ---- end of CUDA prelude ---- */
"""

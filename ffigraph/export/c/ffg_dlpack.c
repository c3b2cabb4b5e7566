/*
 * ffg_dlpack.c -- DLPack tensors in and out of a compiled ffigraph graph (see ffg_dlpack.h).
 *
 * Two kinds of memory are managed here:
 *   - a taken input lives in an FfgDLPackInput: the producer's managed tensor
 *     and a reference count, because both the host and any output aliasing the
 *     input need it alive, and DLPack lets only one of them call its deleter;
 *   - a wrapped output lives in one malloc'd OutputCtx: the managed tensor the
 *     consumer sees, what its deleter must give back (an owned block and the
 *     allocator to release it with, or a reference to an input), and the copies
 *     of shape and strides. One block means one allocation that can fail, so a
 *     refusal never has anything to undo.
 */
#include "ffg_dlpack.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define DLP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define DLP_PRINTF(fmt, args)
#endif

struct FfgDLPackInput {
    FfgDLManagedTensorVersioned *managed;
    int refs;               /* the host's reference plus one per wrapped output aliasing it */
};

/* What a wrapped output's deleter has to give back besides the wrapper itself. */
enum { OUT_KEEPS_BLOCK, OUT_KEEPS_INPUT, OUT_KEEPS_NOTHING };

typedef struct OutputCtx {
    FfgDLManagedTensorVersioned managed;    /* handed out; its manager_ctx points back here */
    int keeps;                  /* OUT_KEEPS_* */
    void *base;                 /* OUT_KEEPS_BLOCK: the block to release (NULL: none was allocated) */
    int has_allocator;          /* OUT_KEEPS_BLOCK: release through allocator, else free() */
    FfgAllocator allocator;     /* a copy: the host's table may be gone by the time the deleter runs */
    FfgDLPackInput *input;      /* OUT_KEEPS_INPUT: the reference this output holds */
    int64_t dims[];             /* ndim shape entries, then ndim strides */
} OutputCtx;

/* ------------------------------------------------------------------ errors */

static void succeed(FfgError *err)
{
    if (err == NULL)
        return;
    err->code = FFG_OK;
    err->node = -1;
    err->input = -1;
    err->detail = 0;
    err->message[0] = '\0';
}

static int32_t fail(FfgError *err, int32_t code, int32_t input, const char *fmt, ...) DLP_PRINTF(4, 5);

static int32_t fail(FfgError *err, int32_t code, int32_t input, const char *fmt, ...)
{
    va_list args;

    if (err == NULL)
        return code;
    err->code = code;
    err->node = -1;             /* nothing here runs a node */
    err->input = input;
    err->detail = 0;
    va_start(args, fmt);
    vsnprintf(err->message, FFG_ERROR_MESSAGE_SIZE, fmt, args);
    va_end(args);
    return code;
}

/* ------------------------------------------------------------------ reference counts */

/*
 * With GCC's builtins the count is atomic: outputs aliasing one input are often
 * freed by a consumer on a thread of its own. Taking a reference needs no
 * ordering (the taker already holds one, so the count cannot reach 0 meanwhile);
 * giving one up is acquire-release, so that every owner's last use of the
 * memory happens before the thread that reaches 0 runs the producer's deleter.
 */
static void ref_take(FfgDLPackInput *h)
{
#if defined(__GNUC__)
    __atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
#else
    h->refs++;
#endif
}

/* Gives up one reference; returns how many are left. */
static int ref_give_up(FfgDLPackInput *h)
{
#if defined(__GNUC__)
    return __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL);
#else
    return --h->refs;
#endif
}

/* ------------------------------------------------------------------ inputs */

int32_t ffg_dlpack_take(FfgDLManagedTensorVersioned *managed, FfgDLPackInput **holder,
                        FfgTensor *as_input, FfgError *err)
{
    const FfgTensor *t;
    FfgDLPackInput *h;

    if (holder != NULL)
        *holder = NULL;         /* a caller that drops *holder after a refusal drops NULL */
    if (managed == NULL)
        return fail(err, FFG_ERR_ABI, -1, "ffg_dlpack_take: the managed tensor is NULL");
    if (holder == NULL || as_input == NULL)
        return fail(err, FFG_ERR_ABI, -1, "ffg_dlpack_take: %s is NULL (the tensor was not taken)",
                    holder == NULL ? "holder" : "as_input");
    /* Only the major is checked: DLPack promises that a new minor keeps the layout. */
    if (managed->version.major != FFG_DLPACK_MAJOR)
        return fail(err, FFG_ERR_ABI, -1,
                    "DLPack version %lu.%lu is not supported: only major version %d is read "
                    "(the tensor was not taken; its deleter is still the caller's to call)",
                    (unsigned long)managed->version.major, (unsigned long)managed->version.minor,
                    FFG_DLPACK_MAJOR);

    t = &managed->dl_tensor;
    if (t->ndim < 0 || t->ndim > FFG_MAX_NDIM)
        return fail(err, FFG_ERR_TYPE, -1,
                    "a DLPack tensor of %ld dimensions: the ABI takes 0 to %d (FFG_MAX_NDIM)",
                    (long)t->ndim, FFG_MAX_NDIM);
    if (t->dtype.lanes != 1)
        return fail(err, FFG_ERR_TYPE, -1,
                    "a DLPack tensor of dtype (code %u, bits %u, lanes %u): vector dtypes "
                    "(lanes != 1) are not supported",
                    (unsigned)t->dtype.code, (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
    if (t->ndim > 0 && t->shape == NULL)
        return fail(err, FFG_ERR_VALUE, -1, "a DLPack tensor whose shape is NULL but ndim is %ld",
                    (long)t->ndim);

    h = (FfgDLPackInput *)malloc(sizeof *h);
    if (h == NULL)
        return fail(err, FFG_ERR_NOMEM, -1, "out of memory for a DLPack input holder "
                    "(the tensor was not taken)");
    h->managed = managed;
    h->refs = 1;
    *as_input = *t;     /* shape and strides stay the producer's: they live as long as h */
    *holder = h;
    succeed(err);
    return FFG_OK;
}

void ffg_dlpack_drop(FfgDLPackInput *holder)
{
    FfgDLManagedTensorVersioned *managed;

    if (holder == NULL || ref_give_up(holder) != 0)
        return;
    managed = holder->managed;
    free(holder);
    if (managed->deleter != NULL)   /* DLPack allows a producer with nothing to free */
        managed->deleter(managed);
}

int ffg_dlpack_read_only(const FfgDLPackInput *holder)
{
    return holder != NULL && (holder->managed->flags & FFG_DLPACK_FLAG_READ_ONLY) != 0;
}

/* ------------------------------------------------------------------ outputs */

static void output_deleter(FfgDLManagedTensorVersioned *self)
{
    OutputCtx *ctx;

    if (self == NULL)
        return;
    ctx = (OutputCtx *)self->manager_ctx;
    switch (ctx->keeps) {
    case OUT_KEEPS_BLOCK:
        /* The ABI never passes NULL to release, so neither does this. */
        if (ctx->base != NULL) {
            if (ctx->has_allocator)
                ctx->allocator.release(ctx->allocator.ctx, ctx->base);
            else
                free(ctx->base);
        }
        break;
    case OUT_KEEPS_INPUT:
        ffg_dlpack_drop(ctx->input);
        break;
    default:
        break;          /* the host's own block: it frees that itself */
    }
    free(ctx);
}

/*
 * C-contiguous strides in elements, as NumPy and PyTorch write them: a
 * dimension of 0 counts as 1, so that no stride is 0 in an empty array. The
 * products are unsigned: they cannot overflow for an array that fits in memory,
 * and in an empty array with absurd other dimensions they wrap without undefined
 * behaviour (any strides describe an empty array).
 */
static void contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
    uint64_t step = 1;
    int32_t i;

    for (i = ndim - 1; i >= 0; i--) {
        strides[i] = (int64_t)step;
        step *= shape[i] > 1 ? (uint64_t)shape[i] : 1u;
    }
}

int32_t ffg_dlpack_wrap_output(const FfgOutput *out, const FfgAllocator *allocator,
                               FfgDLPackInput *const *inputs, int32_t n_inputs,
                               FfgDLManagedTensorVersioned **wrapped, FfgError *err)
{
    const FfgTensor *t;
    FfgDLPackInput *input = NULL;
    OutputCtx *ctx;
    int keeps;
    int32_t ndim;

    if (wrapped != NULL)
        *wrapped = NULL;
    if (out == NULL)
        return fail(err, FFG_ERR_ABI, -1, "ffg_dlpack_wrap_output: out is NULL");
    if (wrapped == NULL)
        return fail(err, FFG_ERR_ABI, -1, "ffg_dlpack_wrap_output: wrapped is NULL");

    t = &out->tensor;
    ndim = t->ndim;
    if (ndim < 0 || ndim > FFG_MAX_NDIM)
        return fail(err, FFG_ERR_TYPE, -1, "an output of %ld dimensions: the ABI has 0 to %d (FFG_MAX_NDIM)",
                    (long)ndim, FFG_MAX_NDIM);
    if (ndim > 0 && t->shape == NULL)
        return fail(err, FFG_ERR_VALUE, -1, "an output whose shape is NULL but ndim is %ld", (long)ndim);

    /* Decide who keeps what before allocating, so that a refusal leaves nothing behind. */
    if (out->alias_of == FFG_OUT_OWNED) {
        keeps = OUT_KEEPS_BLOCK;
        if (allocator != NULL && allocator->release == NULL)
            return fail(err, FFG_ERR_ABI, -1, "the allocator's release function is NULL: the output's "
                        "block could never be released");
        /* free() of device memory would corrupt the heap; refuse rather than guess cudaFree. */
        if (allocator == NULL && t->device.device_type != FFG_DEVICE_CPU)
            return fail(err, FFG_ERR_VALUE, -1,
                        "an owned output on device type %ld cannot be released with free(): pass "
                        "the allocator its block came from (for CUDA, the one given for "
                        "FFG_DEVICE_CUDA, or one whose release calls cudaFree)",
                        (long)t->device.device_type);
    } else if (out->alias_of == FFG_OUT_HOST_BUFFER) {
        keeps = OUT_KEEPS_NOTHING;
    } else if (out->alias_of >= 0) {
        keeps = OUT_KEEPS_INPUT;
        if (out->alias_of < n_inputs && inputs != NULL)
            input = inputs[out->alias_of];
        if (input == NULL)
            return fail(err, FFG_ERR_VALUE, out->alias_of,
                        "output aliases input slot %ld but no holder was given for it",
                        (long)out->alias_of);
    } else if (out->alias_of == FFG_OUT_NONE) {
        return fail(err, FFG_ERR_VALUE, -1, "output alias_of is %ld (FFG_OUT_NONE): the run that wrote the "
                    "slot failed, it holds no value", (long)out->alias_of);
    } else {
        return fail(err, FFG_ERR_VALUE, -1, "output alias_of is %ld: none of FFG_OUT_OWNED (-1), "
                    "FFG_OUT_HOST_BUFFER (-2) or an input slot", (long)out->alias_of);
    }

    ctx = (OutputCtx *)malloc(sizeof *ctx + 2 * (size_t)ndim * sizeof(int64_t));
    if (ctx == NULL)
        return fail(err, FFG_ERR_NOMEM, -1, "out of memory for a DLPack wrapper of %ld dimensions",
                    (long)ndim);
    memset(ctx, 0, sizeof *ctx);

    /* The state's shape and strides are overwritten by the next run: copy them. */
    if (ndim > 0) {
        memcpy(ctx->dims, t->shape, (size_t)ndim * sizeof(int64_t));
        if (t->strides != NULL)
            memcpy(ctx->dims + ndim, t->strides, (size_t)ndim * sizeof(int64_t));
        else
            contiguous_strides(ndim, ctx->dims, ctx->dims + ndim);
    }

    ctx->managed.version.major = FFG_DLPACK_MAJOR;
    ctx->managed.version.minor = FFG_DLPACK_MINOR;
    ctx->managed.manager_ctx = ctx;
    ctx->managed.deleter = output_deleter;
    ctx->managed.flags = 0;
    ctx->managed.dl_tensor = *t;
    /* A 0-d tensor still gets a non-NULL (empty) shape for consumers that test it; its strides
       stay NULL, which DLPack allows when there is nothing to stride. */
    ctx->managed.dl_tensor.shape = ctx->dims;
    ctx->managed.dl_tensor.strides = ndim > 0 ? ctx->dims + ndim : NULL;

    ctx->keeps = keeps;
    if (keeps == OUT_KEEPS_BLOCK) {
        ctx->base = out->base;
        if (allocator != NULL) {
            ctx->allocator = *allocator;
            ctx->has_allocator = 1;
        }
    } else if (keeps == OUT_KEEPS_INPUT) {
        ref_take(input);
        ctx->input = input;
        /* The view must not let its consumer write what the producer lent read-only. */
        if (ffg_dlpack_read_only(input))
            ctx->managed.flags |= FFG_DLPACK_FLAG_READ_ONLY;
    }

    *wrapped = &ctx->managed;
    succeed(err);
    return FFG_OK;
}

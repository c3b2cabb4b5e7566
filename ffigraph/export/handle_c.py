"""The handle layer of an exported graph: C appended to the graph's own translation unit.

The graph library (``P_run``) takes shared variables as ordinary input slots
and returns their new values as extra output slots; Python keeps the values.
A C host has no Python to keep them, so the export adds a handle that does:
it stores every shared variable, passes them to ``P_run`` after the host's
inputs, and on success swaps in the updated values. ``N_*`` are the calls a
host makes; the tables below the template are all that differs per graph.
"""
from __future__ import annotations

HANDLE_TEMPLATE = r"""
/* ==== the handle layer of the export %(N)s: shared variables live inside the handle ==== */
#include "%(N)s.h"   /* its prototypes, so the compiler checks that they match */

/* update j (output slot %(n_out)d + j of P_run) replaces shared variable update_target[j] */
static const int32_t %(N)s_update_target[%(u_alloc)d] = {%(targets)s};

typedef struct %(N)s_stored {
    void *base;                          /* the handle's block holding the value, or NULL */
    FfgTensor tensor;                    /* shape and strides point at the arrays below */
    int64_t shape[FFG_MAX_NDIM];
    int64_t strides[FFG_MAX_NDIM];
    int is_set;
} %(N)s_stored;

struct %(N)s_handle {
    void *state;                         /* the graph's own state (%(P)s_create) */
    const FfgAllocator *allocator;       /* NULL: malloc/free */
    FfgAllocator allocator_copy;
    int busy;                            /* set while a call runs: one handle, one thread at a time */
    FfgError error;                      /* the last call's error (%(N)s_errmsg) */
    %(N)s_stored shared[%(m_alloc)d];
    %(N)s_stored pending[%(u_alloc)d];   /* new values of the shared variables, before they commit */
    FfgTensor slots_in[%(in_alloc)d];    /* the host's inputs, then the shared values */
    FfgOutput slots_out[%(out_alloc)d];  /* the host's outputs, then the updates */
};

static void %(N)s_clear_error(FfgError *e)
{
    e->code = FFG_OK;
    e->node = -1;
    e->input = -1;
    e->detail = 0;
    e->message[0] = '\0';
}

/* Every call reports into the handle's record, then copies it to the caller's (if given). */
static int32_t %(N)s_report(%(N)s_handle *h, FfgError *err)
{
    if (err != NULL && err != &h->error)
        *err = h->error;
    return h->error.code;
}

static int32_t %(N)s_no_handle(const char *call, FfgError *err)
{
    if (err != NULL) {
        %(N)s_clear_error(err);
        ffg_set_error(err, FFG_ERR_ABI, -1, "%%s: the handle is NULL (%(N)s_open failed or was not called)", call);
    }
    return FFG_ERR_ABI;
}

/* Claim the handle for one call; a second thread (or a re-entrant call) is refused, not raced. */
static int %(N)s_enter(%(N)s_handle *h, const char *call, FfgError *err)
{
    if (__atomic_exchange_n(&h->busy, 1, __ATOMIC_ACQUIRE)) {
        if (err != NULL) {
            %(N)s_clear_error(err);
            ffg_set_error(err, FFG_ERR_RUNTIME, -1, "%%s: this handle is busy with another call; use one handle "
                          "per thread (%(N)s_open another)", call);
        }
        return -1;
    }
    %(N)s_clear_error(&h->error);
    return 0;
}

static int32_t %(N)s_leave(%(N)s_handle *h, FfgError *err)
{
    int32_t code = %(N)s_report(h, err);
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    return code;
}

/* Copy t's shape and strides into arrays of our own; NULL strides mean C order: write them out. */
static void %(N)s_copy_layout(const FfgTensor *t, int64_t *shape, int64_t *strides)
{
    int64_t stride = 1;
    int d;
    for (d = t->ndim - 1; d >= 0; --d) {
        shape[d] = t->shape[d];
        strides[d] = t->strides ? t->strides[d] : stride;
        stride *= t->shape[d] > 0 ? t->shape[d] : 1;
    }
}

/* Point a stored tensor's shape and strides at its own arrays (copying them from t). */
static void %(N)s_store_layout(%(N)s_stored *s, const FfgTensor *t, void *base)
{
    s->tensor = *t;
    %(N)s_copy_layout(t, s->shape, s->strides);
    s->tensor.shape = s->shape;
    s->tensor.strides = s->strides;
    s->base = base;
    s->is_set = 1;
}

/* A fresh C-contiguous copy of t in s, from the handle's allocator; 0 on success. */
static int %(N)s_store_copy(%(N)s_handle *h, %(N)s_stored *s, const FfgTensor *t)
{
    ffg_array src, dst;
    size_t itemsize = (size_t)(t->dtype.bits / 8);
    src.data = (char *)t->data + t->byte_offset;
    %(N)s_copy_layout(t, src.shape, src.strides);
    dst.offered = NULL;
    dst.in_offered = 0;
    if (ffg_copy_array(&dst, &src, t->ndim, itemsize, h->allocator, &h->error))
        return -1;
    s->tensor = *t;
    s->tensor.data = dst.data;
    s->tensor.byte_offset = 0;
    s->tensor.strides = NULL;
    s->tensor.shape = src.shape;
    %(N)s_store_layout(s, &s->tensor, dst.owned);
    return 0;
}

/* Check a value offered for shared variable j against its slot (dtype, ndim, static shape). */
static int %(N)s_check_shared(%(N)s_handle *h, int32_t j, const FfgTensor *t)
{
    const FfgSlot *slot = &ffg_input_slots[%(n_in)d + j];
    int d;
    if (t == NULL) {
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "shared variable %%s: the value is NULL", slot->name);
        return -1;
    }
    if (t->device.device_type != FFG_DEVICE_CPU || t->dtype.code != slot->dtype.code
        || t->dtype.bits != slot->dtype.bits || t->dtype.lanes != 1 || t->ndim != slot->ndim) {
        char want[32], got[32];
        ffg_set_error(&h->error, FFG_ERR_TYPE, -1, "shared variable %%s: expected a CPU %%s array with %%d "
                      "dimensions, got device %%d, %%s, %%d dimensions", slot->name,
                      ffg_dtype_name(slot->dtype.code, slot->dtype.bits, want, sizeof want), (int)slot->ndim,
                      (int)t->device.device_type, ffg_dtype_name(t->dtype.code, t->dtype.bits, got, sizeof got),
                      (int)t->ndim);
        return -1;
    }
    if (t->ndim > 0 && t->shape == NULL) {
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "shared variable %%s: the shape pointer is NULL", slot->name);
        return -1;
    }
    for (d = 0; d < t->ndim; ++d) {
        if (t->shape[d] < 0 || (slot->static_shape[d] >= 0 && t->shape[d] != slot->static_shape[d])) {
            ffg_set_error(&h->error, FFG_ERR_VALUE, -1, "shared variable %%s: length %%lld on axis %%d does not "
                          "fit its type", slot->name, (long long)t->shape[d], d);
            return -1;
        }
    }
    if (ffg_size_overflows(t->ndim, t->shape, t->dtype.bits / 8)) {
        ffg_set_error(&h->error, FFG_ERR_VALUE, -1, "shared variable %%s: the shape is too large (its size in "
                      "bytes overflows int64)", slot->name);
        return -1;
    }
    if (t->data == NULL && ffg_size(t->ndim, t->shape) > 0) {
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "shared variable %%s: the data pointer is NULL", slot->name);
        return -1;
    }
    return 0;
}

/* Give back an owned output block to where it came from: %(release_doc)s. */
static void %(N)s_release_block(%(N)s_handle *h, FfgOutput *o)
{
%(release_body)s}

FFG_EXPORT uint32_t %(N)s_abi_version(void)
{
    return FFG_ABI_VERSION;
}

FFG_EXPORT const FfgDescription *%(N)s_describe(void)
{
    return &ffg_description;
}

FFG_EXPORT %(N)s_handle *%(N)s_open(const FfgAllocator *allocator, FfgError *err)
{
    %(N)s_handle *h;
    FfgError local;
    FfgError *e = err ? err : &local;
    %(N)s_clear_error(e);
    if (allocator != NULL && (allocator->alloc == NULL || allocator->release == NULL)) {
        ffg_set_error(e, FFG_ERR_ABI, -1, "%(N)s_open: the allocator must have both alloc and release");
        return NULL;
    }
    h = (%(N)s_handle *)(allocator ? allocator->alloc(allocator->ctx, sizeof *h) : malloc(sizeof *h));
    if (h == NULL) {
        ffg_set_error(e, FFG_ERR_NOMEM, -1, "%(N)s_open: could not allocate the handle");
        return NULL;
    }
    memset(h, 0, sizeof *h);
    if (allocator) {
        h->allocator_copy = *allocator;
        h->allocator = &h->allocator_copy;
    }
    %(N)s_clear_error(&h->error);
    h->state = %(P)s_create_state(h->allocator, e);
    if (h->state == NULL) {
        ffg_release(h->allocator, h);
        return NULL;
    }
    return h;
}

FFG_EXPORT void %(N)s_close(%(N)s_handle *h)
{
    int j;
    const FfgAllocator *allocator;
    if (h == NULL)
        return;
    allocator = h->allocator;
    for (j = 0; j < %(m)d; ++j)
        ffg_release(allocator, h->shared[j].base);
    %(P)s_destroy(h->state);
    ffg_release(allocator, h);
}

FFG_EXPORT const char *%(N)s_errmsg(const %(N)s_handle *h)
{
    return h ? h->error.message : "the handle is NULL";
}

FFG_EXPORT void %(N)s_release(%(N)s_handle *h, FfgOutput *output)
{
    if (h == NULL || output == NULL)
        return;
    if (output->alias_of == FFG_OUT_OWNED)
        %(N)s_release_block(h, output);
    output->base = NULL;
    output->tensor.data = NULL;
}

FFG_EXPORT int32_t %(N)s_shared_index(const char *name)
{
    int32_t j;
    for (j = 0; name != NULL && j < %(m)d; ++j)
        if (strcmp(ffg_input_slots[%(n_in)d + j].name, name) == 0)
            return j;
    return -1;
}

FFG_EXPORT const char *%(N)s_shared_name(int32_t index)
{
    return (index >= 0 && index < %(m)d) ? ffg_input_slots[%(n_in)d + index].name : NULL;
}

/* Put src's value in dst (shape and strides re-pointed at dst's own arrays); dst's old block is freed. */
static void %(N)s_replace(%(N)s_handle *h, %(N)s_stored *dst, const %(N)s_stored *src)
{
    ffg_release(h->allocator, dst->base);
    *dst = *src;
    dst->tensor.shape = dst->shape;
    dst->tensor.strides = dst->strides;
}

/* 0 when index names a shared variable, else the error is set. */
static int %(N)s_check_index(%(N)s_handle *h, int32_t index, const char *call)
{
    if (index >= 0 && index < %(m)d)
        return 0;
    ffg_set_error(&h->error, FFG_ERR_INDEX, -1, "%%s: index %%d is out of range (%(m)d shared variables)",
                  call, (int)index);
    return -1;
}

FFG_EXPORT int32_t %(N)s_set_shared(%(N)s_handle *h, int32_t index, const FfgTensor *value, FfgError *err)
{
    %(N)s_stored fresh;
    if (h == NULL)
        return %(N)s_no_handle("%(N)s_set_shared", err);
    if (%(N)s_enter(h, "%(N)s_set_shared", err))
        return FFG_ERR_RUNTIME;
    if (%(N)s_check_index(h, index, "%(N)s_set_shared") == 0 && %(N)s_check_shared(h, index, value) == 0
        && %(N)s_store_copy(h, &fresh, value) == 0)
        %(N)s_replace(h, &h->shared[index], &fresh);
    return %(N)s_leave(h, err);
}

FFG_EXPORT int32_t %(N)s_get_shared(%(N)s_handle *h, int32_t index, FfgTensor *view, FfgError *err)
{
    if (h == NULL)
        return %(N)s_no_handle("%(N)s_get_shared", err);
    if (%(N)s_enter(h, "%(N)s_get_shared", err))
        return FFG_ERR_RUNTIME;
    if (view == NULL)
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "%(N)s_get_shared: view is NULL");
    else if (%(N)s_check_index(h, index, "%(N)s_get_shared") == 0) {
        if (h->shared[index].is_set)
            *view = h->shared[index].tensor;
        else
            ffg_set_error(&h->error, FFG_ERR_VALUE, -1, "%(N)s_get_shared: shared variable %%s has no value yet",
                          %(N)s_shared_name(index));
    }
    return %(N)s_leave(h, err);
}

/* Check the call's arguments and fill the slots P_run takes; 0 when all is well. */
static int %(N)s_prepare(%(N)s_handle *h, const FfgTensor *inputs, int32_t n_inputs,
                         const FfgOutput *outputs, int32_t n_outputs)
{
    int32_t k;
    if (n_inputs != %(n_in)d || n_outputs != %(n_out)d) {
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "%(N)s_run: expected %(n_in)d inputs and %(n_out)d outputs, got "
                      "%%d and %%d", (int)n_inputs, (int)n_outputs);
        return -1;
    }
    if ((inputs == NULL && n_inputs > 0) || (outputs == NULL && n_outputs > 0)) {
        ffg_set_error(&h->error, FFG_ERR_ABI, -1, "%(N)s_run: the %%s array is NULL", inputs ? "outputs" : "inputs");
        return -1;
    }
    for (k = 0; k < %(m)d; ++k) {
        if (!h->shared[k].is_set) {
            ffg_set_error(&h->error, FFG_ERR_VALUE, %(n_in)d + k, "%(N)s_run: shared variable %%s has no value; "
                          "set it with %(N)s_set_shared", %(N)s_shared_name(k));
            return -1;
        }
    }
    for (k = 0; k < n_inputs; ++k)
        h->slots_in[k] = inputs[k];
    for (k = 0; k < %(m)d; ++k)
        h->slots_in[%(n_in)d + k] = h->shared[k].tensor;
    for (k = 0; k < n_outputs; ++k)
        h->slots_out[k] = outputs[k];   /* keeps the host's offered blocks */
    memset(h->slots_out + n_outputs, 0, sizeof(FfgOutput) * %(u)d);
    return 0;
}

/* After a successful P_run: outputs that view a shared value get their own copy, since the
   update that follows may free that memory; then every update is staged and committed. */
static int %(N)s_finish(%(N)s_handle *h)
{
    int32_t k, staged = 0;
    for (k = 0; k < %(n_out)d; ++k) {
        FfgOutput *o = &h->slots_out[k];
        if (o->alias_of >= %(n_in)d) {
            %(N)s_stored copy;
            if (%(N)s_store_copy(h, &copy, &o->tensor))
                goto fail;
            o->base = copy.base;
            o->tensor.data = copy.base;
            o->tensor.byte_offset = 0;
            o->tensor.strides = NULL;
            o->alias_of = FFG_OUT_OWNED;
        }
    }
    for (k = 0; k < %(u)d; ++k, ++staged) {
        FfgOutput *o = &h->slots_out[%(n_out)d + k];
        if (o->alias_of == FFG_OUT_OWNED && o->base != NULL) {
            %(N)s_store_layout(&h->pending[k], &o->tensor, o->base);   /* adopt the block: no copy */
            o->base = NULL;
        } else if (%(N)s_store_copy(h, &h->pending[k], &o->tensor)) {
            goto fail;
        }
    }
    for (k = 0; k < %(u)d; ++k)   /* commit: nothing below can fail */
        %(N)s_replace(h, &h->shared[%(N)s_update_target[k]], &h->pending[k]);
    return 0;
fail:
    while (staged-- > 0)
        ffg_release(h->allocator, h->pending[staged].base);
    for (k = 0; k < %(n_out)d + %(u)d; ++k)
        if (h->slots_out[k].alias_of == FFG_OUT_OWNED)
            %(N)s_release_block(h, &h->slots_out[k]);
    return -1;
}

FFG_EXPORT int32_t %(N)s_run(%(N)s_handle *h, const FfgTensor *inputs, int32_t n_inputs,
                              FfgOutput *outputs, int32_t n_outputs, FfgError *err)
{
    int32_t k;
    if (h == NULL)
        return %(N)s_no_handle("%(N)s_run", err);
    if (%(N)s_enter(h, "%(N)s_run", err))
        return FFG_ERR_RUNTIME;
    if (%(N)s_prepare(h, inputs, n_inputs, outputs, n_outputs) == 0
        && %(P)s_run(h->state, h->slots_in, %(n_in)d + %(m)d, h->slots_out, %(n_out)d + %(u)d, &h->error) == FFG_OK
        && %(N)s_finish(h) == 0) {
        for (k = 0; k < n_outputs; ++k)
            outputs[k] = h->slots_out[k];
    } else if (outputs != NULL && n_outputs == %(n_out)d) {
        ffg_clear_outputs(outputs, n_outputs, 0, NULL);   /* no value, nothing to release (FFG_OUT_NONE) */
    }
    return %(N)s_leave(h, err);
}
"""


RELEASE_CPU = """    ffg_release(h->allocator, o->base);
"""

# A GPU graph's outputs may lie in CUDA memory: those blocks go to cudaFree (through the graph's
# CUDA object's ffg_cuda_release, declared by GpuArrayType's support code), never to free().
RELEASE_CUDA = """    if (o->tensor.device.device_type == FFG_DEVICE_CUDA)
        ffg_cuda_release(NULL, o->base);   /* the handle sets no device allocator: cudaFree */
    else
        ffg_release(h->allocator, o->base);
"""

def handle_source(name, prefix, n_inputs, n_shared, n_outputs, update_targets, cuda=False):
    """The handle layer's C for export ``name`` over the graph library with symbol ``prefix``;
    ``cuda``: the graph has a CUDA part, so outputs on the device are released with cudaFree."""
    n_updates = len(update_targets)
    return HANDLE_TEMPLATE % dict(
        release_doc="CPU blocks to the handle's allocator, CUDA blocks to cudaFree" if cuda
        else "the handle's allocator",
        release_body=RELEASE_CUDA if cuda else RELEASE_CPU,
        N=name, P=prefix, n_in=n_inputs, m=n_shared, n_out=n_outputs, u=n_updates,
        targets=", ".join(str(t) for t in update_targets) or "0",
        m_alloc=max(n_shared, 1), u_alloc=max(n_updates, 1),
        in_alloc=max(n_inputs + n_shared, 1), out_alloc=max(n_outputs + n_updates, 1),
    )

"""The small C runtime of every generated library.

It gives generated code and user ops one array local (``ffg_array``), error
reporting into the ABI error record, and allocation through the host's
allocator. Only the C standard library is used.
"""
import re

# The types every library's code uses (ffg_array), pasted into every source.
RUNTIME_TYPES = r"""
/* ---- ffigraph runtime: array locals, errors, allocation ---- */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A C local holding one array value: element 0 at data, strides in elements. */
typedef struct ffg_array {
    char *data;
    int64_t shape[FFG_MAX_NDIM];
    int64_t strides[FFG_MAX_NDIM];
    void *owned;          /* block to release in cleanup (NULL when borrowed or handed over) */
    char *offered;        /* for an output: the host's block, used when the result fits (else NULL) */
    int64_t offered_bytes;
    int in_offered;       /* data lies in the offered block */
} ffg_array;

"""

# The runtime's functions. Each is "FFG_RT": static where the source is built alone (an export's
# `make library`, a private build), a hidden symbol of the library where the compile cache links
# them from one object built once per compiler and flags (RUNTIME_OBJECT_C, cache.runtime_object):
# built at -O3 into every library, they took about a tenth of its compile time (6-19 % over 30
# libraries of the test suite). The functions every call runs per input and output stay in the
# source (RUNTIME_PER_CALL).
RUNTIME_FUNCTIONS = r"""FFG_RT void ffg_set_error(FfgError *err, int32_t code, int32_t input, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || err->code != FFG_OK)
        return;   /* keep the first error: it is the cause */
    err->code = code;
    err->input = input;
    va_start(ap, fmt);
    vsnprintf(err->message, FFG_ERROR_MESSAGE_SIZE, fmt, ap);
    va_end(ap);
}

/* Room kept for the "in node #N" line when the lines of nested graphs fill the message. */
#define FFG_NODE_LINE_ROOM 96

/* Called by every fail path of the exported graph: records which node failed (if the op did not
 * say why, says so), the one input slot the node depends on when the failure is about values, and
 * the node's text on a line after the cause, cut to the room left (the cause is never cut for it;
 * the "in inner node" lines of a nested graph are, so that this line is always there). */
FFG_RT void ffg_mark_failure(FfgError *err, int32_t node, int32_t input, const char *where)
{
    size_t used, room;
    if (err->code == FFG_OK)
        ffg_set_error(err, FFG_ERR_RUNTIME, -1, "%s failed without an error message", where);
    if (node < 0 || err->node >= 0)
        return;   /* not a node, or already said */
    err->node = node;
    if (err->input < 0 && input >= 0 && (err->code == FFG_ERR_TYPE || err->code == FFG_ERR_VALUE
                                         || err->code == FFG_ERR_INDEX || err->code == FFG_ERR_LINALG))
        err->input = input;
    used = strlen(err->message);
    if (FFG_ERROR_MESSAGE_SIZE - used < FFG_NODE_LINE_ROOM) {
        const char *inner = strstr(err->message, "\n  in inner node: ");
        size_t keep = FFG_ERROR_MESSAGE_SIZE - FFG_NODE_LINE_ROOM;
        if (inner != NULL) {
            if (keep < (size_t)(inner - err->message))
                keep = (size_t)(inner - err->message);
            if (keep < used) {
                err->message[keep] = '\0';
                used = keep;
            }
        }
    }
    room = FFG_ERROR_MESSAGE_SIZE - used;
    if (room > 24)
        snprintf(err->message + used, room, "\n  in node #%d: %s", (int)node, where);
}

/* The fail path of a node of a nested graph (a scan's step function): its index means nothing to
 * a host (FfgDescription.nodes lists the exported graph's nodes only), so it is named by its text
 * on an "in inner node" line (one per level of nesting, innermost first); the node that runs the
 * nested graph adds the "in node #N" line and sets err->node. The input slot is the nested graph's
 * own: not reported either. */
FFG_RT void ffg_mark_inner_failure(FfgError *err, int32_t node, int32_t input, const char *where)
{
    size_t used, room;
    (void)input;
    if (err->code == FFG_OK)
        ffg_set_error(err, FFG_ERR_RUNTIME, -1, "%s failed without an error message", where);
    if (node < 0)
        return;   /* not a node (an input, an output): the node running this graph says the rest */
    used = strlen(err->message);
    room = FFG_ERROR_MESSAGE_SIZE - used;
    if (room > 24)
        snprintf(err->message + used, room, "\n  in inner node: %s", where);
}

/* P_create's options: a host of this major, with a struct it filled in. A host of ABI 1 passed a
 * FfgAllocator pointer (whose first bytes are a function's address) or NULL here. Only the fields
 * options->struct_size covers are read (the 8 bytes of struct_size and abi_version always): a field
 * past it is absent, its default used, so a host of an older minor (a smaller struct) is never read
 * past its struct, and fields of a newer minor are ignored. *allocator and *device_allocator get
 * the allocators given (NULL for none); 0 when the options can be used. */
FFG_RT int ffg_read_create_options(const FfgCreateOptions *options, FfgError *err, const FfgAllocator **allocator,
                                   const FfgAllocator **device_allocator)
{
    *allocator = NULL;
    *device_allocator = NULL;
    if (options == NULL) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "create: options is NULL; this library speaks ABI %d.%d, whose "
                      "create takes an FfgCreateOptions (FFG_CREATE_OPTIONS_INIT). A host built against an "
                      "older ffigraph_abi.h must be rebuilt", FFG_ABI_MAJOR, FFG_ABI_MINOR);
        return -1;
    }
    if (options->struct_size < 8 || options->abi_version / 1000 != FFG_ABI_MAJOR) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "create: the host speaks ABI version %u (options of %u bytes), "
                      "this library speaks ABI %d.%d: rebuild the host against this library's ffigraph_abi.h "
                      "(an ABI 1 host passes an FfgAllocator here)", (unsigned)options->abi_version,
                      (unsigned)options->struct_size, FFG_ABI_MAJOR, FFG_ABI_MINOR);
        return -1;
    }
    if (FFG_HAS_FIELD(options, FfgCreateOptions, allocator))
        *allocator = options->allocator;
    if (FFG_HAS_FIELD(options, FfgCreateOptions, device_allocator))
        *device_allocator = options->device_allocator;
    if (*allocator != NULL && ((*allocator)->alloc == NULL || (*allocator)->release == NULL)) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "create: options->allocator has a NULL %s function",
                      (*allocator)->alloc == NULL ? "alloc" : "release");
        return -1;
    }
    if (*device_allocator != NULL && ((*device_allocator)->alloc == NULL || (*device_allocator)->release == NULL)) {
        ffg_set_error(err, FFG_ERR_ABI, -1, "create: options->device_allocator has a NULL %s function",
                      (*device_allocator)->alloc == NULL ? "alloc" : "release");
        return -1;
    }
    return 0;
}

FFG_RT void ffg_format_shape(char *buf, size_t size, int ndim, const int64_t *shape);

/* The byte size of a C-contiguous array of this shape, in *nbytes: 0 on success, -1 when a
 * length is negative, 1 when the size does not fit in an int64 (or a size_t). Every product
 * is checked before it is formed, so nothing wraps. */
FFG_RT int ffg_array_nbytes(int ndim, const int64_t *shape, size_t itemsize, int64_t *nbytes)
{
    int64_t n = itemsize > 0 ? (int64_t)itemsize : 1;
    int d;
    *nbytes = 0;
    if (itemsize > (size_t)INT64_MAX)
        return 1;
    for (d = 0; d < ndim; ++d)
        if (shape[d] < 0)
            return -1;
    for (d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return 0;   /* empty, whatever the other lengths */
    for (d = 0; d < ndim; ++d) {
        if (shape[d] > INT64_MAX / n)
            return 1;
        n *= shape[d];
    }
    if ((uint64_t)n > (uint64_t)SIZE_MAX)
        return 1;       /* 32-bit hosts */
    *nbytes = n;
    return 0;
}

/* 1 when the byte size of an array of this (non-negative) shape does not fit in an int64. */
FFG_RT int ffg_size_overflows(int ndim, const int64_t *shape, int64_t itemsize)
{
    int64_t nbytes;
    return ffg_array_nbytes(ndim, shape, itemsize > 0 ? (size_t)itemsize : 1, &nbytes) > 0;
}

/* Give a a fresh C-contiguous block of the given shape; 0 on success. A shape whose size
 * overflows is FFG_ERR_VALUE (the "array is too big" of array libraries), a block the allocator refuses
 * FFG_ERR_NOMEM; both messages give the shape, the item size and the bytes asked for. */
FFG_RT int ffg_alloc_array(ffg_array *a, int ndim, const int64_t *shape, size_t itemsize,
                           const FfgAllocator *al, FfgError *err)
{
    int64_t stride = 1, nbytes;
    int d, status = ffg_array_nbytes(ndim, shape, itemsize, &nbytes);
    a->owned = NULL;
    a->in_offered = 0;
    if (status != 0) {
        char s[160];
        ffg_format_shape(s, sizeof s, ndim, shape);
        if (status < 0)
            ffg_set_error(err, FFG_ERR_VALUE, -1, "cannot allocate an array of shape %s: negative dimensions "
                          "are not allowed", s);
        else
            ffg_set_error(err, FFG_ERR_VALUE, -1, "cannot allocate an array of shape %s of %lld-byte items: "
                          "the array is too big (its size in bytes overflows %s)", s, (long long)itemsize,
                          sizeof(size_t) < sizeof(int64_t) ? "size_t" : "int64");
        return -1;
    }
    for (d = ndim - 1; d >= 0; --d) {
        a->shape[d] = shape[d];
        a->strides[d] = stride;
        stride *= shape[d] > 0 ? shape[d] : 1;   /* no overflow: the product of these fits (above) */
    }
    if (a->offered != NULL && nbytes <= a->offered_bytes
        && (uintptr_t)a->offered % (itemsize < 8 ? (itemsize ? itemsize : 1) : 8) == 0) {
        /* an output, and the host's block fits (and is aligned for the items): write there,
           nothing to hand over; a misaligned block is declined (the result is then owned) */
        a->data = a->offered;
        a->in_offered = 1;
        return 0;
    }
    a->owned = ffg_malloc(al, (size_t)nbytes);
    if (a->owned == NULL) {
        static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double amount = (double)nbytes;
        int unit = 0;
        char s[160];
        while (amount >= 1024.0 && unit < 6) {
            amount /= 1024.0;
            ++unit;
        }
        ffg_format_shape(s, sizeof s, ndim, shape);
        ffg_set_error(err, FFG_ERR_NOMEM, -1, "unable to allocate %.2f %s (%lld bytes) for an array of shape %s "
                      "of %lld-byte items", amount, units[unit], (long long)nbytes, s, (long long)itemsize);
        a->data = NULL;
        return -1;
    }
    a->data = (char *)a->owned;
    return 0;
}

FFG_RT void ffg_format_shape(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = 0;
    int d;
    used += (size_t)snprintf(buf + used, size - used, "(");
    for (d = 0; d < ndim && used < size; ++d)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (ndim == 1 && used < size)
        used += (size_t)snprintf(buf + used, size - used, ",");
    if (used < size)
        snprintf(buf + used, size - used, ")");
}

FFG_RT const char *ffg_dtype_name(int code, int bits, char *buf, size_t size)
{
    static const char *kinds[] = {"int", "uint", "float", "?", "bfloat", "complex", "bool"};
    const char *kind = (code >= 0 && code <= 6) ? kinds[code] : "?";
    if (code == FFG_DTYPE_BOOL)
        snprintf(buf, size, "bool");
    else
        snprintf(buf, size, "%s%d", kind, bits);
    return buf;
}

FFG_RT int ffg_is_c_contiguous(const ffg_array *a, int ndim)
{
    int64_t expected = 1;
    int d;
    for (d = ndim - 1; d >= 0; --d) {
        if (a->shape[d] != 1 && a->strides[d] != expected)
            return 0;
        expected *= a->shape[d];
    }
    return 1;
}

/* Copy src (any strides) into a fresh C-contiguous block owned by dst. */
FFG_RT int ffg_copy_array(ffg_array *dst, const ffg_array *src, int ndim, size_t itemsize,
                          const FfgAllocator *al, FfgError *err)
{
    int64_t idx[FFG_MAX_NDIM];
    int64_t n = ffg_size(ndim, src->shape), k;
    int d;
    if (ffg_alloc_array(dst, ndim, src->shape, itemsize, al, err))
        return -1;
    if (ffg_is_c_contiguous(src, ndim)) {
        if (n > 0)
            memcpy(dst->data, src->data, (size_t)n * itemsize);
        return 0;
    }
    for (d = 0; d < ndim; ++d)
        idx[d] = 0;
    for (k = 0; k < n; ++k) {
        int64_t off = 0;
        for (d = 0; d < ndim; ++d)
            off += idx[d] * src->strides[d];
        memcpy(dst->data + k * (int64_t)itemsize, src->data + off * (int64_t)itemsize, itemsize);
        for (d = ndim - 1; d >= 0; --d) {
            if (++idx[d] < src->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}

/* For scalar Types (like the seed's Double): read a 0-d slot, publish a 0-d value. */
FFG_RT int ffg_read_scalar(const FfgTensor *t, int32_t slot, const char *name, int code, int bits,
                           void *value, FfgError *err)
{
    if (t->data == NULL) {
        ffg_set_error(err, FFG_ERR_ABI, slot, "input %s: the data pointer is NULL", name);
        return -1;
    }
    if (t->device.device_type != FFG_DEVICE_CPU || t->dtype.code != code || t->dtype.bits != bits
        || t->ndim != 0) {
        ffg_set_error(err, FFG_ERR_TYPE, slot, "input %s: expected a 0-d CPU value of dtype code %d, %d bits",
                      name, code, bits);
        return -1;
    }
    memcpy(value, (const char *)t->data + t->byte_offset, (size_t)bits / 8);
    return 0;
}

FFG_RT int ffg_publish_scalar(FfgOutput *o, const void *value, int code, int bits,
                              const FfgAllocator *al, FfgError *err)
{
    ffg_array a;
    a.offered = NULL;
    a.in_offered = 0;
    if (ffg_alloc_array(&a, 0, NULL, (size_t)bits / 8, al, err))
        return -1;
    memcpy(a.data, value, (size_t)bits / 8);
    ffg_publish(o, &a, code, bits, 0, NULL, NULL, -1);
    return 0;
}
"""


# The functions every call runs once per input and output (checking an input's type and layout,
# handing an output over): static in every source, so that gcc specialises them at each call
# site for the slot's dtype, rank and static shape (linked from the object instead, a call with
# 50 inputs cost 30 % more).
RUNTIME_PER_CALL = r"""/* Every field reset, at the start of each call that takes an error record. */
static void ffg_clear_error(FfgError *err)
{
    if (err == NULL)
        return;
    err->code = FFG_OK;
    err->node = -1;
    err->input = -1;
    err->detail = 0;
    memset(err->message, 0, FFG_ERROR_MESSAGE_SIZE);
}

/* The bytes [*lo, *hi) an input's elements may occupy; 0 when it has none, -1 when it cannot be
 * told (a malformed tensor, which extraction refuses later). Runs on every call that offers a
 * block, so the overflow checks are the compiler's (a multiply and a flag), not divisions. */
static int ffg_extent(const FfgTensor *t, uintptr_t *lo, uintptr_t *hi)
{
    int64_t itemsize = t->dtype.bits / 8 ? (int64_t)(t->dtype.bits / 8) : 1, below = 0, above = 0, step;
    uintptr_t base;
    int d;
    if (t->ndim < 0 || t->ndim > FFG_MAX_NDIM || (t->ndim > 0 && t->shape == NULL))
        return -1;
    for (d = 0; d < t->ndim; ++d) {
        if (t->shape[d] <= 0)
            return t->shape[d] == 0 ? 0 : -1;
    }
    if (t->data == NULL)
        return -1;
    base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    if (t->strides == NULL) {   /* C order: the elements are one run */
        int64_t size = 1;
        for (d = 0; d < t->ndim; ++d)
            if (__builtin_mul_overflow(size, t->shape[d], &size))
                return -1;
        if (__builtin_mul_overflow(size - 1, itemsize, &above))
            return -1;
    }
    for (d = 0; t->strides != NULL && d < t->ndim; ++d) {
        if (t->shape[d] == 1 || t->strides[d] == 0)
            continue;
        if (__builtin_mul_overflow(t->strides[d], t->shape[d] - 1, &step)
                || __builtin_mul_overflow(step, itemsize, &step)
                || (step < 0 ? __builtin_sub_overflow(below, step, &below) : __builtin_add_overflow(above, step, &above)))
            return -1;
    }
    *lo = base - (uintptr_t)below;
    *hi = base + (uintptr_t)above + (uintptr_t)itemsize;
    return 1;
}

/* The host's offers, less those that overlap an input's memory or another output's offer: such a
 * block would be written while it is still read, or by two outputs (a wrong answer), so it is
 * declined (the result goes to a block of the library's own, which is always correct). Every
 * offer of an overlapping pair is declined, not all but the first: which output keeps a shared
 * block would otherwise depend on slot order, and a host cannot tell which it would be. */
static void ffg_screen_offers(const FfgTensor *inputs, int32_t n_inputs, const FfgOutput *outputs,
                              int32_t n_outputs, FfgOutput *offers)
{
    int32_t k, i;
    for (k = 0; k < n_outputs; ++k) {
        uintptr_t lo, hi, in_lo, in_hi;
        int extent;
        offers[k].host_buffer = outputs[k].host_buffer;
        offers[k].host_capacity = outputs[k].host_capacity;
        if (offers[k].host_buffer == NULL || offers[k].host_capacity <= 0) {
            offers[k].host_buffer = NULL;
            offers[k].host_capacity = 0;
            continue;
        }
        lo = (uintptr_t)offers[k].host_buffer;
        hi = lo + (uintptr_t)offers[k].host_capacity;
        if (hi < lo)
            hi = UINTPTR_MAX;
        for (i = 0; i < n_inputs && offers[k].host_buffer != NULL; ++i) {
            extent = ffg_extent(&inputs[i], &in_lo, &in_hi);
            if (extent < 0 || (extent > 0 && in_lo < hi && lo < in_hi))
                offers[k].host_buffer = NULL;
        }
        for (i = 0; i < n_outputs && offers[k].host_buffer != NULL; ++i) {   /* the host's offers as given */
            if (i == k || outputs[i].host_buffer == NULL || outputs[i].host_capacity <= 0)
                continue;
            in_lo = (uintptr_t)outputs[i].host_buffer;
            in_hi = in_lo + (uintptr_t)outputs[i].host_capacity;
            if (in_hi < in_lo)
                in_hi = UINTPTR_MAX;
            if (in_lo < hi && lo < in_hi)
                offers[k].host_buffer = NULL;
        }
        if (offers[k].host_buffer == NULL)
            offers[k].host_capacity = 0;
    }
}

static void *ffg_malloc(const FfgAllocator *al, size_t nbytes)
{
    if (nbytes == 0)
        nbytes = 1;   /* a distinct, freeable block even for empty arrays */
    return al ? al->alloc(al->ctx, nbytes) : malloc(nbytes);
}

static void ffg_release(const FfgAllocator *al, void *ptr)
{
    if (ptr == NULL)
        return;
    if (al)
        al->release(al->ctx, ptr);
    else
        free(ptr);
}

/* At the start of a run (whatever it returns, every slot is written) and after a failed one: a
 * slot holding no value. A block a failed run had already handed to a slot (a later output's sync
 * failed) goes back to where it came from: after a failure the host has nothing to release. */
static void ffg_clear_outputs(FfgOutput *outputs, int32_t n_outputs, int release, const FfgAllocator *al)
{
    int32_t k;
    for (k = 0; k < n_outputs; ++k) {
        if (release && outputs[k].base != NULL && outputs[k].tensor.device.device_type == FFG_DEVICE_CPU)
            ffg_release(al, outputs[k].base);
        memset(&outputs[k].tensor, 0, sizeof outputs[k].tensor);
        outputs[k].base = NULL;
        outputs[k].alias_of = FFG_OUT_NONE;
        outputs[k].reserved = 0;
    }
}

static int64_t ffg_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return 0;   /* empty, whatever the other lengths (their product may not fit) */
    for (d = 0; d < ndim; ++d)
        n *= shape[d];
    return n;
}

/* Broadcast one axis: *out (so far) with length b; -1 when they are incompatible. */
static int ffg_broadcast_dim(int64_t *out, int64_t b)
{
    if (*out == b || b == 1)
        return 0;
    if (*out == 1) {
        *out = b;
        return 0;
    }
    return -1;
}

/* What no host memory can be: element 0 (data + byte_offset) not aligned for the dtype (loads
 * would be misaligned), or a non-empty array whose strides reach further than int64 bytes can
 * address (offsets would overflow). FFG_ERR_VALUE; 0 when the layout is possible. (Whether the
 * memory it describes is the host's cannot be checked: the ABI trusts that.) */
static int ffg_check_layout(const FfgTensor *t, int32_t slot, const char *name, int code, int bits, int ndim,
                            FfgError *err)
{
    int64_t itemsize = bits / 8 > 0 ? bits / 8 : 1, align = code == FFG_DTYPE_COMPLEX ? itemsize / 2 : itemsize;
    int64_t below = 0, above = 0;   /* bytes reached before and after element 0 */
    uintptr_t base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    int d;
    if (ffg_size(ndim, t->shape) == 0)
        return 0;   /* no element is reached: any pointer and strides will do */
    if (base < (uintptr_t)t->data || (align > 1 && base % (uintptr_t)align != 0)) {
        ffg_set_error(err, FFG_ERR_VALUE, slot, "input %s: data + byte_offset %s", name,
                      base < (uintptr_t)t->data ? "wraps around the address space" : "is not aligned for the dtype");
        return -1;
    }
    for (d = 0; t->strides != NULL && d < ndim; ++d) {
        int64_t s = t->strides[d], steps = t->shape[d] - 1, a = s < 0 ? -s : s, *side = s < 0 ? &below : &above;
        if (steps == 0 || s == 0)
            continue;
        if (s == INT64_MIN || a > INT64_MAX / itemsize / steps || a * itemsize * steps > INT64_MAX - *side) {
            ffg_set_error(err, FFG_ERR_VALUE, slot, "input %s: the strides reach beyond what int64 bytes "
                          "can address (axis %d, stride %lld)", name, d, (long long)s);
            return -1;
        }
        *side += a * itemsize * steps;
    }
    if ((uint64_t)below > (uint64_t)base || (uint64_t)above > (uint64_t)(UINTPTR_MAX - base)) {
        ffg_set_error(err, FFG_ERR_VALUE, slot, "input %s: the strides reach past the ends of the address space",
                      name);
        return -1;
    }
    return 0;
}

/* Read an input slot into an array local, checking what the type promises. */
static int ffg_extract_on(ffg_array *a, const FfgTensor *t, int32_t slot, const char *name, int check,
                          int32_t device_type, int code, int bits, int ndim, const int64_t *static_shape,
                          FfgError *err)
{
    int d, empty;
    int64_t stride = 1;
    a->data = NULL;
    a->owned = NULL;   /* first, so c_cleanup is safe whatever check fails */
    a->offered = NULL;
    a->in_offered = 0;
    if (check) {
        if (t->device.device_type != device_type) {
            ffg_set_error(err, FFG_ERR_TYPE, slot, "input %s: expected a%s array, got device type %d",
                          name, device_type == FFG_DEVICE_CUDA ? " CUDA" : " CPU", (int)t->device.device_type);
            return -1;
        }
        if (device_type == FFG_DEVICE_CPU && t->device.device_id != 0) {
            ffg_set_error(err, FFG_ERR_TYPE, slot, "input %s: a CPU array has device_id 0, got %d",
                          name, (int)t->device.device_id);
            return -1;
        }
        if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
            char want[32], got[32];
            ffg_set_error(err, FFG_ERR_TYPE, slot, "input %s: expected dtype %s, got %s (lanes %d)", name,
                          ffg_dtype_name(code, bits, want, sizeof want),
                          ffg_dtype_name(t->dtype.code, t->dtype.bits, got, sizeof got), (int)t->dtype.lanes);
            return -1;
        }
        if (t->ndim != ndim) {
            ffg_set_error(err, FFG_ERR_TYPE, slot, "input %s: expected %d dimensions, got %d",
                          name, ndim, (int)t->ndim);
            return -1;
        }
        if (ndim > 0 && t->shape == NULL) {   /* NULL pointers are a misused call: FFG_ERR_ABI */
            ffg_set_error(err, FFG_ERR_ABI, slot, "input %s: the shape pointer is NULL", name);
            return -1;
        }
        for (d = 0; d < ndim; ++d) {
            if (t->shape[d] < 0 || (static_shape[d] >= 0 && t->shape[d] != static_shape[d])) {
                char got[160];
                ffg_format_shape(got, sizeof got, ndim, t->shape);
                ffg_set_error(err, FFG_ERR_VALUE, slot, "input %s: shape %s does not fit the type (axis %d)",
                              name, got, d);
                return -1;
            }
        }
        if (ffg_size_overflows(ndim, t->shape, bits / 8)) {
            char got[160];
            ffg_format_shape(got, sizeof got, ndim, t->shape);
            ffg_set_error(err, FFG_ERR_VALUE, slot, "input %s: shape %s is too large (its size in bytes "
                          "overflows int64)", name, got);
            return -1;
        }
        if (t->data == NULL && ffg_size(ndim, t->shape) > 0) {
            ffg_set_error(err, FFG_ERR_ABI, slot, "input %s: the data pointer is NULL", name);
            return -1;
        }
        if (ffg_check_layout(t, slot, name, code, bits, ndim, err))
            return -1;
    }
    a->data = (char *)t->data + t->byte_offset;
    a->owned = NULL;
    empty = ffg_size(ndim, t->shape) == 0;
    for (d = ndim - 1; d >= 0; --d) {
        a->shape[d] = t->shape[d];
        /* an empty array reaches no element: strides 0, so that no offset into it (an index on a
           huge axis) can overflow, whatever lengths and strides it came with */
        a->strides[d] = empty ? 0 : t->strides ? t->strides[d] : stride;
        if (!empty)
            stride *= t->shape[d];
    }
    return 0;
}

static int ffg_extract(ffg_array *a, const FfgTensor *t, int32_t slot, const char *name, int check,
                       int code, int bits, int ndim, const int64_t *static_shape, FfgError *err)
{
    return ffg_extract_on(a, t, slot, name, check, FFG_DEVICE_CPU, code, bits, ndim, static_shape, err);
}

/* Hand an array local (its memory on device_type) to an output slot; the host takes over its block. */
static void ffg_publish_on(FfgOutput *o, ffg_array *a, int32_t device_type, int code, int bits, int ndim,
                           int64_t *shape_store, int64_t *strides_store, int32_t alias_of)
{
    int d;
    for (d = 0; d < ndim; ++d) {
        shape_store[d] = a->shape[d];
        strides_store[d] = a->strides[d];
    }
    o->tensor.data = a->data;
    o->tensor.device.device_type = device_type;
    o->tensor.device.device_id = 0;
    o->tensor.ndim = ndim;
    o->tensor.dtype.code = (uint8_t)code;
    o->tensor.dtype.bits = (uint8_t)bits;
    o->tensor.dtype.lanes = 1;
    o->tensor.shape = shape_store;
    o->tensor.strides = strides_store;
    o->tensor.byte_offset = 0;
    o->base = a->owned;
    o->alias_of = a->in_offered ? FFG_OUT_HOST_BUFFER : (a->owned ? FFG_OUT_OWNED : alias_of);
    a->owned = NULL;
}

static void ffg_publish(FfgOutput *o, ffg_array *a, int code, int bits, int ndim,
                        int64_t *shape_store, int64_t *strides_store, int32_t alias_of)
{
    ffg_publish_on(o, a, FFG_DEVICE_CPU, code, bits, ndim, shape_store, strides_store, alias_of);
}

/* Before the nodes run: let an output's allocation use the block the host offers. */
static void ffg_offer(ffg_array *a, const FfgOutput *o)
{
    a->offered = (char *)o->host_buffer;
    a->offered_bytes = o->host_buffer ? o->host_capacity : 0;
    a->in_offered = 0;
}

"""

def _prototypes(functions, storage):
    """One declaration per function definition of ``functions`` (its text up to the body)."""
    found = re.findall(r"^%s ([^;{]*?\bffg_[a-z_]+\([^;{]*?\))\s*\{" % storage, functions, flags=re.M | re.S)
    return "".join("%s %s;\n" % (storage, re.sub(r"\s+", " ", signature)) for signature in found)


RUNTIME_PROTOTYPES = _prototypes(RUNTIME_FUNCTIONS, "FFG_RT")

RUNTIME_C = RUNTIME_TYPES + r"""
/* FFG_RUNTIME_LINKED: the functions below come from the runtime object linked with this library
   (only their declarations are read); FFG_RUNTIME_OBJECT: this is that object's source. */
#if defined(FFG_RUNTIME_LINKED) || defined(FFG_RUNTIME_OBJECT)
#define FFG_RT __attribute__((visibility("hidden")))
#else
#define FFG_RT static
#endif
""" + _prototypes(RUNTIME_PER_CALL, "static") + "#if defined(FFG_RUNTIME_LINKED)\n" + RUNTIME_PROTOTYPES + \
    "#else\n" + RUNTIME_FUNCTIONS + "#endif   /* FFG_RUNTIME_LINKED */\n\n" + RUNTIME_PER_CALL + \
    "/* ---- end of runtime ---- */\n"

# The source of the runtime object (the compile cache builds it once per compiler and flags).
RUNTIME_OBJECT_C = '#include "ffigraph_abi.h"\n#define FFG_RUNTIME_OBJECT 1\n' + RUNTIME_C

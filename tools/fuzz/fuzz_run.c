/*
 * fuzz_run.c -- fuzz the run entry of one compiled ffigraph graph with arbitrary descriptors.
 *
 * Built by tools/fuzz/fuzz.py together with the graph's generated source, both with
 * -fsanitize=address,undefined -fno-sanitize-recover=all, and with -DFFG_P=<prefix> naming
 * the library's symbol prefix (P_describe, P_create, P_run, P_destroy).
 *
 * Two entries share one body (fuzz_one):
 *   LLVMFuzzerTestOneInput(data, size)  -- libFuzzer (clang -fsanitize=fuzzer -DFFG_LIBFUZZER);
 *   main(argc, argv)                    -- a seeded random driver (gcc): ./fuzz SEED ITERATIONS
 *                                          feeds fuzz_one random byte strings from a splitmix64
 *                                          PRNG and prints the figures at the end.
 * The bytes only steer choices (which mutation, which slot, which lengths); every descriptor
 * is built from the graph's own P_describe(), then one thing is broken at a time.
 *
 * THE RULE (what must hold, and what the fuzzer promises in return):
 *   The ABI trusts data + byte_offset + shape + strides: a descriptor that is well formed but
 *   says the array lies in memory the host does not own cannot be detected by any C library.
 *   So whenever a descriptor is one the library may accept, this fuzzer makes it describe
 *   memory it really owns: every element that shape and strides reach lies inside a live
 *   block (zero and negative strides included; the buffer is sized and the data pointer placed
 *   for it), and offered output blocks are as large as host_capacity says. An empty array
 *   (a zero length anywhere) reaches no element, so its other lengths may be huge and its
 *   data pointer anything.
 *   Everything else is descriptor-level garbage, and P_run must answer it with an error code
 *   (never a crash, a sanitizer report, a leak, or FFG_OK):
 *     NULL state / inputs / outputs / err, wrong n_inputs / n_outputs (negative, huge),
 *     ndim negative, > FFG_MAX_NDIM or not the slot's, NULL shape (ndim > 0), negative
 *     lengths, lengths whose byte size overflows int64, NULL data for a non-empty array,
 *     a wrong dtype code / bits / lanes, a device other than the CPU, data + byte_offset
 *     not aligned for the dtype, strides whose byte extent overflows int64 (no real memory
 *     can hold such an array).
 *   Valid descriptors (odd strides, offered blocks, empty arrays) may succeed or fail with an
 *   error (shapes that do not broadcast, an index out of range); either way, no crash, and on
 *   success every output element is read back (ASan checks it lies in live memory) and owned
 *   output blocks are released with the documented rule (alias_of == FFG_OUT_OWNED: release
 *   base with P_create's allocator).
 * A counting allocator checks that every block the library takes is given back (no leaks).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffigraph_abi.h"

#ifndef FFG_P
#error "compile with -DFFG_P=<the library's symbol prefix>"
#endif
#define FFG_CAT2(a, b) a##b
#define FFG_CAT(a, b) FFG_CAT2(a, b)
#define P_describe FFG_CAT(FFG_P, _describe)
#define P_create FFG_CAT(FFG_P, _create)
#define P_run FFG_CAT(FFG_P, _run)
#define P_destroy FFG_CAT(FFG_P, _destroy)

ffg_describe_fn P_describe;
ffg_create_fn P_create;
ffg_run_fn P_run;
ffg_destroy_fn P_destroy;

#define MAX_SLOTS 16
#define MAX_ELEMS 4096      /* a valid array reaches at most this many element positions */

/* ---------------------------------------------------------------- mutations */

enum {
    M_VALID,            /* well formed: odd strides, offered blocks, empty arrays; any outcome but a crash */
    M_HUGE_EMPTY,       /* well formed: a zero length plus huge ones (no memory reached) */
    M_NULL_STATE,
    M_NULL_INPUTS,
    M_NULL_OUTPUTS,
    M_NULL_ERR,
    M_N_INPUTS,
    M_N_OUTPUTS,
    M_NDIM,
    M_NULL_SHAPE,
    M_NEG_SHAPE,
    M_OVERFLOW_SHAPE,
    M_NULL_DATA,
    M_DTYPE,
    M_DEVICE,
    M_UNALIGNED,
    M_STRIDE_OVERFLOW,
    M_COUNT
};

static const char *mutation_names[M_COUNT] = {
    "valid", "huge_empty", "null_state", "null_inputs", "null_outputs", "null_err", "n_inputs",
    "n_outputs", "ndim", "null_shape", "neg_shape", "overflow_shape", "null_data", "dtype", "device",
    "unaligned", "stride_overflow",
};

/* 1: the mutation is descriptor-level garbage, FFG_OK would be a bug */
static const int must_fail[M_COUNT] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* ---------------------------------------------------------------- figures */

static uint64_t executions, successes, crashes_unused;
static uint64_t codes[10];                 /* 0..7 FFG codes, 8 other */
static uint64_t by_mutation[M_COUNT];      /* runs */
static uint64_t rejected_by_mutation[M_COUNT];
static uint64_t accepted_garbage[M_COUNT]; /* must_fail mutations that came back FFG_OK */
static uint64_t null_err_bad;              /* err == NULL not answered with FFG_ERR_ABI */
static uint64_t leaks;                     /* states destroyed with blocks still outstanding */
static uint64_t bad_outputs;               /* success with an output descriptor that makes no sense */
static uint64_t empty_messages;            /* an error code with an empty message */
static int verbose;

/* ---------------------------------------------------------------- bytes that steer */

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static unsigned u8(reader *r)
{
    return r->at < r->n ? r->p[r->at++] : 0;
}

static uint64_t u64(reader *r)
{
    uint64_t v = 0;
    int k;
    for (k = 0; k < 8; ++k)
        v = (v << 8) | u8(r);
    return v;
}

static unsigned pick(reader *r, unsigned n)   /* 0 <= result < n */
{
    return n ? u8(r) % n : 0;
}

/* ---------------------------------------------------------------- a counting allocator */

typedef struct counting {
    int64_t outstanding;
    int fail_after;      /* < 0: never fail; else the allocation number that fails (then all later ones) */
    int64_t count;
} counting;

static void *counting_alloc(void *ctx, size_t n)
{
    counting *c = (counting *)ctx;
    void *p;
    if (c->fail_after >= 0 && c->count++ >= c->fail_after)
        return NULL;
    p = malloc(n ? n : 1);
    if (p)
        c->outstanding++;
    return p;
}

static void counting_release(void *ctx, void *p)
{
    counting *c = (counting *)ctx;
    if (p) {
        c->outstanding--;
        free(p);
    }
}

/* ---------------------------------------------------------------- one input descriptor */

typedef struct slot_buf {
    FfgTensor t;
    int64_t shape[FFG_MAX_NDIM + 8];
    int64_t strides[FFG_MAX_NDIM + 8];
    char *block;          /* malloc'd; freed after the run */
} slot_buf;

static int itemsize_of(const FfgDtype *d)
{
    return d->bits / 8 > 0 ? d->bits / 8 : 1;
}

static int align_of(const FfgDtype *d)
{
    int size = itemsize_of(d);
    return d->code == FFG_DTYPE_COMPLEX ? size / 2 : size;
}

static void fill_values(reader *r, char *p, int64_t n, const FfgDtype *dt)
{
    int64_t k;
    int size = itemsize_of(dt);
    unsigned style = pick(r, 4);
    for (k = 0; k < n; ++k) {
        char *e = p + k * size;
        if (dt->code == FFG_DTYPE_FLOAT || dt->code == FFG_DTYPE_COMPLEX) {
            int lanes = dt->code == FFG_DTYPE_COMPLEX ? 2 : 1, l;
            for (l = 0; l < lanes; ++l) {
                double v = style == 3 ? (double)(int64_t)u64(r) * 1e-300 : (double)((int)pick(r, 17) - 8) * 0.5;
                if (size / lanes == 4) {
                    float fv = (float)v;
                    memcpy(e + 4 * l, &fv, 4);
                } else {
                    memcpy(e + 8 * l, &v, 8);
                }
            }
        } else if (dt->code == FFG_DTYPE_BOOL) {
            *e = (char)(u8(r) & 1);
        } else {
            /* small integers (indices in and out of range, no arithmetic overflow) */
            int64_t v = (int64_t)pick(r, 13) - 6;
            uint64_t u = (uint64_t)v;
            memcpy(e, &u, (size_t)size);   /* little endian: the low bytes */
        }
    }
}

/*
 * A well-formed descriptor for a slot of the given description, describing memory it owns.
 * common: a length most axes take (so shapes often agree and the success path runs).
 */
static void make_valid(reader *r, slot_buf *s, const FfgSlot *slot, int64_t common)
{
    int nd = slot->ndim, d, size = itemsize_of(&slot->dtype);
    int64_t lo = 0, hi = 0, n = 1, pad;
    unsigned stride_style = pick(r, 6);
    memset(&s->t, 0, sizeof s->t);
    s->block = NULL;
    s->t.device.device_type = FFG_DEVICE_CPU;
    s->t.ndim = nd;
    s->t.dtype = slot->dtype;
    for (d = 0; d < nd; ++d) {
        int64_t len;
        unsigned c = pick(r, 8);
        if (slot->static_shape[d] >= 0)
            len = slot->static_shape[d];
        else if (c < 5)
            len = common;
        else if (c == 5)
            len = 1;
        else
            len = (int64_t)pick(r, 5);
        s->shape[d] = len;
        n *= len;
    }
    /* strides: NULL (C order), explicit C order, or any small ones (zero and negative too) */
    if (stride_style == 0 || stride_style == 1) {
        int64_t st = 1;
        for (d = nd - 1; d >= 0; --d) {
            s->strides[d] = st;
            st *= s->shape[d] > 0 ? s->shape[d] : 1;
        }
    } else {
        for (d = 0; d < nd; ++d)
            s->strides[d] = (int64_t)pick(r, 13) - 6;
    }
    if (n > 0) {
        for (d = 0; d < nd; ++d) {
            int64_t reach = s->strides[d] * (s->shape[d] - 1);
            if (reach < 0)
                lo += reach;
            else
                hi += reach;
        }
    }
    s->t.shape = nd > 0 || pick(r, 2) ? s->shape : NULL;
    s->t.strides = stride_style == 0 ? NULL : s->strides;
    /* a block holding every reachable element (plus a little), element 0 at -lo */
    pad = (int64_t)pick(r, 3);
    s->block = (char *)malloc((size_t)((hi - lo + 1 + pad) * size));
    if (n > 0)
        fill_values(r, s->block, hi - lo + 1, &slot->dtype);
    if (pick(r, 2)) {
        s->t.data = s->block;
        s->t.byte_offset = (uint64_t)(-lo * size);
    } else {
        s->t.data = s->block + (-lo * size);
        s->t.byte_offset = 0;
    }
}

static int64_t element_count(const FfgTensor *t)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < t->ndim; ++d)
        n *= t->shape[d];
    return n;
}

/* ---------------------------------------------------------------- breaking one thing */

static const int64_t huge_values[] = {
    INT64_MAX, INT64_MAX / 2 + 1, INT64_C(1) << 62, INT64_C(1) << 40, INT64_C(1) << 32, (INT64_C(1) << 31) + 7,
};

/* Returns 1 when the mutation applied (it can only break what the slot has). */
static int mutate_slot(reader *r, int m, slot_buf *s, const FfgSlot *slot, char *unaligned_block)
{
    int nd = s->t.ndim, d;
    switch (m) {
    case M_HUGE_EMPTY: {
        int free_axes = 0, zero;
        for (d = 0; d < nd; ++d)
            free_axes += slot->static_shape[d] < 0;
        if (free_axes == 0)
            return 0;
        zero = (int)pick(r, (unsigned)free_axes);
        s->t.shape = s->shape;
        for (d = 0; d < nd; ++d) {
            if (slot->static_shape[d] >= 0)
                continue;
            s->shape[d] = zero-- == 0 ? 0 : huge_values[pick(r, 6)];
        }
        s->t.strides = pick(r, 2) ? NULL : s->strides;
        for (d = 0; d < nd; ++d)
            s->strides[d] = (int64_t)(u64(r) >> pick(r, 64));
        s->t.data = pick(r, 2) ? NULL : s->block;
        return 1;
    }
    case M_NDIM: {
        static const int32_t bad[] = {-1, -7, INT32_MIN, FFG_MAX_NDIM + 1, 1000, INT32_MAX};
        unsigned c = pick(r, 8);
        s->t.ndim = c < 6 ? bad[c] : (int32_t)((nd + 1 + pick(r, FFG_MAX_NDIM)) % (FFG_MAX_NDIM + 1));
        if (s->t.ndim == nd)
            s->t.ndim = nd + 1;
        return 1;
    }
    case M_NULL_SHAPE:
        if (nd == 0)
            return 0;
        s->t.shape = NULL;
        return 1;
    case M_NEG_SHAPE:
        if (nd == 0)
            return 0;
        s->t.shape = s->shape;
        d = (int)pick(r, (unsigned)nd);
        s->shape[d] = pick(r, 2) ? -1 - (int64_t)pick(r, 5) : INT64_MIN + (int64_t)pick(r, 3);
        return 1;
    case M_OVERFLOW_SHAPE: {
        /* lengths whose product (in bytes) overflows int64, none zero */
        int free_axes = 0;
        for (d = 0; d < nd; ++d)
            free_axes += slot->static_shape[d] < 0;
        if (free_axes == 0)
            return 0;
        s->t.shape = s->shape;
        for (d = 0; d < nd; ++d) {
            if (slot->static_shape[d] >= 0)
                continue;
            s->shape[d] = free_axes == 1 ? INT64_MAX - (int64_t)pick(r, 4)
                                          : (INT64_C(1) << 32) + (int64_t)pick(r, 100);
        }
        return 1;
    }
    case M_NULL_DATA:
        if (element_count(&s->t) <= 0)
            return 0;
        s->t.data = NULL;
        s->t.byte_offset = 0;
        return 1;
    case M_DTYPE: {
        unsigned c = pick(r, 3);
        if (c == 0)
            s->t.dtype.code = (uint8_t)u8(r);
        else if (c == 1)
            s->t.dtype.bits = (uint8_t)u8(r);
        else
            s->t.dtype.lanes = (uint16_t)(u8(r) | (u8(r) << 8));
        if (s->t.dtype.code == slot->dtype.code && s->t.dtype.bits == slot->dtype.bits && s->t.dtype.lanes == 1)
            s->t.dtype.lanes = 2;   /* the bytes left it unchanged: break it anyway */
        return 1;
    }
    case M_DEVICE: {
        static const int32_t bad[] = {FFG_DEVICE_CUDA, 0, 3, 4, 7, 13, -1, INT32_MAX};
        s->t.device.device_type = bad[pick(r, 8)];
        s->t.device.device_id = (int32_t)pick(r, 3);
        return 1;
    }
    case M_UNALIGNED: {
        int64_t n = element_count(&s->t), k;
        int size = itemsize_of(&slot->dtype), al = align_of(&slot->dtype), shift;
        if (al <= 1 || n <= 0)
            return 0;
        /* the same elements, copied into a block at an address that is off by 1..al-1 bytes;
           the descriptor is made C-contiguous so it reaches exactly those n elements */
        shift = 1 + (int)pick(r, (unsigned)(al - 1));
        for (k = 0; k < n && k < MAX_ELEMS; ++k)
            memset(unaligned_block + shift + k * size, (int)k, (size_t)size);
        s->t.strides = NULL;
        if (pick(r, 2)) {
            s->t.data = unaligned_block + shift;
            s->t.byte_offset = 0;
        } else {
            s->t.data = unaligned_block;
            s->t.byte_offset = (uint64_t)shift;
        }
        return 1;
    }
    case M_STRIDE_OVERFLOW: {
        /* a non-empty array whose strides reach beyond what int64 bytes can address */
        int64_t n = element_count(&s->t);
        int best = -1;
        if (n <= 0)
            return 0;
        for (d = 0; d < nd; ++d)
            if (s->shape[d] > 1)
                best = d;
        if (best < 0)
            return 0;
        if (s->t.strides == NULL) {
            int64_t st = 1;
            for (d = nd - 1; d >= 0; --d) {
                s->strides[d] = st;
                st *= s->shape[d] > 0 ? s->shape[d] : 1;
            }
        }
        s->t.strides = s->strides;
        {
            /* reaching past INT64_MAX bytes, or below address 0: no memory can be like that */
            int64_t size = itemsize_of(&slot->dtype), steps = s->shape[best] - 1;
            uint64_t base = (uint64_t)(uintptr_t)s->t.data + s->t.byte_offset;
            int64_t beyond = INT64_MAX / size / steps, below;
            unsigned c = pick(r, 5);
            if (beyond == INT64_MAX && c >= 1 && c <= 3)
                c = 4;   /* 1-byte items, 2 of them: every stride fits in int64 bytes; go below 0 */
            if (c >= 1 && c <= 3)
                beyond += 1 + (int64_t)pick(r, 100);
            below = (int64_t)(base / (uint64_t)size / (uint64_t)steps) + 1 + (int64_t)pick(r, 100);
            switch (c) {
            case 0: s->strides[best] = INT64_MIN; break;
            case 1: s->strides[best] = INT64_MAX; break;
            case 2: s->strides[best] = beyond; break;
            case 3: s->strides[best] = -beyond; break;
            default: s->strides[best] = -below; break;
            }
        }
        return 1;
    }
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- checking a result */

static volatile unsigned char sink;

/* Read every element of a published output (ASan: it must lie in live memory). */
static int touch_output(const FfgOutput *o, int expected_ndim)
{
    const FfgTensor *t = &o->tensor;
    int64_t idx[FFG_MAX_NDIM], n, k;
    int d, size;
    if (t->ndim != expected_ndim || t->ndim < 0 || t->ndim > FFG_MAX_NDIM)
        return -1;
    if (t->ndim > 0 && t->shape == NULL)
        return -1;
    for (d = 0; d < t->ndim; ++d)
        if (t->shape[d] < 0)
            return -1;
    n = element_count(t);
    if (n == 0)
        return 0;
    if (t->data == NULL || n > (INT64_C(1) << 26))
        return -1;
    size = itemsize_of(&t->dtype);
    for (d = 0; d < t->ndim; ++d)
        idx[d] = 0;
    for (k = 0; k < n; ++k) {
        int64_t off = 0, st = 1;
        for (d = t->ndim - 1; d >= 0; --d) {
            off += idx[d] * (t->strides ? t->strides[d] : st);
            st *= t->shape[d];
        }
        {
            const unsigned char *e = (const unsigned char *)t->data + t->byte_offset + off * size;
            int b;
            for (b = 0; b < size; ++b)
                sink ^= e[b];
        }
        for (d = t->ndim - 1; d >= 0; --d) {
            if (++idx[d] < t->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- one execution */

static void dump(int m, int target, const FfgTensor *t, int n)
{
    int k, d;
    fprintf(stderr, "mutation %s on input %d\n", mutation_names[m], target);
    for (k = 0; k < n; ++k) {
        fprintf(stderr, "  input %d: data %p + %llu, device %d, dtype %d/%d/%d, ndim %d, shape", k, t[k].data,
                (unsigned long long)t[k].byte_offset, (int)t[k].device.device_type, (int)t[k].dtype.code,
                (int)t[k].dtype.bits, (int)t[k].dtype.lanes, (int)t[k].ndim);
        for (d = 0; t[k].shape && d < t[k].ndim && d < FFG_MAX_NDIM; ++d)
            fprintf(stderr, " %lld", (long long)t[k].shape[d]);
        fprintf(stderr, ", strides");
        for (d = 0; t[k].strides && d < t[k].ndim && d < FFG_MAX_NDIM; ++d)
            fprintf(stderr, " %lld", (long long)t[k].strides[d]);
        fprintf(stderr, "\n");
    }
}

static void *persistent_state;
static counting persistent_counts = {0, -1, 0};
static FfgAllocator persistent_allocator = {counting_alloc, counting_release, &persistent_counts};

int fuzz_one(const uint8_t *data, size_t size)
{
    reader rd = {data, size, 0}, *r = &rd;
    const FfgDescription *desc = P_describe();
    int n_in = desc->n_inputs, n_out = desc->n_outputs, k, m, target, applied;
    slot_buf *slots = (slot_buf *)calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *slots);
    FfgOutput outs[MAX_SLOTS];
    FfgTensor tensors[MAX_SLOTS];
    char *offered[MAX_SLOTS];
    char *unaligned_block = (char *)malloc(MAX_ELEMS * 16 + 32);
    int64_t common = (int64_t)pick(r, 5);
    counting fresh_counts = {0, -1, 0};
    FfgAllocator fresh_allocator = {counting_alloc, counting_release, &fresh_counts};
    FfgError err;
    void *state, *run_state;
    int fresh = pick(r, 4) == 0;
    int32_t code, pass_in, pass_out;
    const FfgTensor *in_arg;
    FfgOutput *out_arg;
    FfgError *err_arg = &err;
    const FfgAllocator *state_allocator;
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;

    if (n_out > MAX_SLOTS || n_in > MAX_SLOTS) {
        fprintf(stderr, "the harness handles at most %d slots\n", MAX_SLOTS);
        abort();
    }
    /* the state: a persistent one (runs after failures must still work) or a fresh one,
       possibly with an allocator that fails after a few blocks */
    if (fresh) {
        fresh_counts.fail_after = pick(r, 4) == 0 ? (int)pick(r, 6) : -1;
        state_allocator = pick(r, 2) ? &fresh_allocator : NULL;
        options.allocator = state_allocator;
        state = P_create(&options, &err);
        if (state == NULL) {
            /* only an allocation failure may refuse to create */
            if (err.code != FFG_ERR_NOMEM || fresh_counts.fail_after < 0)
                bad_outputs++;
            fresh = 0;
            free(slots);
            free(unaligned_block);
            return 0;
        }
    } else {
        if (persistent_state == NULL) {
            options.allocator = &persistent_allocator;
            persistent_state = P_create(&options, &err);
            if (persistent_state == NULL) {
                fprintf(stderr, "P_create failed: %s\n", err.message);
                abort();
            }
        }
        state = persistent_state;
        state_allocator = &persistent_allocator;
    }

    for (k = 0; k < n_in; ++k)
        make_valid(r, &slots[k], &desc->inputs[k], common);
    for (k = 0; k < n_out; ++k) {
        unsigned c = pick(r, 4);
        memset(&outs[k], 0xA5, sizeof outs[k]);   /* garbage the library must overwrite */
        offered[k] = NULL;
        outs[k].host_buffer = NULL;
        outs[k].host_capacity = c == 1 ? -(int64_t)pick(r, 100) : (int64_t)(u64(r) >> pick(r, 64));
        if (c >= 2) {
            /* a real block, as large as host_capacity says; sometimes at an odd address */
            int64_t cap = (int64_t)pick(r, 8) * 8 * (c == 3 ? 16 : 1);
            int shift = pick(r, 4) == 0 ? 1 + (int)pick(r, 7) : 0;
            offered[k] = (char *)malloc((size_t)cap + 16);
            outs[k].host_buffer = offered[k] + shift;
            outs[k].host_capacity = cap;
        }
    }

    run_state = state;
    m = (int)pick(r, M_COUNT + 4);
    if (m >= M_COUNT)
        m = M_VALID;    /* more weight on the success path */
    target = n_in > 0 ? (int)pick(r, (unsigned)n_in) : -1;
    applied = 1;
    pass_in = n_in;
    pass_out = n_out;
    in_arg = n_in > 0 ? tensors : NULL;
    out_arg = n_out > 0 ? outs : NULL;
    switch (m) {
    case M_VALID:
        break;
    case M_NULL_STATE:
        run_state = NULL;
        break;
    case M_NULL_INPUTS:
        if (n_in == 0)
            applied = 0;
        in_arg = NULL;
        break;
    case M_NULL_OUTPUTS:
        if (n_out == 0)
            applied = 0;
        out_arg = NULL;
        break;
    case M_NULL_ERR:
        err_arg = NULL;
        break;
    case M_N_INPUTS:
    case M_N_OUTPUTS: {
        static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX, 1000};
        int32_t *which = m == M_N_INPUTS ? &pass_in : &pass_out;
        unsigned c = pick(r, 6);
        *which = c < 4 ? bad[c] : *which + (c == 4 ? 1 : -1);
        if (*which < 0 && c >= 4 && pick(r, 2))
            *which = 1;
        if (*which == (m == M_N_INPUTS ? n_in : n_out))
            *which += 1;
        /* the library reads only the counts it expects, so the arrays stay as long as the graph needs */
        break;
    }
    default:
        applied = target >= 0 && mutate_slot(r, m, &slots[target], &desc->inputs[target], unaligned_block);
        break;
    }
    if (!applied)
        m = M_VALID;

    for (k = 0; k < n_in; ++k)
        tensors[k] = slots[k].t;   /* the ABI's contiguous array of descriptors */
    if (verbose > 1)
        dump(m, target, tensors, n_in);
    code = P_run(run_state, in_arg, pass_in, out_arg, pass_out, err_arg);
    executions++;
    by_mutation[m]++;
    codes[code >= 0 && code <= 7 ? code : 8]++;
    if (m == M_NULL_ERR) {
        if (code != FFG_ERR_ABI)
            null_err_bad++;
    } else if (code != FFG_OK) {
        rejected_by_mutation[m]++;
        if (verbose)
            fprintf(stderr, "%s on input %d: code %d: %s\n", mutation_names[m], target, (int)code, err.message);
        if (err.code != code || err.message[0] == '\0')
            empty_messages++;
    }
    if (code == FFG_OK && m != M_NULL_ERR) {
        successes++;
        if (must_fail[m]) {
            accepted_garbage[m]++;
            if (verbose)
                fprintf(stderr, "ACCEPTED garbage: mutation %s on input %d\n", mutation_names[m], target);
        }
        for (k = 0; k < n_out; ++k) {
            FfgOutput *o = &outs[k];
            if (touch_output(o, desc->outputs[k].ndim) != 0)
                bad_outputs++;
            if (o->alias_of == FFG_OUT_OWNED) {
                /* the documented rule: the host releases base with P_create's allocator (free() for NULL) */
                if (o->base == NULL)
                    bad_outputs++;
                else if (state_allocator)
                    state_allocator->release(state_allocator->ctx, o->base);
                else
                    free(o->base);
            } else if (o->alias_of == FFG_OUT_HOST_BUFFER) {
                if (o->base != NULL || o->tensor.data == NULL || (char *)o->tensor.data != (char *)o->host_buffer)
                    bad_outputs++;
            } else if (o->alias_of < 0 || o->alias_of >= n_in) {
                bad_outputs++;
            }
        }
    }
    (void)crashes_unused;
    if (fresh) {
        P_destroy(state);
        if (fresh_counts.outstanding != 0)
            leaks++;
    } else if (persistent_counts.outstanding != 1) {   /* the state itself */
        leaks++;
        persistent_counts.outstanding = 1;
    }
    for (k = 0; k < n_in; ++k)
        free(slots[k].block);
    for (k = 0; k < n_out; ++k)
        free(offered[k]);
    free(slots);
    free(unaligned_block);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_one(data, size);
}

/* ---------------------------------------------------------------- the seeded driver */

#ifndef FFG_LIBFUZZER
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    uint64_t iterations = argc > 2 ? strtoull(argv[2], NULL, 0) : 10000, it;
    uint8_t bytes[2048];
    int m, failed;
    verbose = getenv("FFG_FUZZ_VERBOSE") ? atoi(getenv("FFG_FUZZ_VERBOSE")) : 0;
    for (it = 0; it < iterations; ++it) {
        uint64_t s = seed * UINT64_C(1000003) + it;
        size_t k, n = 64 + (size_t)(splitmix64(&s) % (sizeof bytes - 64));
        for (k = 0; k < n; k += 8) {
            uint64_t v = splitmix64(&s);
            memcpy(bytes + k, &v, 8);
        }
        if (verbose)
            fprintf(stderr, "iteration %" PRIu64 "\n", it);
        fuzz_one(bytes, n);
    }
    if (persistent_state != NULL) {
        P_destroy(persistent_state);
        if (persistent_counts.outstanding != 0)
            leaks++;
    }
    printf("executions %" PRIu64 "\n", executions);
    printf("successes %" PRIu64 "\n", successes);
    for (m = 0; m < 9; ++m)
        printf("code %d %" PRIu64 "\n", m == 8 ? -1 : m, codes[m]);
    for (m = 0; m < M_COUNT; ++m)
        printf("mutation %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mutation_names[m], by_mutation[m],
               rejected_by_mutation[m], accepted_garbage[m]);
    printf("null_err_bad %" PRIu64 "\n", null_err_bad);
    printf("leaks %" PRIu64 "\n", leaks);
    printf("bad_outputs %" PRIu64 "\n", bad_outputs);
    printf("empty_messages %" PRIu64 "\n", empty_messages);
    fflush(stdout);
    failed = null_err_bad || leaks || bad_outputs || empty_messages;
    for (m = 0; m < M_COUNT; ++m)
        failed |= accepted_garbage[m] != 0;
    return failed ? 3 : 0;
}
#endif

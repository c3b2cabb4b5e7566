/*
 * dlpack_unit -- checks ffigraph/export/c/ffg_dlpack.c for tests/export/test_dlpack_c.py.
 *
 * No graph is run: the outputs are FfgOutput structs filled as P_run fills them,
 * and the DLPack tensors taken in come from a fake producer whose deleter counts
 * its calls. Built with AddressSanitizer, so a leaked wrapper, a block released
 * twice or a read of freed shape memory aborts the program even where the
 * checks below would pass.
 *
 * Prints "ok" and exits 0 when every check passes; otherwise prints the first
 * failed check and exits 1.
 */
#include "ffg_dlpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            printf("%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* A refusal: the code, and the message holding `words`. */
#define CHECK_ERR(rc, err, want_code, words)                                          \
    do {                                                                              \
        CHECK((rc) == (want_code));                                                   \
        CHECK((err).code == (want_code));                                             \
        CHECK((err).node == -1);                                                      \
        if (strstr((err).message, (words)) == NULL) {                                 \
            printf("%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,        \
                   (err).message, (words));                                           \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static const FfgDtype F32 = {FFG_DTYPE_FLOAT, 32, 1};

/* ------------------------------------------------------------------ fakes */

/* An allocator that counts, as a host's pool or CUDA allocator would be told apart from free(). */
typedef struct Counter {
    int allocs;
    int releases;
    void *last_released;
} Counter;

static void *counting_alloc(void *ctx, size_t nbytes)
{
    ((Counter *)ctx)->allocs++;
    return malloc(nbytes);
}

static void counting_release(void *ctx, void *ptr)
{
    Counter *c = (Counter *)ctx;

    c->releases++;
    c->last_released = ptr;
    free(ptr);
}

/* A DLPack producer (another library) lending a 2x3x4 float32 array. */
typedef struct Producer {
    FfgDLManagedTensorVersioned managed;
    int64_t shape[3];
    int64_t strides[3];
    float data[24];
    int *deleted;               /* incremented by the deleter */
} Producer;

static void producer_deleter(FfgDLManagedTensorVersioned *self)
{
    Producer *p = (Producer *)self->manager_ctx;

    (*p->deleted)++;
    free(p);
}

static Producer *make_producer(int *deleted, uint64_t flags)
{
    Producer *p = (Producer *)calloc(1, sizeof *p);
    int i;

    CHECK(p != NULL);
    p->shape[0] = 2;
    p->shape[1] = 3;
    p->shape[2] = 4;
    p->strides[0] = 12;
    p->strides[1] = 4;
    p->strides[2] = 1;
    for (i = 0; i < 24; i++)
        p->data[i] = (float)i;
    p->deleted = deleted;
    p->managed.version.major = 1;
    p->managed.version.minor = 0;
    p->managed.manager_ctx = p;
    p->managed.deleter = producer_deleter;
    p->managed.flags = flags;
    p->managed.dl_tensor.data = p->data;
    p->managed.dl_tensor.device.device_type = FFG_DEVICE_CPU;
    p->managed.dl_tensor.device.device_id = 0;
    p->managed.dl_tensor.ndim = 3;
    p->managed.dl_tensor.dtype = F32;
    p->managed.dl_tensor.shape = p->shape;
    p->managed.dl_tensor.strides = p->strides;
    p->managed.dl_tensor.byte_offset = 0;
    return p;
}

/* The shape and strides P_run lends: overwritten by the "next run" to prove they were copied. */
static int64_t state_shape[FFG_MAX_NDIM];
static int64_t state_strides[FFG_MAX_NDIM];

static FfgOutput make_output(int32_t alias_of, void *data, void *base, int32_t ndim, const int64_t *shape,
                             const int64_t *strides)
{
    FfgOutput out;

    memset(&out, 0, sizeof out);
    if (ndim > 0)
        memcpy(state_shape, shape, (size_t)ndim * sizeof(int64_t));
    if (strides != NULL)
        memcpy(state_strides, strides, (size_t)ndim * sizeof(int64_t));
    out.tensor.data = data;
    out.tensor.device.device_type = FFG_DEVICE_CPU;
    out.tensor.ndim = ndim;
    out.tensor.dtype = F32;
    out.tensor.shape = ndim > 0 ? state_shape : NULL;
    out.tensor.strides = strides != NULL ? state_strides : NULL;
    out.base = base;
    out.alias_of = alias_of;
    return out;
}

static void next_run(void)
{
    memset(state_shape, 0x5a, sizeof state_shape);
    memset(state_strides, 0x5a, sizeof state_strides);
}

static void check_dims(const FfgDLManagedTensorVersioned *m, int32_t ndim, const int64_t *shape,
                       const int64_t *strides)
{
    int32_t i;

    CHECK(m->dl_tensor.ndim == ndim);
    CHECK(m->dl_tensor.shape != NULL && m->dl_tensor.shape != state_shape);
    CHECK(m->dl_tensor.strides != NULL && m->dl_tensor.strides != state_strides);
    for (i = 0; i < ndim; i++) {
        CHECK(m->dl_tensor.shape[i] == shape[i]);
        CHECK(m->dl_tensor.strides[i] == strides[i]);
    }
}

static void stale(FfgError *err)
{
    err->code = 99;
    err->node = 99;
    err->input = 99;
    strcpy(err->message, "stale");
}

static void check_cleared(const FfgError *err)
{
    CHECK(err->code == FFG_OK && err->node == -1 && err->input == -1 && err->message[0] == '\0');
}

/* ------------------------------------------------------------------ layout */

/* DLPack 1.x's structs as dlpack.h declares them, under other names. */
typedef struct { int32_t device_type; int32_t device_id; } DevMirror;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DtypeMirror;
typedef struct {
    void *data;
    DevMirror device;
    int32_t ndim;
    DtypeMirror dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} TensorMirror;
typedef struct { uint32_t major; uint32_t minor; } VersionMirror;
typedef struct ManagedMirror {
    VersionMirror version;
    void *manager_ctx;
    void (*deleter)(struct ManagedMirror *self);
    uint64_t flags;
    TensorMirror dl_tensor;
} ManagedMirror;

static void test_layout(void)
{
    CHECK(sizeof(FfgDLManagedTensorVersioned) == sizeof(ManagedMirror));
    CHECK(offsetof(FfgDLManagedTensorVersioned, version) == offsetof(ManagedMirror, version));
    CHECK(offsetof(FfgDLManagedTensorVersioned, manager_ctx) == offsetof(ManagedMirror, manager_ctx));
    CHECK(offsetof(FfgDLManagedTensorVersioned, deleter) == offsetof(ManagedMirror, deleter));
    CHECK(offsetof(FfgDLManagedTensorVersioned, flags) == offsetof(ManagedMirror, flags));
    CHECK(offsetof(FfgDLManagedTensorVersioned, dl_tensor) == offsetof(ManagedMirror, dl_tensor));
    CHECK(sizeof(FfgTensor) == sizeof(TensorMirror));
    CHECK(offsetof(FfgTensor, shape) == offsetof(TensorMirror, shape));
    CHECK(offsetof(FfgTensor, byte_offset) == offsetof(TensorMirror, byte_offset));
    if (sizeof(void *) == 8) {
        CHECK(offsetof(FfgDLManagedTensorVersioned, deleter) == 16);
        CHECK(offsetof(FfgDLManagedTensorVersioned, flags) == 24);
        CHECK(offsetof(FfgDLManagedTensorVersioned, dl_tensor) == 32);
    }
    CHECK(FFG_DLPACK_FLAG_READ_ONLY == 1 && FFG_DLPACK_FLAG_IS_COPIED == 2);
    CHECK(FFG_DLPACK_MAJOR == 1 && FFG_DLPACK_MINOR == 0);
}

/* ------------------------------------------------------------------ taking inputs */

static void test_take_and_drop(void)
{
    int deleted = 0;
    Producer *p = make_producer(&deleted, 0);
    FfgDLPackInput *h = NULL;
    FfgTensor in;
    FfgError err;

    stale(&err);
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, &err) == FFG_OK);
    check_cleared(&err);
    CHECK(h != NULL);
    CHECK(in.data == p->data && in.ndim == 3 && in.shape == p->shape && in.strides == p->strides);
    CHECK(in.device.device_type == FFG_DEVICE_CPU && in.dtype.code == FFG_DTYPE_FLOAT && in.dtype.bits == 32);
    CHECK(ffg_dlpack_read_only(h) == 0);
    CHECK(deleted == 0);
    ffg_dlpack_drop(h);
    CHECK(deleted == 1);

    ffg_dlpack_drop(NULL);
    CHECK(ffg_dlpack_read_only(NULL) == 0);
}

static void test_take_read_only_newer_minor_and_err_null(void)
{
    int deleted = 0;
    Producer *p = make_producer(&deleted, FFG_DLPACK_FLAG_READ_ONLY);
    FfgDLPackInput *h = NULL;
    FfgTensor in;

    p->managed.version.minor = 7;       /* a newer minor keeps the layout: accepted */
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_OK);
    CHECK(ffg_dlpack_read_only(h) == 1);
    ffg_dlpack_drop(h);
    CHECK(deleted == 1);
}

static void test_take_without_deleter(void)
{
    /* DLPack allows a NULL deleter (nothing to free): dropping must not call it. */
    FfgDLManagedTensorVersioned m;
    FfgDLPackInput *h = NULL;
    FfgTensor in;
    float x = 1.5f;

    memset(&m, 0, sizeof m);
    m.version.major = 1;
    m.dl_tensor.data = &x;
    m.dl_tensor.device.device_type = FFG_DEVICE_CPU;
    m.dl_tensor.dtype = F32;        /* 0-d: shape may be NULL */
    CHECK(ffg_dlpack_take(&m, &h, &in, NULL) == FFG_OK);
    CHECK(in.ndim == 0 && in.data == &x);
    ffg_dlpack_drop(h);
}

static void test_take_refusals(void)
{
    int deleted = 0;
    Producer *p = make_producer(&deleted, 0);
    FfgDLPackInput *h;
    FfgDLPackInput *junk = (FfgDLPackInput *)&deleted;      /* any non-NULL value */
    FfgTensor in;
    FfgError err;

    h = junk;
    CHECK_ERR(ffg_dlpack_take(NULL, &h, &in, &err), err, FFG_ERR_ABI, "managed tensor is NULL");
    CHECK(h == NULL && err.input == -1);
    CHECK(ffg_dlpack_take(NULL, &h, &in, NULL) == FFG_ERR_ABI);
    CHECK_ERR(ffg_dlpack_take(&p->managed, NULL, &in, &err), err, FFG_ERR_ABI, "holder is NULL");
    h = junk;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, NULL, &err), err, FFG_ERR_ABI, "as_input is NULL");
    CHECK(h == NULL);

    p->managed.version.major = 2;
    p->managed.version.minor = 1;
    h = junk;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_ABI, "DLPack version 2.1 is not supported");
    CHECK(h == NULL);
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_ERR_ABI);
    p->managed.version.major = 0;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_ABI, "version 0.1");
    p->managed.version.major = 1;

    p->managed.dl_tensor.ndim = FFG_MAX_NDIM + 1;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_TYPE, "33 dimensions");
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_ERR_TYPE);
    p->managed.dl_tensor.ndim = -1;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_TYPE, "-1 dimensions");
    p->managed.dl_tensor.ndim = 3;

    p->managed.dl_tensor.dtype.lanes = 4;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_TYPE, "lanes 4");
    p->managed.dl_tensor.dtype.lanes = 1;

    p->managed.dl_tensor.shape = NULL;
    CHECK_ERR(ffg_dlpack_take(&p->managed, &h, &in, &err), err, FFG_ERR_VALUE, "shape is NULL but ndim is 3");
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_ERR_VALUE);
    p->managed.dl_tensor.shape = p->shape;
    CHECK(h == NULL);

    /* No refusal took ownership: the tensor is still the caller's to delete. */
    CHECK(deleted == 0);
    p->managed.deleter(&p->managed);
    CHECK(deleted == 1);
}

/* ------------------------------------------------------------------ owned outputs */

static void test_owned_with_allocator(void)
{
    static const int64_t shape[2] = {2, 3};
    static const int64_t strides[2] = {3, 1};
    Counter counter = {0, 0, NULL};
    FfgAllocator allocator;
    FfgDLManagedTensorVersioned *w = NULL;
    FfgOutput out;
    FfgError err;
    float *base;

    allocator.alloc = counting_alloc;
    allocator.release = counting_release;
    allocator.ctx = &counter;
    base = (float *)allocator.alloc(allocator.ctx, 8 * sizeof(float));
    CHECK(base != NULL);
    base[7] = 42.0f;
    out = make_output(FFG_OUT_OWNED, base, base, 2, shape, strides);
    out.tensor.byte_offset = 2 * sizeof(float);
    out.tensor.device.device_id = 3;

    stale(&err);
    CHECK(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, &err) == FFG_OK);
    check_cleared(&err);
    CHECK(w != NULL);
    CHECK(w->version.major == 1 && w->version.minor == 0);
    CHECK(w->flags == 0);
    CHECK(w->deleter != NULL && w->manager_ctx != NULL);
    CHECK(w->dl_tensor.data == base && w->dl_tensor.byte_offset == 2 * sizeof(float));
    CHECK(w->dl_tensor.device.device_type == FFG_DEVICE_CPU && w->dl_tensor.device.device_id == 3);
    CHECK(w->dl_tensor.dtype.code == FFG_DTYPE_FLOAT && w->dl_tensor.dtype.bits == 32 &&
          w->dl_tensor.dtype.lanes == 1);

    /* The next run overwrites the state's arrays, and the host's allocator table goes away:
       the wrapped tensor kept copies of all three. */
    next_run();
    memset(&allocator, 0, sizeof allocator);
    check_dims(w, 2, shape, strides);
    CHECK(((float *)w->dl_tensor.data)[7] == 42.0f);

    CHECK(counter.releases == 0);
    w->deleter(w);
    CHECK(counter.releases == 1 && counter.last_released == base);
}

static void test_owned_with_malloc_and_computed_strides(void)
{
    static const int64_t shape[3] = {4, 2, 3};
    static const int64_t want[3] = {6, 3, 1};
    static const int64_t empty_shape[3] = {2, 0, 3};
    static const int64_t empty_want[3] = {3, 3, 1};
    FfgDLManagedTensorVersioned *w = NULL;
    FfgOutput out;
    void *base = malloc(24 * sizeof(float));

    /* allocator NULL: the block came from malloc and the deleter free()s it (ASan sees a leak otherwise). */
    CHECK(base != NULL);
    out = make_output(FFG_OUT_OWNED, base, base, 3, shape, NULL);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, NULL) == FFG_OK);
    next_run();
    check_dims(w, 3, shape, want);
    w->deleter(w);

    /* An empty array: a 0 dimension counts as 1, as NumPy and PyTorch write strides. */
    base = malloc(1);
    CHECK(base != NULL);
    out = make_output(FFG_OUT_OWNED, base, base, 3, empty_shape, NULL);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, NULL) == FFG_OK);
    check_dims(w, 3, empty_shape, empty_want);
    w->deleter(w);
}

static void test_owned_negative_strides_and_null_base(void)
{
    static const int64_t shape[2] = {3, 4};
    static const int64_t strides[2] = {-4, 0};
    Counter counter = {0, 0, NULL};
    FfgAllocator allocator = {counting_alloc, counting_release, NULL};
    FfgDLManagedTensorVersioned *w = NULL;
    FfgOutput out;
    float *base = (float *)malloc(12 * sizeof(float));

    allocator.ctx = &counter;
    CHECK(base != NULL);
    out = make_output(FFG_OUT_OWNED, base, base, 2, shape, strides);
    out.tensor.byte_offset = 8 * sizeof(float);
    CHECK(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, NULL) == FFG_OK);
    check_dims(w, 2, shape, strides);
    CHECK(w->dl_tensor.byte_offset == 8 * sizeof(float));
    w->deleter(w);
    CHECK(counter.releases == 1);

    /* Nothing allocated (an empty result): release is never called with NULL. */
    out = make_output(FFG_OUT_OWNED, NULL, NULL, 2, shape, strides);
    out.tensor.shape[0] = 0;
    CHECK(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, NULL) == FFG_OK);
    w->deleter(w);
    CHECK(counter.releases == 1);
}

static void test_owned_cuda(void)
{
    static const int64_t shape[1] = {5};
    static const int64_t strides[1] = {1};
    Counter counter = {0, 0, NULL};
    FfgAllocator cuda = {counting_alloc, counting_release, NULL};
    FfgDLManagedTensorVersioned *w = (FfgDLManagedTensorVersioned *)&counter;
    FfgOutput out;
    FfgError err;
    void *block = malloc(5 * sizeof(float));    /* stands in for device memory */

    cuda.ctx = &counter;
    CHECK(block != NULL);
    out = make_output(FFG_OUT_OWNED, block, block, 1, shape, strides);
    out.tensor.device.device_type = FFG_DEVICE_CUDA;
    out.tensor.device.device_id = 1;

    /* free() cannot release device memory: refused, and the block stays the host's. */
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, &err), err, FFG_ERR_VALUE,
              "device type 2 cannot be released with free()");
    CHECK(w == NULL && err.input == -1);

    CHECK(ffg_dlpack_wrap_output(&out, &cuda, NULL, 0, &w, NULL) == FFG_OK);
    CHECK(w->dl_tensor.device.device_type == FFG_DEVICE_CUDA && w->dl_tensor.device.device_id == 1);
    w->deleter(w);
    CHECK(counter.releases == 1 && counter.last_released == block);
}

/* ------------------------------------------------------------------ aliasing outputs */

static void test_alias_host_drops_first(void)
{
    static const int64_t shape[2] = {3, 4};
    static const int64_t strides[2] = {1, 3};
    int deleted = 0;
    Producer *p = make_producer(&deleted, FFG_DLPACK_FLAG_READ_ONLY);
    FfgDLPackInput *h = NULL;
    FfgDLPackInput *inputs[2];
    FfgTensor in;
    FfgDLManagedTensorVersioned *w = NULL;
    FfgOutput out;
    FfgError err;

    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_OK);
    inputs[0] = NULL;           /* slot 0 was passed as a plain FfgTensor */
    inputs[1] = h;
    out = make_output(1, p->data, NULL, 2, shape, strides);
    out.tensor.byte_offset = 12 * sizeof(float);    /* the second 3x4 block, transposed */

    CHECK(ffg_dlpack_wrap_output(&out, NULL, inputs, 2, &w, &err) == FFG_OK);
    CHECK(err.code == FFG_OK);
    CHECK(w->flags == FFG_DLPACK_FLAG_READ_ONLY);       /* inherited from the input */
    CHECK(w->dl_tensor.data == p->data && w->dl_tensor.byte_offset == 12 * sizeof(float));
    next_run();
    check_dims(w, 2, shape, strides);

    /* The host is done with its input; the output still reads it. */
    ffg_dlpack_drop(h);
    CHECK(deleted == 0);
    CHECK(((const float *)((const char *)w->dl_tensor.data + w->dl_tensor.byte_offset))[5] == 17.0f);
    w->deleter(w);
    CHECK(deleted == 1);
}

static void test_alias_outputs_delete_first(void)
{
    static const int64_t shape[1] = {24};
    static const int64_t strides[1] = {1};
    int deleted = 0;
    Producer *p = make_producer(&deleted, 0);
    FfgDLPackInput *h = NULL;
    FfgTensor in;
    FfgDLManagedTensorVersioned *w1 = NULL, *w2 = NULL;
    FfgOutput out;

    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_OK);
    out = make_output(0, p->data, NULL, 1, shape, strides);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, &h, 1, &w1, NULL) == FFG_OK);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, &h, 1, &w2, NULL) == FFG_OK);
    CHECK(w1->flags == 0 && w2->flags == 0);
    CHECK(w1->dl_tensor.shape != w2->dl_tensor.shape);     /* each wrapper has its own copies */

    w1->deleter(w1);
    CHECK(deleted == 0);
    ffg_dlpack_drop(h);
    CHECK(deleted == 0);
    w2->deleter(w2);
    CHECK(deleted == 1);
}

/* ------------------------------------------------------------------ host buffers and 0-d */

static void test_host_buffer(void)
{
    static const int64_t shape[2] = {2, 2};
    static const int64_t strides[2] = {2, 1};
    float buffer[4] = {1, 2, 3, 4};
    FfgDLManagedTensorVersioned *w = NULL;
    FfgOutput out = make_output(FFG_OUT_HOST_BUFFER, buffer, NULL, 2, shape, strides);

    out.host_buffer = buffer;
    out.host_capacity = sizeof buffer;
    CHECK(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, NULL) == FFG_OK);
    CHECK(w->dl_tensor.data == buffer && w->flags == 0);
    check_dims(w, 2, shape, strides);
    w->deleter(w);              /* frees the wrapper only: the stack buffer is untouched */
    buffer[3] = 5;
    CHECK(buffer[0] == 1 && buffer[3] == 5);
}

static void test_zero_d(void)
{
    FfgDLManagedTensorVersioned *w = NULL;
    float *base = (float *)malloc(sizeof(float));
    FfgOutput out;

    CHECK(base != NULL);
    *base = 2.5f;
    out = make_output(FFG_OUT_OWNED, base, base, 0, NULL, NULL);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, NULL) == FFG_OK);
    CHECK(w->dl_tensor.ndim == 0 && w->dl_tensor.shape != NULL && w->dl_tensor.strides == NULL);
    CHECK(*(float *)w->dl_tensor.data == 2.5f);
    w->deleter(w);
}

/* ------------------------------------------------------------------ output refusals */

static void test_wrap_refusals(void)
{
    static const int64_t shape[2] = {2, 3};
    static const int64_t strides[2] = {3, 1};
    int deleted = 0;
    Producer *p = make_producer(&deleted, 0);
    FfgDLPackInput *h = NULL;
    FfgDLPackInput *no_holders[3] = {NULL, NULL, NULL};
    FfgTensor in;
    Counter counter = {0, 0, NULL};
    FfgAllocator allocator = {counting_alloc, counting_release, NULL};
    FfgAllocator no_release = {counting_alloc, NULL, NULL};
    FfgDLManagedTensorVersioned *junk = (FfgDLManagedTensorVersioned *)&deleted;
    FfgDLManagedTensorVersioned *w;
    FfgOutput out;
    FfgError err;
    void *base = malloc(6 * sizeof(float));

    allocator.ctx = &counter;
    CHECK(base != NULL);
    CHECK(ffg_dlpack_take(&p->managed, &h, &in, NULL) == FFG_OK);

    w = junk;
    CHECK_ERR(ffg_dlpack_wrap_output(NULL, NULL, NULL, 0, &w, &err), err, FFG_ERR_ABI, "out is NULL");
    CHECK(w == NULL);
    CHECK(ffg_dlpack_wrap_output(NULL, NULL, NULL, 0, &w, NULL) == FFG_ERR_ABI);
    out = make_output(FFG_OUT_OWNED, base, base, 2, shape, strides);
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, NULL, &err), err, FFG_ERR_ABI, "wrapped is NULL");

    /* An output aliasing an input that was passed without a holder: no inputs at all, a NULL
       entry, and a slot past n_inputs. The holder given for another slot is not touched. */
    out = make_output(2, p->data, NULL, 2, shape, strides);
    w = junk;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, NULL, 0, &w, &err), err, FFG_ERR_VALUE,
              "output aliases input slot 2 but no holder was given for it");
    CHECK(err.input == 2 && w == NULL);
    no_holders[0] = h;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, no_holders, 3, &w, &err), err, FFG_ERR_VALUE,
              "output aliases input slot 2 but no holder was given for it");
    CHECK(err.input == 2);
    CHECK(ffg_dlpack_wrap_output(&out, NULL, no_holders, 3, &w, NULL) == FFG_ERR_VALUE);
    out.alias_of = 1;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, &h, 1, &w, &err), err, FFG_ERR_VALUE,
              "output aliases input slot 1 but no holder");
    CHECK(err.input == 1 && w == NULL);

    out.alias_of = -3;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, NULL, &h, 1, &w, &err), err, FFG_ERR_VALUE, "alias_of is -3");

    out = make_output(FFG_OUT_OWNED, base, base, 2, shape, strides);
    out.tensor.ndim = FFG_MAX_NDIM + 1;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, &err), err, FFG_ERR_TYPE, "33 dimensions");
    CHECK(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, NULL) == FFG_ERR_TYPE);
    out.tensor.ndim = 2;
    out.tensor.shape = NULL;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, &allocator, NULL, 0, &w, &err), err, FFG_ERR_VALUE,
              "shape is NULL but ndim is 2");
    out.tensor.shape = state_shape;
    CHECK_ERR(ffg_dlpack_wrap_output(&out, &no_release, NULL, 0, &w, &err), err, FFG_ERR_ABI,
              "release function is NULL");
    CHECK(w == NULL);

    /* No refusal took the block or a reference: the block is still the host's to release,
       and the host's single drop deletes the input. */
    CHECK(counter.releases == 0);
    free(base);
    ffg_dlpack_drop(h);
    CHECK(deleted == 1);
}

int main(void)
{
    test_layout();
    test_take_and_drop();
    test_take_read_only_newer_minor_and_err_null();
    test_take_without_deleter();
    test_take_refusals();
    test_owned_with_allocator();
    test_owned_with_malloc_and_computed_strides();
    test_owned_negative_strides_and_null_base();
    test_owned_cuda();
    test_alias_host_drops_first();
    test_alias_outputs_delete_first();
    test_host_buffer();
    test_zero_d();
    test_wrap_refusals();
    printf("ok\n");
    return 0;
}

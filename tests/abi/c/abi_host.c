/*
 * abi_host.c -- a host of any compiled ffigraph graph, written against ffigraph_abi.h alone.
 *
 * It knows nothing of the graph it loads: no generated header, no symbol prefix. It finds the
 * library's one fixed entry point, checks the versions and the struct layout, reads the slots
 * from the description, feeds the inputs from .npy files, runs, and writes the outputs as .npy
 * files. On failure it prints the error record with the node table's text for err.node and the
 * slot name for err.input. Each run also exercises what a careful host relies on:
 *   - every owned output block is released through the host's allocator (counted: the count
 *     must come back to zero), every aliased output is copied before its input goes away;
 *   - a second run offers each output a block of its own (results must land there, identical);
 *   - a third run offers each output the memory of input 0 (which would be read while written):
 *     the library must decline it and still give the same result;
 *   - a fourth run takes input 0 in as a DLPack tensor and hands every output on as one
 *     (ffg_dlpack): an output viewing that input keeps it alive until its own deleter runs;
 *   - the error record is fully reset by a successful run (detail, node, input, message).
 *
 * usage: abi_host LIBRARY OUTDIR IN0.npy IN1.npy ...   (inputs in slot order, shared ones too)
 * exit:  0 ran; 3 the run failed (the error is printed); 1 the host refused the library;
 *        2 the host found the library broke a rule.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffigraph_abi.h"
#include "ffg_dlpack.h"
#include "ffg_npy.h"

#define MAX_SLOTS 64

/* ---- a counting allocator: every block handed out must come back ---- */
typedef struct counter {
    long live;
    long total;
} counter;

static void *counting_alloc(void *ctx, size_t nbytes)
{
    counter *c = (counter *)ctx;
    void *p = malloc(nbytes ? nbytes : 1);
    if (p != NULL) {
        c->live += 1;
        c->total += 1;
    }
    return p;
}

static void counting_release(void *ctx, void *ptr)
{
    counter *c = (counter *)ctx;
    if (ptr == NULL) {
        fprintf(stderr, "abi_host: release(ctx, NULL) was called\n");
        exit(2);
    }
    c->live -= 1;
    free(ptr);
}

static int producer_deleted = 0;

static void producer_deleter(FfgDLManagedTensorVersioned *self)
{
    (void)self;   /* the producer's memory is the .npy array this host frees itself */
    producer_deleted += 1;
}

static int broke(const char *what)
{
    fprintf(stderr, "abi_host: the library broke a rule: %s\n", what);
    return 2;
}

static const char *role_name(int32_t role)
{
    switch (role) {
    case FFG_ROLE_INPUT: return "input";
    case FFG_ROLE_SHARED: return "shared";
    case FFG_ROLE_OUTPUT: return "output";
    case FFG_ROLE_UPDATE: return "update";
    default: return "?";
    }
}

static int64_t tensor_bytes(const FfgTensor *t)
{
    int64_t n = t->dtype.bits / 8;
    int d;
    for (d = 0; d < t->ndim; ++d)
        n *= t->shape[d];
    return n;
}

/* Element-by-element equality of two CPU tensors of one dtype and shape (any strides). */
static int same_values(const FfgTensor *a, const FfgTensor *b)
{
    int64_t size = 1, i, itemsize = a->dtype.bits / 8;
    int d;
    if (a->ndim != b->ndim || a->dtype.code != b->dtype.code || a->dtype.bits != b->dtype.bits)
        return 0;
    for (d = 0; d < a->ndim; ++d) {
        if (a->shape[d] != b->shape[d])
            return 0;
        size *= a->shape[d];
    }
    for (i = 0; i < size; ++i) {
        int64_t rest = i, off_a = 0, off_b = 0, sa = 1, sb = 1;
        for (d = a->ndim - 1; d >= 0; --d) {
            int64_t k = rest % a->shape[d];
            rest /= a->shape[d];
            off_a += k * (a->strides ? a->strides[d] : sa);
            off_b += k * (b->strides ? b->strides[d] : sb);
            sa *= a->shape[d];
            sb *= b->shape[d];
        }
        if (memcmp((const char *)a->data + a->byte_offset + off_a * itemsize,
                   (const char *)b->data + b->byte_offset + off_b * itemsize, (size_t)itemsize) != 0)
            return 0;
    }
    return 1;
}

static void print_error(const FfgDescription *desc, const FfgError *err)
{
    printf("error code %d\n", (int)err->code);
    printf("error message: %s\n", err->message);
    if (err->node >= 0 && err->node < desc->n_nodes)
        printf("error node %d: op %s | %s\n", (int)err->node, desc->nodes[err->node].op,
               desc->nodes[err->node].text);
    else
        printf("error node %d\n", (int)err->node);
    if (err->input >= 0 && err->input < desc->n_inputs)
        printf("error input %d: %s\n", (int)err->input, desc->inputs[err->input].name);
    else
        printf("error input %d\n", (int)err->input);
}

/* Frees what a successful run handed over (owned blocks, through the allocator). */
static void release_outputs(const FfgAllocator *al, FfgOutput *out, int n)
{
    int k;
    for (k = 0; k < n; ++k)
        if (out[k].alias_of == FFG_OUT_OWNED && out[k].base != NULL) {
            al->release(al->ctx, out[k].base);
            out[k].base = NULL;
        }
}

int main(int argc, char **argv)
{
    static const int64_t host_layout[] = {FFG_LAYOUT_ENTRIES};
    void *lib;
    ffg_library_api_fn *entry;
    const FfgLibraryApi *api;
    const FfgDescription *desc;
    counter counts = {0, 0};
    FfgAllocator allocator;
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
    FfgNpyArray arrays[MAX_SLOTS];
    FfgTensor inputs[MAX_SLOTS];
    FfgOutput first[MAX_SLOTS], second[MAX_SLOTS], third[MAX_SLOTS];
    void *offered[MAX_SLOTS];
    FfgError err;
    void *state;
    int32_t code, k, n_in, n_out;
    char path[4096];

    if (argc < 3) {
        fprintf(stderr, "usage: abi_host LIBRARY OUTDIR IN0.npy ...\n");
        return 1;
    }
    /* 1. the entry point, the versions and the layout */
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "abi_host: %s\n", dlerror());
        return 1;
    }
    entry = (ffg_library_api_fn *)dlsym(lib, "ffg_library_api");
    if (entry == NULL) {
        fprintf(stderr, "abi_host: no ffg_library_api in %s\n", argv[1]);
        return 1;
    }
    if (entry(FFG_ABI_MAJOR + 1) != NULL || entry(FFG_ABI_MAJOR - 1) != NULL)
        return broke("ffg_library_api answered for another major");
    api = entry(FFG_ABI_MAJOR);
    if (!FFG_API_USABLE(api)) {
        fprintf(stderr, "abi_host: the library speaks ABI %u, this host %d\n",
                api ? (unsigned)api->abi_version : 0u, FFG_ABI_VERSION);
        return 1;
    }
    desc = api->describe();
    if (api->version() != api->abi_version || desc->abi_version != api->abi_version
            || !FFG_HAS_FIELD(desc, FfgDescription, source_hash) || strcmp(desc->prefix, api->prefix) != 0
            || strncmp(api->prefix, "ffg_", 4) != 0)
        return broke("version, description size or prefix disagree");
    if (desc->n_layout != (int32_t)(sizeof host_layout / sizeof host_layout[0])
            || memcmp(desc->layout, host_layout, sizeof host_layout) != 0)
        return broke("struct layout differs from this host's");
    if ((api->profile != NULL) != ((desc->flags & FFG_DESCRIBE_PROFILED) != 0))
        return broke("profile entry and FFG_DESCRIBE_PROFILED disagree");
    n_in = desc->n_inputs;
    n_out = desc->n_outputs;
    if (n_in > MAX_SLOTS || n_out > MAX_SLOTS || argc - 3 != n_in) {
        fprintf(stderr, "abi_host: the library has %d input slots (%d given) and %d outputs\n",
                (int)n_in, argc - 3, (int)n_out);
        return 1;
    }
    printf("prefix %s\n", api->prefix);
    for (k = 0; k < n_in; ++k)
        printf("slot in %d %s %s ndim %d\n", (int)k, role_name(desc->inputs[k].role), desc->inputs[k].name,
               (int)desc->inputs[k].ndim);
    for (k = 0; k < n_out; ++k)
        printf("slot out %d %s %s ndim %d updates %d\n", (int)k, role_name(desc->outputs[k].role),
               desc->outputs[k].name, (int)desc->outputs[k].ndim, (int)desc->outputs[k].updates);
    for (k = 0; k < desc->n_nodes; ++k)
        printf("node %d %s | %s\n", (int)k, desc->nodes[k].op, desc->nodes[k].text);

    /* 2. a state whose memory comes from the counting allocator */
    allocator.alloc = counting_alloc;
    allocator.release = counting_release;
    allocator.ctx = &counts;
    options.allocator = &allocator;
    state = api->create(&options, &err);
    if (state == NULL) {
        fprintf(stderr, "abi_host: create: %s\n", err.message);
        return 1;
    }
    memset(arrays, 0, sizeof arrays);
    for (k = 0; k < n_in; ++k) {
        if (ffg_npy_read(argv[3 + k], &arrays[k], &err) != FFG_OK) {
            fprintf(stderr, "abi_host: %s\n", err.message);
            return 1;
        }
        inputs[k] = arrays[k].tensor;
    }

    /* 3. the first run: results in the library's blocks (or views of inputs) */
    memset(first, 0, sizeof first);
    memset(&err, 0x5a, sizeof err);   /* garbage: the run must reset every field */
    code = api->run(state, inputs, n_in, first, n_out, &err);
    if (code != FFG_OK) {
        if (code != err.code)
            return broke("run's return code is not err.code");
        print_error(desc, &err);
        for (k = 0; k < n_out; ++k)
            if (first[k].base != NULL)
                return broke("a failed run handed over a block");
        api->destroy(state);
        for (k = 0; k < n_in; ++k)
            ffg_npy_free(&arrays[k]);
        if (counts.live != 0)
            return broke("blocks leaked after a failed run");
        dlclose(lib);
        return 3;
    }
    if (err.node != -1 || err.input != -1 || err.detail != 0 || err.message[0] != '\0')
        return broke("a successful run left the error record dirty");
    for (k = 0; k < n_out; ++k) {
        FfgTensor *t = &first[k].tensor;
        if (t->ndim > 0 && t->strides == NULL)
            return broke("an output without strides");
        if (t->device.device_type != FFG_DEVICE_CPU || t->device.device_id != 0 || first[k].reserved != 0)
            return broke("an output's device or reserved field");
        if (first[k].alias_of >= n_in || first[k].alias_of == FFG_OUT_HOST_BUFFER)
            return broke("alias_of out of range (nothing was offered)");
        if (first[k].alias_of >= 0 && first[k].base != NULL)
            return broke("an aliased output with a base");
        snprintf(path, sizeof path, "%s/out%d.npy", argv[2], (int)k);
        if (ffg_npy_write(path, t, &err) != FFG_OK) {
            fprintf(stderr, "abi_host: %s\n", err.message);
            return 1;
        }
        printf("output %d alias_of %d\n", (int)k, (int)first[k].alias_of);
    }

    /* 4. the second run: every output is offered a block of its exact size */
    memset(second, 0, sizeof second);
    for (k = 0; k < n_out; ++k) {
        int64_t nbytes = tensor_bytes(&first[k].tensor);
        offered[k] = malloc((size_t)(nbytes > 0 ? nbytes : 1) + 16);
        second[k].host_buffer = offered[k];
        second[k].host_capacity = nbytes;
    }
    if (api->run(state, inputs, n_in, second, n_out, &err) != FFG_OK)
        return broke(err.message);
    for (k = 0; k < n_out; ++k) {
        if (!same_values(&first[k].tensor, &second[k].tensor))
            return broke("a second run with offers gave other values");
        if (second[k].alias_of == FFG_OUT_HOST_BUFFER && second[k].tensor.data != offered[k])
            return broke("FFG_OUT_HOST_BUFFER but the data is elsewhere");
        printf("offer %d alias_of %d\n", (int)k, (int)second[k].alias_of);
    }
    release_outputs(&allocator, second, n_out);
    for (k = 0; k < n_out; ++k)
        free(offered[k]);

    /* 5. the third run: each output is offered input 0's own memory, which it would overwrite
       while reading; the library must decline, and the values must not change */
    memset(third, 0, sizeof third);
    if (n_in > 0 && arrays[0].data != NULL) {
        for (k = 0; k < n_out; ++k) {
            third[k].host_buffer = arrays[0].data;
            third[k].host_capacity = tensor_bytes(&inputs[0]);
        }
    }
    if (api->run(state, inputs, n_in, third, n_out, &err) != FFG_OK)
        return broke(err.message);
    for (k = 0; k < n_out; ++k) {
        if (third[k].alias_of == FFG_OUT_HOST_BUFFER)
            return broke("an offer overlapping an input was used");
        if (!same_values(&first[k].tensor, &third[k].tensor))
            return broke("an overlapping offer changed the values");
    }
    printf("overlapping offers declined\n");

    /* 6. input 0 taken in as a DLPack tensor (its producer's deleter counts), a fourth run, and
       every output handed on as a DLPack tensor: the host drops its input first; an output that
       views it must keep it alive until that output's consumer deletes it */
    if (n_in > 0) {
        FfgDLManagedTensorVersioned producer;
        FfgDLPackInput *holders[MAX_SLOTS];
        FfgDLManagedTensorVersioned *wrapped[MAX_SLOTS];
        FfgOutput fourth[MAX_SLOTS];
        int views = 0;
        memset(&producer, 0, sizeof producer);
        memset(holders, 0, sizeof holders);
        memset(fourth, 0, sizeof fourth);
        producer.version.major = 1;
        producer.deleter = producer_deleter;
        producer.dl_tensor = inputs[0];
        if (ffg_dlpack_take(&producer, &holders[0], &inputs[0], &err) != FFG_OK)
            return broke(err.message);
        if (api->run(state, inputs, n_in, fourth, n_out, &err) != FFG_OK)
            return broke(err.message);
        for (k = 0; k < n_out; ++k) {
            wrapped[k] = NULL;
            if (fourth[k].alias_of > 0)
                continue;   /* a view of another input, which this host keeps itself */
            views += fourth[k].alias_of == 0;
            if (ffg_dlpack_wrap_output(&fourth[k], &allocator, holders, n_in, &wrapped[k], &err) != FFG_OK)
                return broke(err.message);
            if (wrapped[k]->version.major != 1 || (wrapped[k]->dl_tensor.ndim > 0 && wrapped[k]->dl_tensor.strides == NULL)
                    || !same_values(&wrapped[k]->dl_tensor, &first[k].tensor))
                return broke("a DLPack tensor differs from its output");
        }
        ffg_dlpack_drop(holders[0]);   /* the host is done with its input */
        if (producer_deleted != (views ? 0 : 1))
            return broke("the input's deleter ran while an output still viewed it, or never");
        for (k = 0; k < n_out; ++k)
            if (wrapped[k] != NULL)
                wrapped[k]->deleter(wrapped[k]);   /* releases owned blocks through the allocator */
        if (producer_deleted != 1)
            return broke("the input's deleter did not run exactly once");
        printf("dlpack in and out, %d view(s) kept their input alive\n", views);
    }
    for (k = 0; k < n_out; ++k)   /* (the third run's blocks) */
        if (third[k].alias_of == FFG_OUT_OWNED && third[k].base != NULL)
            allocator.release(allocator.ctx, third[k].base);

    /* 7. done: the first run's blocks go back, the state goes, nothing is left */
    release_outputs(&allocator, first, n_out);
    api->destroy(state);
    api->destroy(NULL);
    for (k = 0; k < n_in; ++k)
        ffg_npy_free(&arrays[k]);
    if (counts.live != 0) {
        fprintf(stderr, "abi_host: %ld blocks never released\n", counts.live);
        return 2;
    }
    printf("allocations %ld, all released\n", counts.total);
    dlclose(lib);
    printf("ok\n");
    return 0;
}

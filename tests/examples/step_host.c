/* step_host.c -- run a compiled training step N times from C, knowing only ffigraph_abi.h.
 *
 * tests/examples/test_lenet_digits.py builds it against the ABI header alone and runs the exported
 * LeNet step with it; it works for any library whose inputs are plain CPU arrays:
 *
 *   step_host LIBRARY list
 *       prints one line per input slot: "<index> <name> <role> <ndim>" (roles as FFG_ROLE_*)
 *   step_host LIBRARY run IN_DIR N OUT_DIR
 *       reads every input slot from IN_DIR/<name>.shape (the lengths, one line) and IN_DIR/<name>.bin
 *       (its elements, C order, the slot's dtype), runs the graph N times -- after each run every
 *       update output becomes the next value of the input slot it updates, as a Function's updates
 *       do -- prints "step <k> <output 0>" for a scalar first output, and writes every shared slot's
 *       final value to OUT_DIR/<name>.bin.
 *
 * cc -std=c99 -I DIR_OF_ffigraph_abi.h step_host.c -ldl -o step_host
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffigraph_abi.h"

typedef struct Slot {
    int64_t shape[FFG_MAX_NDIM];
    int64_t size;      /* elements */
    void *data;        /* C-contiguous, owned by the host */
} Slot;

static int64_t elements(int32_t ndim, const int64_t *shape)
{
    int64_t n = 1;
    int32_t d;
    for (d = 0; d < ndim; ++d)
        n *= shape[d];
    return n;
}

/* Copy the (possibly strided) tensor t into the contiguous block dst: an odometer over its index. */
static void gather(const FfgTensor *t, char *dst)
{
    size_t item = t->dtype.bits / 8;
    int64_t index[FFG_MAX_NDIM] = {0};
    int64_t n = elements(t->ndim, t->shape), k;
    const char *base = (const char *)t->data + t->byte_offset;
    int32_t d;
    for (k = 0; k < n; ++k) {
        int64_t offset = 0;
        for (d = 0; d < t->ndim; ++d)
            offset += index[d] * t->strides[d];
        memcpy(dst + k * item, base + offset * (int64_t)item, item);
        for (d = t->ndim - 1; d >= 0; --d) {
            if (++index[d] < t->shape[d])
                break;
            index[d] = 0;
        }
    }
}

static FILE *open_in(const char *dir, const char *name, const char *ext, const char *how)
{
    char path[4096];
    FILE *fh;
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    fh = fopen(path, how);
    if (fh == NULL)
        fprintf(stderr, "cannot open %s\n", path);
    return fh;
}

static int read_slot(const char *dir, const FfgSlot *slot, Slot *s)
{
    FILE *fh = open_in(dir, slot->name, "shape", "r");
    size_t item = slot->dtype.bits / 8;
    int32_t d;
    if (fh == NULL)
        return -1;
    for (d = 0; d < slot->ndim; ++d) {
        long long v;
        if (fscanf(fh, "%lld", &v) != 1 || v < 0) {
            fprintf(stderr, "%s.shape: needs %d lengths\n", slot->name, slot->ndim);
            fclose(fh);
            return -1;
        }
        s->shape[d] = (int64_t)v;
    }
    fclose(fh);
    s->size = elements(slot->ndim, s->shape);
    s->data = malloc(s->size * item + 1);   /* +1: never malloc(0) */
    fh = open_in(dir, slot->name, "bin", "rb");
    if (s->data == NULL || fh == NULL || fread(s->data, item, (size_t)s->size, fh) != (size_t)s->size) {
        fprintf(stderr, "%s.bin: cannot read %lld elements\n", slot->name, (long long)s->size);
        if (fh != NULL)
            fclose(fh);
        return -1;
    }
    fclose(fh);
    return 0;
}

static double scalar_value(const FfgTensor *t)
{
    const char *p = (const char *)t->data + t->byte_offset;
    if (t->dtype.code == FFG_DTYPE_FLOAT && t->dtype.bits == 32)
        return *(const float *)p;
    if (t->dtype.code == FFG_DTYPE_FLOAT && t->dtype.bits == 64)
        return *(const double *)p;
    return 0.0;
}

int main(int argc, char **argv)
{
    void *lib = argc > 2 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    ffg_library_api_fn *entry = lib ? (ffg_library_api_fn *)dlsym(lib, "ffg_library_api") : NULL;
    const FfgLibraryApi *api = entry ? entry(FFG_ABI_MAJOR) : NULL;
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
    const FfgDescription *desc;
    FfgTensor *inputs;
    FfgOutput *outputs;
    Slot *slots;
    void **next;
    FfgError err;
    void *state;
    int32_t k, n_in, n_out;
    long step, n_steps;

    if (!FFG_API_USABLE(api)) {
        fprintf(stderr, "usage: step_host LIBRARY list | run IN_DIR N OUT_DIR (a library of ABI %d)\n",
                FFG_ABI_MAJOR);
        return 2;
    }
    desc = api->describe();
    n_in = desc->n_inputs;
    n_out = desc->n_outputs;
    if (strcmp(argv[2], "list") == 0) {
        for (k = 0; k < n_in; ++k)
            printf("%d %s %d %d\n", k, desc->inputs[k].name, desc->inputs[k].role, desc->inputs[k].ndim);
        return 0;
    }
    if (strcmp(argv[2], "run") != 0 || argc != 6) {
        fprintf(stderr, "usage: step_host LIBRARY list | run IN_DIR N OUT_DIR\n");
        return 2;
    }
    n_steps = strtol(argv[4], NULL, 10);
    slots = calloc((size_t)n_in + 1, sizeof *slots);
    inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    next = calloc((size_t)n_in + 1, sizeof *next);
    outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    if (slots == NULL || inputs == NULL || next == NULL || outputs == NULL)
        return 1;
    for (k = 0; k < n_in; ++k) {
        const FfgSlot *slot = &desc->inputs[k];
        if (read_slot(argv[3], slot, &slots[k]) != 0)
            return 1;
        inputs[k].device.device_type = FFG_DEVICE_CPU;
        inputs[k].ndim = slot->ndim;
        inputs[k].dtype = slot->dtype;
        inputs[k].shape = slots[k].shape;
        inputs[k].strides = NULL;   /* C-contiguous */
        inputs[k].data = slots[k].data;
    }
    state = api->create(&options, &err);
    if (state == NULL) {
        fprintf(stderr, "create: %s\n", err.message);
        return 1;
    }
    for (step = 1; step <= n_steps; ++step) {
        memset(outputs, 0, (size_t)n_out * sizeof *outputs);   /* no offers: the library allocates */
        if (api->run(state, inputs, n_in, outputs, n_out, &err) != FFG_OK) {
            fprintf(stderr, "step %ld: %s\n", step, err.message);
            api->destroy(state);
            return 1;
        }
        if (n_out > 0 && outputs[0].tensor.ndim == 0)
            printf("step %ld %.9g\n", step, scalar_value(&outputs[0].tensor));
        /* the updates: copy every new value out first (an output may be a view of an input) */
        for (k = 0; k < n_out; ++k) {
            const FfgSlot *slot = &desc->outputs[k];
            const FfgTensor *t = &outputs[k].tensor;
            int32_t target = slot->updates;
            if (slot->role != FFG_ROLE_UPDATE)
                continue;
            if (target < 0 || target >= n_in || elements(t->ndim, t->shape) != slots[target].size
                || t->ndim != inputs[target].ndim) {
                fprintf(stderr, "%s: does not fit the input it updates\n", slot->name);
                return 1;
            }
            next[target] = malloc(slots[target].size * (t->dtype.bits / 8) + 1);
            if (next[target] == NULL)
                return 1;
            gather(t, next[target]);
            memcpy(slots[target].shape, t->shape, (size_t)t->ndim * sizeof(int64_t));
        }
        for (k = 0; k < n_out; ++k)
            if (outputs[k].alias_of == FFG_OUT_OWNED)
                free(outputs[k].base);   /* create's allocator: malloc/free */
        for (k = 0; k < n_in; ++k)
            if (next[k] != NULL) {
                free(slots[k].data);
                slots[k].data = inputs[k].data = next[k];
                next[k] = NULL;
            }
    }
    api->destroy(state);
    for (k = 0; k < n_in; ++k) {
        const FfgSlot *slot = &desc->inputs[k];
        FILE *fh;
        if (slot->role != FFG_ROLE_SHARED)
            continue;
        fh = open_in(argv[5], slot->name, "bin", "wb");
        if (fh == NULL || fwrite(slots[k].data, slot->dtype.bits / 8, (size_t)slots[k].size, fh)
                              != (size_t)slots[k].size) {
            fprintf(stderr, "cannot write %s\n", slot->name);
            return 1;
        }
        fclose(fh);
    }
    for (k = 0; k < n_in; ++k)
        free(slots[k].data);
    printf("%ld step(s) run\n", n_steps);
    free(slots);
    free(inputs);
    free(next);
    free(outputs);
    dlclose(lib);
    return 0;
}

/* host.c -- run a compiled ffigraph graph of one float64 vector, knowing only ffigraph_abi.h.
   cc -std=c99 -I path/to/ffigraph/abi host.c -ldl -o host && ./host LIBRARY */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffigraph_abi.h"

int main(int argc, char **argv)
{
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    ffg_library_api_fn *entry = lib ? (ffg_library_api_fn *)dlsym(lib, "ffg_library_api") : NULL;
    const FfgLibraryApi *api = entry ? entry(FFG_ABI_MAJOR) : NULL;   /* NULL: another major */
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;               /* malloc/free */
    double x[3] = {0.0, 1.0, 2.0};
    int64_t shape[1] = {3};
    FfgTensor input = {x, {FFG_DEVICE_CPU, 0}, 1, {FFG_DTYPE_FLOAT, 64, 1}, shape, NULL, 0};
    FfgOutput out[8];
    FfgError err;
    const FfgDescription *desc;
    void *state;
    int32_t k;
    int64_t i, n;

    if (!FFG_API_USABLE(api)) {
        fprintf(stderr, "not a library of ffigraph ABI %d\n", FFG_ABI_MAJOR);
        return 1;
    }
    desc = api->describe();
    if (desc->n_inputs != 1 || desc->inputs[0].ndim != 1 || desc->n_outputs > 8)
        return 1;
    state = api->create(&options, &err);
    if (state == NULL) {
        fprintf(stderr, "create: %s\n", err.message);
        return 1;
    }
    memset(out, 0, sizeof out);   /* no blocks offered: the library allocates the results */
    if (api->run(state, &input, 1, out, desc->n_outputs, &err) != FFG_OK) {
        fprintf(stderr, "%s\n", err.message);   /* the cause, then the failing node's text */
        api->destroy(state);
        return 1;
    }
    for (k = 0; k < desc->n_outputs; ++k) {
        const FfgTensor *t = &out[k].tensor;   /* shape and strides: valid until the next run */
        n = t->ndim == 1 ? t->shape[0] : 1;
        printf("%s:", desc->outputs[k].name);
        for (i = 0; i < n; ++i)
            printf(" %g", ((const double *)t->data)[i * (t->ndim == 1 ? t->strides[0] : 0)]);
        printf("\n");
        if (out[k].alias_of == FFG_OUT_OWNED)
            free(out[k].base);   /* the host's now: released with create's allocator */
    }
    api->destroy(state);
    dlclose(lib);
    return 0;
}

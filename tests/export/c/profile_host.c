/*
 * profile_host.c -- reads a profiled graph library's counters through the ABI, with no Python.
 *
 * Usage: profile_host LIBRARY PREFIX LENGTH CALLS
 * The library computes one float64 vector output from two float64 vector inputs (x + y).
 * It is run CALLS times on vectors of LENGTH elements, then P_profile is read and printed:
 *   runs R total_ns T
 *   node K calls C total_ns T
 *   value J node K output O ndim D nbytes B shape S0 S1 ...
 * Exit status: 0, or 1 with a message on stderr.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffigraph_abi.h"

static void *entry(void *lib, const char *prefix, const char *name)
{
    char symbol[256];
    void *fn;
    if (prefix == NULL)
        snprintf(symbol, sizeof symbol, "%s", name);
    else
        snprintf(symbol, sizeof symbol, "%s_%s", prefix, name);
    fn = dlsym(lib, symbol);
    if (fn == NULL) {
        fprintf(stderr, "profile_host: no %s in the library\n", symbol);
        exit(1);
    }
    return fn;
}

static FfgTensor vector_of(double *data, int64_t *shape)
{
    FfgTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = FFG_DEVICE_CPU;
    t.ndim = 1;
    t.dtype.code = FFG_DTYPE_FLOAT;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

int main(int argc, char **argv)
{
    void *lib, *state;
    ffg_create_fn *create;
    ffg_run_fn *run;
    ffg_profile_fn *profile;
    ffg_destroy_fn *destroy;
    FfgError err;
    FfgProfile prof;
    FfgTensor inputs[2];
    FfgOutput output;
    int64_t shape[1];
    double *x, *y;
    long length, calls, k;
    int32_t i, d;

    if (argc != 5) {
        fprintf(stderr, "usage: profile_host LIBRARY PREFIX LENGTH CALLS\n");
        return 1;
    }
    length = atol(argv[3]);
    calls = atol(argv[4]);
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "profile_host: %s\n", dlerror());
        return 1;
    }
    {   /* the fixed entry point's table holds P_profile, which only a profiled library has */
        const FfgLibraryApi *api = ((ffg_library_api_fn *)entry(lib, NULL, "ffg_library_api"))(FFG_ABI_MAJOR);
        if (!FFG_API_USABLE(api) || strcmp(api->prefix, argv[2]) != 0 || api->profile == NULL
                || !(api->describe()->flags & FFG_DESCRIBE_PROFILED)) {
            fprintf(stderr, "profile_host: the library's table is not a profiled ABI %d one\n", FFG_ABI_MAJOR);
            return 1;
        }
        create = api->create;
        run = api->run;
        profile = api->profile;
        destroy = api->destroy;
        if (profile != (ffg_profile_fn *)entry(lib, argv[2], "profile")) {
            fprintf(stderr, "profile_host: the table's profile is not P_profile\n");
            return 1;
        }
    }
    {
        FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
        state = create(&options, &err);
    }
    if (state == NULL) {
        fprintf(stderr, "profile_host: create: %s\n", err.message);
        return 1;
    }
    x = calloc((size_t)length + 1, sizeof *x);
    y = calloc((size_t)length + 1, sizeof *y);
    shape[0] = length;
    inputs[0] = vector_of(x, shape);
    inputs[1] = vector_of(y, shape);
    for (k = 0; k < calls; ++k) {
        memset(&output, 0, sizeof output);
        if (run(state, inputs, 2, &output, 1, &err) != FFG_OK) {
            fprintf(stderr, "profile_host: run: %s\n", err.message);
            return 1;
        }
        if (output.alias_of == FFG_OUT_OWNED)
            free(output.base);
    }
    if (profile(state, &prof) != FFG_OK || profile(NULL, &prof) != FFG_ERR_ABI || profile(state, NULL) != FFG_ERR_ABI) {
        fprintf(stderr, "profile_host: P_profile did not answer as the header says\n");
        return 1;
    }
    printf("runs %lld total_ns %lld\n", (long long)prof.runs, (long long)prof.total_ns);
    for (i = 0; i < prof.n_nodes; ++i)
        printf("node %d calls %lld total_ns %lld\n", (int)i, (long long)prof.nodes[i].calls,
               (long long)prof.nodes[i].total_ns);
    for (i = 0; i < prof.n_values; ++i) {
        const FfgValueProfile *v = &prof.values[i];
        printf("value %d node %d output %d ndim %d nbytes %lld shape", (int)i, (int)v->node, (int)v->output,
               (int)v->ndim, (long long)v->nbytes);
        for (d = 0; d < v->ndim; ++d)
            printf(" %lld", (long long)v->shape[d]);
        printf("\n");
    }
    destroy(state);
    free(x);
    free(y);
    dlclose(lib);
    return 0;
}

/*
 * export_pool -- the export "fused" of tests/export/test_export_threads.py, run from C: its
 * large loops are split over the library's own threads (ffigraph.config.threads when exported).
 *
 * Reads x.npy and y.npy, runs fused_run twice on them, writes the first run's outputs to
 * out0.npy, out1.npy, ... and prints:
 *   threads before N     this process's threads before the first run (/proc/self/status)
 *   threads after N      and after the runs (the library's workers are still there, asleep)
 *   same 1               when the second run gave the same bytes as the first
 * A failure prints "error CODE: MESSAGE" and exits with status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"
#include "ffg_npy.h"

static int threads_now(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return n;
}

static size_t nbytes(const FfgTensor *t)
{
    size_t n = t->dtype.bits / 8;
    int d;
    for (d = 0; d < t->ndim; ++d)
        n *= (size_t)t->shape[d];
    return n;
}

static int fail(const FfgError *err)
{
    printf("error %d: %s\n", (int)err->code, err->message);
    return 1;
}

int main(void)
{
    FfgError err;
    FfgNpyArray x, y;
    FfgTensor in[FUSED_N_INPUTS];
    FfgOutput first[FUSED_N_OUTPUTS], second[FUSED_N_OUTPUTS];
    fused_handle *h;
    int k, same = 1;
    char name[32];

    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    if (ffg_npy_read("x.npy", &x, &err) != FFG_OK || ffg_npy_read("y.npy", &y, &err) != FFG_OK)
        return fail(&err);
    in[0] = x.tensor;
    in[1] = y.tensor;
    printf("threads before %d\n", threads_now());
    h = fused_open(NULL, &err);
    if (h == NULL)
        return fail(&err);
    memset(first, 0, sizeof first);
    memset(second, 0, sizeof second);
    if (fused_run(h, in, FUSED_N_INPUTS, first, FUSED_N_OUTPUTS, &err) != FFG_OK
        || fused_run(h, in, FUSED_N_INPUTS, second, FUSED_N_OUTPUTS, &err) != FFG_OK)
        return fail(&err);
    for (k = 0; k < FUSED_N_OUTPUTS; ++k) {
        same &= nbytes(&first[k].tensor) == nbytes(&second[k].tensor)
                && memcmp(first[k].tensor.data, second[k].tensor.data, nbytes(&first[k].tensor)) == 0;
        snprintf(name, sizeof name, "out%d.npy", k);
        if (ffg_npy_write(name, &first[k].tensor, &err) != FFG_OK)
            return fail(&err);
        fused_release(h, &first[k]);
        fused_release(h, &second[k]);
    }
    printf("threads after %d\n", threads_now());
    printf("same %d\n", same);
    fused_close(h);
    ffg_npy_free(&x);
    ffg_npy_free(&y);
    return 0;
}

/*
 * A C host that calls one exported graph many times, for valgrind (tools/valgrind_check.py).
 *
 * The export is "leak" (tools/valgrind_check.py makes it): input x, a float64 matrix
 * with 4 columns; shared w, a float64 vector of 4 (starting at 1 2 3 4); outputs
 * x * 2, x.sum(axis=0) + w and (x * x).sum(); update w <- w + 1 after each successful call.
 *
 *   leak_host [CALLS]     (default 10000)
 *
 * Even calls are good ones (rows 1..8; every fourth writes output 0 into a block of ours),
 * their results checked against numbers computed here. Odd calls fail, in turn: wrong
 * dtype, wrong ndim, NULL data, NULL inputs array, and a shape that does not fit w (which
 * fails inside the graph, after an output may already have been allocated). Every output
 * of a good call is released; a failed call must leave nothing to release. The handle's
 * allocator counts blocks, and the counts must balance once the handle is closed.
 * Prints one summary line; exits 0 only when every call did what it should.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak.h"

static long n_alloc = 0, n_free = 0;

static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    n_alloc++;
    return malloc(n);
}

static void count_release(void *ctx, void *p)
{
    (void)ctx;
    if (p != NULL)
        n_free++;
    free(p);
}

static FfgTensor tensor(void *data, int ndim, int64_t *shape)
{
    FfgTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = FFG_DEVICE_CPU;
    t.ndim = ndim;
    t.dtype.code = FFG_DTYPE_FLOAT;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 10000, i;
    long good = 0, failing = 0, mismatches = 0, unexpected = 0, leftovers = 0;
    double x[9 * 5], w[4] = {1, 2, 3, 4}, block[8 * 4];
    int64_t shape[2] = {0, 4}, w_shape[1] = {4};
    FfgAllocator counting = {count_alloc, count_release, NULL};
    FfgTensor in, wv, view;
    FfgOutput out[LEAK_N_OUTPUTS];
    FfgError err;
    leak_handle *h;
    int k, r;

    h = leak_open(&counting, &err);
    if (h == NULL) {
        printf("open failed: %s\n", err.message);
        return 1;
    }
    wv = tensor(w, 1, w_shape);
    if (leak_set_shared(h, leak_shared_index("w"), &wv, &err) != FFG_OK) {
        printf("set_shared failed: %s\n", err.message);
        return 1;
    }
    for (i = 0; i < calls; ++i) {
        int rows = 1 + (int)((i / 2) % 8), wrong = 0;
        int32_t code, want = FFG_OK;
        const FfgTensor *inputs = &in;
        shape[0] = rows;
        shape[1] = 4;
        for (k = 0; k < rows * 5; ++k)
            x[k] = (double)((k + i) % 17) * 0.25 - 1.0;
        in = tensor(x, 2, shape);
        memset(out, 0, sizeof out);
        if (i % 2 == 0) {
            if (i % 4 == 0) {
                out[0].host_buffer = block;
                out[0].host_capacity = sizeof block;
            }
        } else {
            switch ((i / 2) % 5) {
            case 0: in.dtype.code = FFG_DTYPE_INT; want = FFG_ERR_TYPE; break;
            case 1: in.ndim = 1; want = FFG_ERR_TYPE; break;
            case 2: in.data = NULL; want = FFG_ERR_ABI; break;   /* ABI 2.1: a NULL pointer is a misused call */
            case 3: inputs = NULL; want = FFG_ERR_ABI; break;
            default: shape[1] = 5; want = FFG_ERR_VALUE; break;   /* x.sum(axis=0) has 5, w has 4 */
            }
        }
        code = leak_run(h, inputs, LEAK_N_INPUTS, out, LEAK_N_OUTPUTS, &err);
        if (code != want) {
            if (unexpected++ < 5)
                printf("call %ld: code %d, expected %d: %s\n", i, (int)code, (int)want, err.message);
        }
        if (code != FFG_OK) {
            failing++;
            for (k = 0; k < LEAK_N_OUTPUTS; ++k)
                leftovers += out[k].base != NULL;
            continue;
        }
        good++;
        {
            const double *y = (const double *)out[0].tensor.data;
            const double *col = (const double *)out[1].tensor.data;
            const double *sq = (const double *)out[2].tensor.data;
            double total = 0;
            for (k = 0; k < rows * 4; ++k) {
                wrong += y[k] != 2 * x[k];
                total += x[k] * x[k];
            }
            for (k = 0; k < 4; ++k) {
                double want_col = w[k];
                for (r = 0; r < rows; ++r)
                    want_col += x[r * 4 + k];
                wrong += col[k] - want_col > 1e-9 || want_col - col[k] > 1e-9;
            }
            wrong += sq[0] - total > 1e-9 || total - sq[0] > 1e-9;
            mismatches += wrong != 0;
        }
        for (k = 0; k < 4; ++k)
            w[k] += 1;   /* the update the handle applied */
        for (k = 0; k < LEAK_N_OUTPUTS; ++k)
            leak_release(h, &out[k]);
    }
    if (leak_get_shared(h, leak_shared_index("w"), &view, &err) != FFG_OK) {
        printf("get_shared failed: %s\n", err.message);
        return 1;
    }
    for (k = 0; k < 4; ++k)
        mismatches += ((double *)view.data)[k] != w[k];
    leak_close(h);
    printf("calls %ld good %ld failing %ld mismatches %ld unexpected %ld leftovers %ld allocs %ld frees %ld\n",
           calls, good, failing, mismatches, unexpected, leftovers, n_alloc, n_free);
    return mismatches || unexpected || leftovers || n_alloc != n_free ? 1 : 0;
}

/*
 * Bad input from a C host, against the export of the seed example ("seed": input x, a
 * float64 matrix; shared s, a float64 vector; outputs x*2 and x.sum(axis=0) + s).
 * Every case must come back as an error code with a message, never a crash, and the
 * handle must still compute correctly afterwards. Prints one line per case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seed.h"

static int failures = 0;

static void expect(const char *label, int32_t code, int32_t want, const char *message, const char *needle)
{
    int ok = code == want && strstr(message, needle) != NULL;
    printf("%s %s: code %d: %s\n", ok ? "ok" : "FAIL", label, (int)code, message);
    if (!ok)
        failures++;
}

static FfgTensor matrix(double *data, int64_t *shape)
{
    FfgTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = FFG_DEVICE_CPU;
    t.ndim = 2;
    t.dtype.code = FFG_DTYPE_FLOAT;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

/* An allocator whose alloc calls back into the same handle: the re-entrant call must be refused. */
static seed_handle *reentrant_handle = NULL;
static int32_t reentrant_code = -1;
static char reentrant_message[FFG_ERROR_MESSAGE_SIZE];

static void *reentrant_alloc(void *ctx, size_t n)
{
    (void)ctx;
    if (reentrant_handle != NULL && reentrant_code < 0) {
        FfgError err;
        FfgTensor none;
        FfgOutput outs[2];
        memset(&none, 0, sizeof none);
        memset(outs, 0, sizeof outs);
        reentrant_code = seed_run(reentrant_handle, &none, 1, outs, 2, &err);
        memcpy(reentrant_message, err.message, sizeof reentrant_message);
    }
    return malloc(n);
}

static void reentrant_release(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

int main(void)
{
    double x[15], s[4] = {20, 23, 26, 29}, one = 1;
    int64_t shape[2] = {3, 4}, bad_shape[2] = {3, 5}, negative[2] = {-1, 4}, s_shape[1] = {4};
    int64_t huge[2] = {INT64_C(1) << 62, 4}, huge_s[1] = {INT64_C(1) << 62};
    FfgTensor in, sv;
    FfgOutput out[2];
    FfgError err;
    FfgAllocator reentrant = {reentrant_alloc, reentrant_release, NULL};
    seed_handle *h;
    int32_t code;
    int k;

    for (k = 0; k < 15; ++k)
        x[k] = k;
    memset(out, 0, sizeof out);

    /* ---- NULL handles */
    code = seed_run(NULL, NULL, 1, out, 2, &err);
    expect("run with a NULL handle", code, FFG_ERR_ABI, err.message, "handle is NULL");
    code = seed_set_shared(NULL, 0, NULL, &err);
    expect("set_shared with a NULL handle", code, FFG_ERR_ABI, err.message, "handle is NULL");
    seed_close(NULL);
    seed_release(NULL, NULL);
    expect("errmsg of a NULL handle", 0, 0, seed_errmsg(NULL), "NULL");

    h = seed_open(NULL, &err);
    if (h == NULL) {
        printf("FAIL open: %s\n", err.message);
        return 1;
    }

    /* ---- running before the shared variable has a value */
    in = matrix(x, shape);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("run before set_shared", code, FFG_ERR_VALUE, err.message, "has no value");

    /* ---- bad shared values */
    sv = matrix(s, s_shape);
    sv.ndim = 1;
    sv.dtype.bits = 32;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value of the wrong dtype", code, FFG_ERR_TYPE, err.message, "expected a CPU float64");
    sv.dtype.bits = 64;
    sv.ndim = 2;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value of the wrong ndim", code, FFG_ERR_TYPE, err.message, "1 dimensions");
    sv.ndim = 1;
    code = seed_set_shared(h, 0, NULL, &err);
    expect("NULL shared value", code, FFG_ERR_ABI, err.message, "NULL");
    code = seed_set_shared(h, 5, &sv, &err);
    expect("shared index out of range", code, FFG_ERR_INDEX, err.message, "out of range");
    sv.shape = NULL;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value with a NULL shape", code, FFG_ERR_ABI, err.message, "shape pointer is NULL");
    sv.shape = s_shape;
    sv.data = NULL;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value with NULL data", code, FFG_ERR_ABI, err.message, "data pointer is NULL");
    sv.data = s;
    sv.shape = negative + 0;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value with a negative length", code, FFG_ERR_VALUE, err.message, "does not fit");
    sv.shape = huge_s;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("shared value whose size overflows int64", code, FFG_ERR_VALUE, err.message, "too large");
    sv.shape = s_shape;
    code = seed_set_shared(h, 0, &sv, &err);
    expect("a good shared value", code, FFG_OK, "", "");
    expect("shared_index finds s", seed_shared_index("s"), 0, "", "");
    expect("shared_index of an unknown name", seed_shared_index("nope"), -1, "", "");
    expect("shared_index(NULL)", seed_shared_index(NULL), -1, "", "");

    /* ---- bad calls and bad input slots */
    code = seed_run(h, &in, 2, out, 2, &err);
    expect("wrong number of inputs", code, FFG_ERR_ABI, err.message, "expected 1 inputs and 2 outputs");
    code = seed_run(h, NULL, 1, out, 2, &err);
    expect("NULL inputs array", code, FFG_ERR_ABI, err.message, "inputs array is NULL");
    code = seed_run(h, &in, 1, NULL, 2, &err);
    expect("NULL outputs array", code, FFG_ERR_ABI, err.message, "outputs array is NULL");
    in.dtype.code = FFG_DTYPE_INT;
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input of the wrong dtype", code, FFG_ERR_TYPE, err.message, "expected dtype float64, got int64");
    expect("  ... names the input slot", err.input, 0, "", "");
    in = matrix(x, shape);
    in.ndim = 1;
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input of the wrong ndim", code, FFG_ERR_TYPE, err.message, "expected 2 dimensions, got 1");
    in = matrix(NULL, shape);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input with NULL data", code, FFG_ERR_ABI, err.message, "data pointer is NULL");
    in = matrix(x, NULL);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input with a NULL shape", code, FFG_ERR_ABI, err.message, "shape pointer is NULL");
    in = matrix(x, negative);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input with a negative length", code, FFG_ERR_VALUE, err.message, "does not fit");
    in = matrix(x, huge);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input whose size overflows int64", code, FFG_ERR_VALUE, err.message, "too large");
    in = matrix(x, shape);
    in.device.device_type = FFG_DEVICE_CUDA;
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input on another device", code, FFG_ERR_TYPE, err.message, "expected a CPU array");
    in = matrix(x, bad_shape);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("input whose shape does not fit the shared vector", code, FFG_ERR_VALUE, err.message, "");
    expect("  ... names the failing node", err.node >= 0, 1, err.message, "");
    code = seed_run(h, &in, 1, out, 2, NULL);
    expect("error with err == NULL, read back with errmsg", code, FFG_ERR_VALUE, seed_errmsg(h), "");
    expect("  ... outputs hold nothing to release", out[0].base == NULL && out[1].base == NULL, 1, "", "");
    code = seed_get_shared(h, 0, NULL, &err);
    expect("get_shared into NULL", code, FFG_ERR_ABI, err.message, "view is NULL");

    /* ---- after all that, a good call (offering a block for output 0) gives the right numbers */
    {
        double block[12];
        FfgTensor view;
        int wrong = 0;
        in = matrix(x, shape);
        out[0].host_buffer = block;
        out[0].host_capacity = sizeof block;
        code = seed_run(h, &in, 1, out, 2, &err);
        expect("a good call after the errors", code, FFG_OK, "", "");
        expect("  ... output 0 went into the offered block", out[0].alias_of, FFG_OUT_HOST_BUFFER, "", "");
        for (k = 0; k < 12 && code == FFG_OK; ++k)
            wrong += block[k] != 2 * x[k];
        for (k = 0; k < 4 && code == FFG_OK; ++k)
            wrong += ((double *)out[1].tensor.data)[k] != x[k] + x[k + 4] + x[k + 8] + s[k];
        expect("  ... with the right values", wrong, 0, "", "");
        seed_release(h, &out[0]);
        seed_release(h, &out[1]);
        code = seed_get_shared(h, 0, &view, &err);
        expect("get_shared", code == FFG_OK && view.ndim == 1 && view.shape[0] == 4
               && ((double *)view.data)[3] == 29, 1, "", "");
    }
    seed_close(h);

    /* ---- a call into a handle that is already busy is refused, not raced */
    h = seed_open(&reentrant, &err);
    sv = matrix(&one, s_shape);
    sv.ndim = 1;
    sv.data = s;
    seed_set_shared(h, 0, &sv, &err);
    reentrant_handle = h;
    in = matrix(x, shape);
    memset(out, 0, sizeof out);
    code = seed_run(h, &in, 1, out, 2, &err);
    expect("the outer call still succeeds", code, FFG_OK, "", "");
    expect("a re-entrant call on a busy handle", reentrant_code, FFG_ERR_RUNTIME, reentrant_message, "busy");
    seed_release(h, &out[0]);
    seed_release(h, &out[1]);
    seed_close(h);

    /* ---- an allocator missing a function */
    reentrant.release = NULL;
    expect("open with half an allocator", seed_open(&reentrant, &err) == NULL, 1, err.message,
           "alloc and release");

    printf("failures %d\n", failures);
    return failures ? 1 : 0;
}

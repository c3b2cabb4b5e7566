/*
 * npy_driver -- runs ffigraph/export/c/ffg_npy.c for tests/export/test_npy_c.py.
 *
 *   npy_driver read FILE           prints "dtype CODE BITS", "ndim N", "shape D0 D1 ..." and
 *                                  then one element a line (floats %.17g, complex "re,im")
 *   npy_driver read-noerr FILE     reads with err == NULL and prints "code N"
 *   npy_driver copy IN OUT         reads IN, prints it as read does, and writes it to OUT
 *   npy_driver views PREFIX        writes views of a 3x4 float64 and int16 array
 *                                  to PREFIX<dtype>_<view>.npy (see VIEWS below)
 *   npy_driver badwrite CASE OUT   writes a tensor spoilt as CASE says
 *   npy_driver descr CODE BITS LANES  prints ffg_npy_descr's answer, or NULL
 *
 * A failure prints "error CODE: MESSAGE" and exits with status 1.
 */
#include "ffg_npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int report(int32_t rc, const FfgError *err)
{
    if (rc == FFG_OK)
        return 0;
    printf("error %d: %s\n", (int)rc, err->message);
    return 1;
}

/* An integer element of `bits` bits, widened to 64 (the host is little-endian, as the library needs). */
static void print_integer(const unsigned char *p, int bits, int is_signed)
{
    uint64_t u = 0;

    memcpy(&u, p, (size_t)bits / 8);
    if (is_signed && bits < 64 && (u >> (bits - 1)) != 0)
        u |= ~(uint64_t)0 << bits;      /* sign extension */
    if (is_signed)
        printf("%lld\n", (long long)(int64_t)u);
    else
        printf("%llu\n", (unsigned long long)u);
}

static double get_float(const unsigned char *p, int bits)
{
    float f;
    double d;

    if (bits == 32) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&d, p, 8);
    return d;
}

static void print_element(FfgDtype dtype, const unsigned char *p)
{
    switch (dtype.code) {
    case FFG_DTYPE_BOOL: printf("%u\n", (unsigned)p[0]); break;
    case FFG_DTYPE_INT: print_integer(p, dtype.bits, 1); break;
    case FFG_DTYPE_UINT: print_integer(p, dtype.bits, 0); break;
    case FFG_DTYPE_FLOAT: printf("%.17g\n", get_float(p, dtype.bits)); break;
    default:
        printf("%.17g,%.17g\n", get_float(p, dtype.bits / 2), get_float(p + dtype.bits / 16, dtype.bits / 2));
    }
}

static void print_array(const FfgTensor *t)
{
    int64_t size = 1, i;
    int d;

    printf("dtype %u %u\nndim %d\nshape", (unsigned)t->dtype.code, (unsigned)t->dtype.bits, (int)t->ndim);
    for (d = 0; d < t->ndim; d++) {
        printf(" %lld", (long long)t->shape[d]);
        size *= t->shape[d];
    }
    printf("\n");
    for (i = 0; i < size; i++)
        print_element(t->dtype, (const unsigned char *)t->data + i * (t->dtype.bits / 8));
}

static int cmd_read(const char *path)
{
    FfgNpyArray a;
    FfgError err;
    int32_t rc = ffg_npy_read(path, &a, &err);

    if (rc != FFG_OK) {
        ffg_npy_free(&a);       /* must be harmless after a failure */
        return report(rc, &err);
    }
    print_array(&a.tensor);
    ffg_npy_free(&a);
    ffg_npy_free(&a);           /* and so must a second free */
    return 0;
}

static int cmd_read_noerr(const char *path)
{
    FfgNpyArray a;
    int32_t rc = ffg_npy_read(path, &a, NULL);

    printf("code %d\n", (int)rc);
    ffg_npy_free(&a);
    return rc == FFG_OK ? 0 : 1;
}

static int cmd_copy(const char *in, const char *out)
{
    FfgNpyArray a;
    FfgError err;
    int32_t rc = ffg_npy_read(in, &a, &err);

    if (rc == FFG_OK) {
        print_array(&a.tensor);
        rc = ffg_npy_write(out, &a.tensor, &err);
    }
    ffg_npy_free(&a);
    return report(rc, &err);
}

/* Views of a 3x4 C-order base array; offset and strides are in elements. */
typedef struct View {
    const char *name;
    int32_t ndim;
    int64_t shape[3];
    int64_t strides[3];
    int has_strides;
    int64_t offset;
} View;

static const View VIEWS[] = {
    {"contiguous", 2, {3, 4}, {0}, 0, 0},          /* a */
    {"transpose", 2, {4, 3}, {1, 4}, 1, 0},        /* a.T */
    {"reversed", 2, {3, 4}, {-4, -1}, 1, 11},      /* a[::-1, ::-1] */
    {"odd_columns", 2, {3, 2}, {4, 2}, 1, 1},      /* a[:, 1::2] */
    {"column_up", 1, {3}, {-4}, 1, 9},             /* a[::-1, 1] */
    {"broadcast", 3, {2, 3, 4}, {0, 4, 1}, 1, 0},  /* np.broadcast_to(a, (2, 3, 4)) */
    {"repeat_first", 2, {3, 4}, {4, 0}, 1, 0},     /* np.broadcast_to(a[:, :1], (3, 4)) */
    {"scalar", 0, {0}, {0}, 0, 6},                 /* a[1, 2] */
    {"empty", 2, {0, 4}, {4, 1}, 1, 0},            /* a[:0] */
};

static int write_views(const char *prefix, const char *dtype_name, FfgDtype dtype, void *base)
{
    char path[4096];
    size_t i;

    for (i = 0; i < sizeof VIEWS / sizeof VIEWS[0]; i++) {
        const View *v = &VIEWS[i];
        FfgTensor t;
        FfgError err;
        int32_t rc;

        t.data = base;
        t.device.device_type = FFG_DEVICE_CPU;
        t.device.device_id = 0;
        t.ndim = v->ndim;
        t.dtype = dtype;
        t.shape = v->ndim > 0 ? (int64_t *)v->shape : NULL;
        t.strides = v->has_strides ? (int64_t *)v->strides : NULL;
        t.byte_offset = (uint64_t)(v->offset * (dtype.bits / 8));
        snprintf(path, sizeof path, "%s%s_%s.npy", prefix, dtype_name, v->name);
        rc = ffg_npy_write(path, &t, &err);
        if (rc != FFG_OK)
            return report(rc, &err);
        printf("%s\n", path);
    }
    return 0;
}

static int cmd_views(const char *prefix)
{
    double f8[12];
    int16_t i2[12];
    FfgDtype f8_type = {FFG_DTYPE_FLOAT, 64, 1}, i2_type = {FFG_DTYPE_INT, 16, 1};
    int i;

    for (i = 0; i < 12; i++) {
        f8[i] = i + 0.25;
        i2[i] = (int16_t)(i - 6);
    }
    if (write_views(prefix, "f8", f8_type, f8) != 0)
        return 1;
    return write_views(prefix, "i2", i2_type, i2);
}

/* A valid 3x4 float64 tensor, then spoilt as `how` says ("ok" leaves it valid). */
static int cmd_badwrite(const char *how, const char *path)
{
    double data[12] = {0};
    int64_t shape[FFG_MAX_NDIM + 1], strides[2] = {4, 1};
    FfgTensor t;
    FfgError err;
    int i;

    for (i = 0; i <= FFG_MAX_NDIM; i++)
        shape[i] = 1;
    shape[0] = 3;
    shape[1] = 4;
    t.data = data;
    t.device.device_type = FFG_DEVICE_CPU;
    t.device.device_id = 0;
    t.ndim = 2;
    t.dtype.code = FFG_DTYPE_FLOAT;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 0;
    if (strcmp(how, "cuda") == 0)
        t.device.device_type = FFG_DEVICE_CUDA;
    else if (strcmp(how, "float16") == 0)
        t.dtype.bits = 16;
    else if (strcmp(how, "lanes2") == 0)
        t.dtype.lanes = 2;
    else if (strcmp(how, "null_data") == 0)
        t.data = NULL;
    else if (strcmp(how, "null_data_empty") == 0) {
        t.data = NULL;
        shape[0] = 0;
    } else if (strcmp(how, "null_shape") == 0)
        t.shape = NULL;
    else if (strcmp(how, "null_shape_scalar") == 0) {
        t.shape = NULL;
        t.ndim = 0;
    } else if (strcmp(how, "ndim33") == 0) {
        t.ndim = FFG_MAX_NDIM + 1;
        t.strides = NULL;
    } else if (strcmp(how, "ndim_negative") == 0)
        t.ndim = -1;
    else if (strcmp(how, "negative_dim") == 0)
        shape[1] = -4;
    else if (strcmp(how, "overflow") == 0)
        shape[0] = (int64_t)1 << 62;
    else if (strcmp(how, "null_err") == 0) {
        t.dtype.bits = 16;
        printf("code %d\n", (int)ffg_npy_write(path, &t, NULL));
        return 1;
    } else if (strcmp(how, "ok") != 0) {
        printf("unknown case %s\n", how);
        return 2;
    }
    return report(ffg_npy_write(path, &t, &err), &err);
}

static int cmd_descr(const char *code, const char *bits, const char *lanes)
{
    FfgDtype dtype;
    const char *descr;

    dtype.code = (uint8_t)atoi(code);
    dtype.bits = (uint8_t)atoi(bits);
    dtype.lanes = (uint16_t)atoi(lanes);
    descr = ffg_npy_descr(dtype);
    printf("%s\n", descr != NULL ? descr : "NULL");
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";

    if (strcmp(cmd, "read") == 0 && argc == 3)
        return cmd_read(argv[2]);
    if (strcmp(cmd, "read-noerr") == 0 && argc == 3)
        return cmd_read_noerr(argv[2]);
    if (strcmp(cmd, "copy") == 0 && argc == 4)
        return cmd_copy(argv[2], argv[3]);
    if (strcmp(cmd, "views") == 0 && argc == 3)
        return cmd_views(argv[2]);
    if (strcmp(cmd, "badwrite") == 0 && argc == 4)
        return cmd_badwrite(argv[2], argv[3]);
    if (strcmp(cmd, "descr") == 0 && argc == 5)
        return cmd_descr(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: see the comment at the top of npy_driver.c\n");
    return 2;
}

"""The example host program of an export (``main.c``): a working template for C users."""
from __future__ import annotations

MAIN_TEMPLATE = r"""/*
 * main.c -- example host for the ffigraph export "%(N)s" (generated; a template to adapt).
 *
 * Build and run:  make && ./example [-n RUNS] [-s DIR] [-d INPUT=SHAPE ...]
 *   -n RUNS  call the function RUNS times (default 1); shared variables are updated
 *            inside the handle after every successful call, so a training step trains
 *   -s DIR   afterwards, save every shared variable to DIR/<file>.npy
 *   -d INPUT=SHAPE  fill input INPUT (its name or position) with 0, 1, 2, ... in SHAPE
 *            (lengths joined by x: 3x4; nothing after = for a 0-d input) instead of
 *            its default shape
 *
 * What it does: opens a handle, loads each shared variable from its .npy file, fills
 * the inputs (from the export's example .npy files when there are some, otherwise
 * with 0, 1, 2, ... in C order, in the default shapes below: lengths the graph accepts,
 * %(shapes_note)s), runs the function, prints the inputs it filled, every
 * output and shared variable, and reports failures through the error record. Files are
 * looked up next to the executable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "%(N)s.h"
#include "ffg_npy.h"
%(cuda_include)s
/* The example value of each input (NULL: filled with 0, 1, 2, ...) and the file of each shared variable. */
static const char *const input_files[%(in_alloc)d] = {%(input_files)s};
static const char *const shared_files[%(m_alloc)d] = {%(shared_files)s};

/* The shape each input without a file is filled in (-d replaces it). */
static int64_t fill_shapes[%(in_alloc)d][FFG_MAX_NDIM] = {%(fill_shapes)s};
/* 1 when the export ran the function on these fills (they fit the graph); 0 when no shapes it
 * tried fit, and why. */
static const int fill_shapes_checked = %(fill_checked)d;
static const char *const fill_shapes_problem = %(fill_problem)s;

static char data_dir[4096] = ".";

static const char *data_path(const char *file, char *buf, size_t size)
{
    snprintf(buf, size, "%%s/%%s", data_dir, file);
    return buf;
}

static int report(const char *what, int32_t code, const FfgError *err)
{
    fprintf(stderr, "%%s failed: error %%d", what, (int)code);
    if (err->node >= 0)
        fprintf(stderr, " at node %%d", (int)err->node);
    if (err->input >= 0)
        fprintf(stderr, " (input slot %%d)", (int)err->input);
    fprintf(stderr, ": %%s\n", err->message);
    return 1;
}

/* ---- printing any ABI tensor, numpy style ---- */

static void print_element(const FfgTensor *t, const char *p)
{
    int64_t i = 0;
    uint64_t u = 0;
    switch (t->dtype.code) {
    case FFG_DTYPE_BOOL:
        printf("%%s", *(const uint8_t *)p ? "True" : "False");
        return;
    case FFG_DTYPE_FLOAT:
        printf("%%.17g", t->dtype.bits == 32 ? (double)*(const float *)p : *(const double *)p);
        return;
    case FFG_DTYPE_COMPLEX:
        if (t->dtype.bits == 64)
            printf("%%.17g%%+.17gj", (double)((const float *)p)[0], (double)((const float *)p)[1]);
        else
            printf("%%.17g%%+.17gj", ((const double *)p)[0], ((const double *)p)[1]);
        return;
    case FFG_DTYPE_INT:
        switch (t->dtype.bits) {
        case 8: i = *(const int8_t *)p; break;
        case 16: i = *(const int16_t *)p; break;
        case 32: i = *(const int32_t *)p; break;
        default: i = *(const int64_t *)p; break;
        }
        printf("%%lld", (long long)i);
        return;
    default:
        switch (t->dtype.bits) {
        case 8: u = *(const uint8_t *)p; break;
        case 16: u = *(const uint16_t *)p; break;
        case 32: u = *(const uint32_t *)p; break;
        default: u = *(const uint64_t *)p; break;
        }
        printf("%%llu", (unsigned long long)u);
    }
}

static void print_axis(const FfgTensor *t, const int64_t *strides, int axis, const char *p)
{
    int64_t k, itemsize = t->dtype.bits / 8;
    if (axis == t->ndim) {
        print_element(t, p);
        return;
    }
    printf("[");
    for (k = 0; k < t->shape[axis]; ++k) {
        if (k > 0 && axis == t->ndim - 1)
            printf(" ");
        else if (k > 0)
            printf("\n%%*s", axis + 1, "");   /* rows of a matrix line up under the first */
        print_axis(t, strides, axis + 1, p + k * strides[axis] * itemsize);
    }
    printf("]");
}

static void print_tensor(const char *label, const char *name, const FfgTensor *t)
{
    int64_t strides[FFG_MAX_NDIM], stride = 1;
    int d;
    if (t->device.device_type != FFG_DEVICE_CPU) {   /* not host memory: never read it */
        printf("%%s %%s: on device type %%d, not printed\n", label, name, (int)t->device.device_type);
        return;
    }
    for (d = t->ndim - 1; d >= 0; --d) {   /* NULL strides mean C-contiguous */
        strides[d] = t->strides ? t->strides[d] : stride;
        stride *= t->shape[d];
    }
    printf("%%s %%s: %%s%%d, shape (", label, name, t->dtype.code == FFG_DTYPE_FLOAT ? "float"
           : t->dtype.code == FFG_DTYPE_INT ? "int" : t->dtype.code == FFG_DTYPE_UINT ? "uint"
           : t->dtype.code == FFG_DTYPE_BOOL ? "bool" : "complex", (int)t->dtype.bits);
    for (d = 0; d < t->ndim; ++d)
        printf(d ? ", %%lld" : "%%lld", (long long)t->shape[d]);
    printf(t->ndim == 1 ? ",)\n" : ")\n");
    print_axis(t, strides, 0, (const char *)t->data + t->byte_offset);
    printf("\n");
}

/* ---- inputs ---- */

/* Fill a C-contiguous block of the given shape with 0, 1, 2, ... in the slot's dtype. */
static int fill_input(const FfgSlot *slot, const int64_t *shape, FfgNpyArray *a)
{
    int64_t n = 1, k, bytes = slot->dtype.bits / 8;
    int d;
    memset(a, 0, sizeof *a);
    a->tensor.device.device_type = FFG_DEVICE_CPU;
    a->tensor.ndim = slot->ndim;
    a->tensor.dtype = slot->dtype;
    a->tensor.shape = a->shape;
    for (d = 0; d < slot->ndim; ++d) {
        a->shape[d] = shape[d];
        n *= a->shape[d];
    }
    a->data = calloc((size_t)(n > 0 ? n : 1), (size_t)bytes);
    if (a->data == NULL)
        return -1;
    a->tensor.data = a->data;
    for (k = 0; k < n; ++k) {
        char *p = (char *)a->data + k * bytes;
        switch (slot->dtype.code) {
        case FFG_DTYPE_FLOAT:
            if (bytes == 4) *(float *)p = (float)k; else *(double *)p = (double)k;
            break;
        case FFG_DTYPE_COMPLEX:
            if (bytes == 8) *(float *)p = (float)k; else *(double *)p = (double)k;
            break;
        case FFG_DTYPE_BOOL:
            *(uint8_t *)p = (uint8_t)(k %% 2);
            break;
        default:   /* integers: the low bytes of k (little-endian) */
            memcpy(p, &k, (size_t)bytes < sizeof k ? (size_t)bytes : sizeof k);
        }
    }
    return 0;
}

/* -d INPUT=SHAPE: INPUT is an input's name or position; SHAPE is lengths joined by 'x'. */
static int parse_fill_shape(const FfgDescription *desc, const char *arg)
{
    const char *eq = strchr(arg, '=');
    const char *p;
    char *end;
    int32_t k, found = -1;
    int d = 0;
    int64_t shape[FFG_MAX_NDIM];
    if (eq == NULL)
        return -1;
    for (k = 0; k < %(NU)s_N_INPUTS; ++k)
        if (desc->inputs[k].name != NULL && strlen(desc->inputs[k].name) == (size_t)(eq - arg)
            && strncmp(desc->inputs[k].name, arg, (size_t)(eq - arg)) == 0)
            found = k;
    if (found < 0) {
        long pos = strtol(arg, &end, 10);
        if (end != eq || pos < 0 || pos >= %(NU)s_N_INPUTS) {
            fprintf(stderr, "-d %%s: no input named or numbered %%.*s\n", arg, (int)(eq - arg), arg);
            return -1;
        }
        found = (int32_t)pos;
    }
    for (p = eq + 1; *p != '\0'; ++d) {
        long long n = strtoll(p, &end, 10);
        if (end == p || n < 0 || d >= FFG_MAX_NDIM || (*end != 'x' && *end != '\0')) {
            fprintf(stderr, "-d %%s: the shape must be lengths joined by x, e.g. 3x4\n", arg);
            return -1;
        }
        shape[d] = (int64_t)n;
        p = *end == 'x' ? end + 1 : end;
    }
    if (d != desc->inputs[found].ndim) {
        fprintf(stderr, "-d %%s: input %%d (%%s) has %%d dimensions, the shape %%d\n", arg, (int)found,
                desc->inputs[found].name, (int)desc->inputs[found].ndim, d);
        return -1;
    }
    memcpy(fill_shapes[found], shape, sizeof(int64_t) * (size_t)d);
    return 0;
}

%(cuda_code)sint main(int argc, char **argv)
{
    FfgError err;
    FfgNpyArray inputs[%(in_alloc)d];
    FfgTensor input_tensors[%(in_alloc)d];
    FfgOutput outputs[%(out_alloc)d];
    const FfgDescription *desc = %(N)s_describe();
    %(N)s_handle *h = NULL;
    const char *save_dir = NULL, *slash = strrchr(argv[0], '/');
    char path[8192];
    long runs = 1, r;
    int shapes_given = 0;
    int32_t k, code;
    int status = 1;

    for (k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "-n") == 0 && k + 1 < argc)
            runs = strtol(argv[++k], NULL, 10);
        else if (strcmp(argv[k], "-s") == 0 && k + 1 < argc)
            save_dir = argv[++k];
        else if (strcmp(argv[k], "-d") == 0 && k + 1 < argc) {
            if (parse_fill_shape(desc, argv[++k]))
                return 2;
            ++shapes_given;
        }
        else {
            fprintf(stderr, "usage: %%s [-n RUNS] [-s DIR] [-d INPUT=SHAPE ...]\n"
                    "  -d INPUT=SHAPE: fill input INPUT (name or position) with 0, 1, 2, ... in SHAPE "
                    "(e.g. 3x4)\n", argv[0]);
            return 2;
        }
    }
    if (slash != NULL)
        snprintf(data_dir, sizeof data_dir, "%%.*s", (int)(slash - argv[0]), argv[0]);
    if (%(N)s_abi_version() != FFG_ABI_VERSION) {
        fprintf(stderr, "the library speaks ABI %%u, this program was built for %%u\n",
                (unsigned)%(N)s_abi_version(), (unsigned)FFG_ABI_VERSION);
        return 1;
    }
    memset(inputs, 0, sizeof inputs);
    memset(outputs, 0, sizeof outputs);

    h = %(N)s_open(NULL, &err);
    if (h == NULL)
        return report("%(N)s_open", err.code, &err);

    /* shared variables: their values at export time, from their .npy files */
    for (k = 0; k < %(NU)s_N_SHARED; ++k) {
        FfgNpyArray value;
        code = ffg_npy_read(data_path(shared_files[k], path, sizeof path), &value, &err);
        if (code == FFG_OK) {
            code = %(N)s_set_shared(h, k, &value.tensor, &err);
            ffg_npy_free(&value);
        }
        if (code != FFG_OK) {
            report("loading a shared variable", code, &err);
            goto done;
        }
    }

    /* inputs: the example values, or 0, 1, 2, ... */
    if (!fill_shapes_checked && !shapes_given)
        fprintf(stderr, "note: the export found no input shapes this graph accepts for the 0, 1, 2, ... fill "
                "(%%s); give them with -d INPUT=SHAPE\n", fill_shapes_problem);
    for (k = 0; k < %(NU)s_N_INPUTS; ++k) {
        if (input_files[k] != NULL)
            code = ffg_npy_read(data_path(input_files[k], path, sizeof path), &inputs[k], &err);
        else
            code = fill_input(&desc->inputs[k], fill_shapes[k], &inputs[k]) ? FFG_ERR_NOMEM : FFG_OK;
        if (code != FFG_OK) {
            if (input_files[k] == NULL)
                snprintf(err.message, sizeof err.message, "out of memory filling input %%d", (int)k);
            report("preparing an input", code, &err);
            goto done;
        }
        input_tensors[k] = inputs[k].tensor;
%(to_device)s    }

    for (r = 0; r < runs; ++r) {
        for (k = 0; k < %(NU)s_N_OUTPUTS; ++k)
            %(N)s_release(h, &outputs[k]);   /* the previous run's results */
        code = %(N)s_run(h, input_tensors, %(NU)s_N_INPUTS, outputs, %(NU)s_N_OUTPUTS, &err);
        if (code != FFG_OK) {
            report("%(N)s_run", code, &err);
            goto done;
        }
    }
    printf("%(N)s: %%ld run(s) succeeded\n", runs);
    for (k = 0; k < %(NU)s_N_INPUTS; ++k)   /* the inputs it filled, to compare with a Python call */
        if (input_files[k] == NULL)
            print_tensor("input", desc->inputs[k].name, &inputs[k].tensor);
    for (k = 0; k < %(NU)s_N_OUTPUTS && runs > 0; ++k)
%(print_output)s    for (k = 0; k < %(NU)s_N_SHARED; ++k) {
        FfgTensor value;
        code = %(N)s_get_shared(h, k, &value, &err);
        if (code == FFG_OK && save_dir != NULL) {
            snprintf(path, sizeof path, "%%s/%%s", save_dir, shared_files[k]);
            code = ffg_npy_write(path, &value, &err);
        }
        if (code != FFG_OK) {
            report("reading a shared variable", code, &err);
            goto done;
        }
        print_tensor("shared", %(N)s_shared_name(k), &value);
    }
    status = 0;
done:
    for (k = 0; k < %(NU)s_N_OUTPUTS; ++k)
        %(N)s_release(h, &outputs[k]);
    for (k = 0; k < %(NU)s_N_INPUTS; ++k)
        ffg_npy_free(&inputs[k]);
%(free_device)s    %(N)s_close(h);
    return status;
}
"""


def _c_strings(items):
    from ffigraph.linkers.c.codegen import c_string

    return ", ".join("NULL" if item is None else c_string(item) for item in items) or "NULL"


CUDA_CODE = r"""/* ---- CUDA: inputs that live on the GPU, and device outputs copied back for printing ---- */

/* 1 where input k's slot is a GPU type: main.c fills it on the host, then copies it to the device */
static const int input_on_device[%(in_alloc)d] = {%(on_device)s};
static void *device_inputs[%(in_alloc)d];   /* their cudaMalloc blocks, given back with cudaFree */

static int cuda_failed(const char *what, cudaError_t status)
{
    fprintf(stderr, "%%s failed: CUDA error %%d (%%s): %%s\n", what, (int)status, cudaGetErrorName(status),
            cudaGetErrorString(status));
    return 1;
}

/* Copy input k (a C-contiguous host array) into a fresh device block; t then describes that block. */
static int input_to_device(int32_t k, FfgTensor *t)
{
    int64_t n = 1;
    size_t nbytes;
    int device = 0, d;
    cudaError_t status;
    char what[128];
    for (d = 0; d < t->ndim; ++d)
        n *= t->shape[d];
    nbytes = (size_t)n * (size_t)(t->dtype.bits / 8);
    snprintf(what, sizeof what, "copying input %%d to the GPU (cudaMalloc)", (int)k);
    status = cudaMalloc(&device_inputs[k], nbytes > 0 ? nbytes : 1);
    if (status == cudaSuccess && nbytes > 0) {
        snprintf(what, sizeof what, "copying input %%d to the GPU (cudaMemcpy)", (int)k);
        status = cudaMemcpy(device_inputs[k], (const char *)t->data + t->byte_offset, nbytes,
                            cudaMemcpyHostToDevice);
    }
    if (status == cudaSuccess)
        status = cudaGetDevice(&device);
    if (status != cudaSuccess)
        return cuda_failed(what, status);
    t->data = device_inputs[k];
    t->byte_offset = 0;
    t->strides = NULL;   /* C order, as on the host */
    t->device.device_type = FFG_DEVICE_CUDA;
    t->device.device_id = device;
    return 0;
}

/* Print an output; one in CUDA memory is first copied to the host (the span its strides cover). */
static int print_output(const char *name, const FfgTensor *t)
{
    FfgTensor host;
    int64_t strides[FFG_MAX_NDIM], lo = 0, hi = 0, n = 1, stride = 1, itemsize = t->dtype.bits / 8;
    size_t nbytes;
    char *block;
    cudaError_t status;
    int d;
    if (t->device.device_type != FFG_DEVICE_CUDA) {
        print_tensor("output", name, t);
        return 0;
    }
    for (d = t->ndim - 1; d >= 0; --d) {
        strides[d] = t->strides ? t->strides[d] : stride;
        stride *= t->shape[d];
        n *= t->shape[d];
        if (strides[d] < 0)
            lo += (t->shape[d] - 1) * strides[d];
        else
            hi += (t->shape[d] - 1) * strides[d];
    }
    nbytes = n > 0 ? (size_t)((hi - lo + 1) * itemsize) : 0;
    block = (char *)malloc(nbytes > 0 ? nbytes : 1);
    if (block == NULL) {
        fprintf(stderr, "out of memory copying output %%s to the host\n", name);
        return 1;
    }
    if (nbytes > 0) {
        status = cudaMemcpy(block, (const char *)t->data + t->byte_offset + lo * itemsize, nbytes,
                            cudaMemcpyDeviceToHost);
        if (status != cudaSuccess) {
            free(block);
            return cuda_failed("copying an output to the host (cudaMemcpy)", status);
        }
    }
    host = *t;
    host.data = block;
    host.byte_offset = (uint64_t)(nbytes > 0 ? -lo * itemsize : 0);
    host.strides = strides;
    host.device.device_type = FFG_DEVICE_CPU;
    host.device.device_id = 0;
    print_tensor("output", name, &host);
    free(block);
    return 0;
}

"""

TO_DEVICE = """        if (input_on_device[k] && input_to_device(k, &input_tensors[k]))
            goto done;
"""

PRINT_CPU = """        print_tensor("output", desc->outputs[k].name, &outputs[k].tensor);
"""

# device outputs: copied back to print; %(N)s_release gives their blocks back with cudaFree
PRINT_CUDA = """        if (print_output(desc->outputs[k].name, &outputs[k].tensor))
            goto done;
"""

FREE_DEVICE = """    for (k = 0; k < %(NU)s_N_INPUTS; ++k)
        if (device_inputs[k] != NULL)
            cudaFree(device_inputs[k]);
"""


def main_source(plan):
    """The text of ``main.c`` for an export plan. When an input or output lives on the GPU, main.c
    includes the CUDA runtime's header and moves those values between host and device itself."""
    cuda = getattr(plan, "example_uses_cuda", False)
    in_alloc = max(len(plan.inputs), 1)
    parts = dict(cuda_include="", cuda_code="", to_device="", print_output=PRINT_CPU, free_device="")
    if cuda:
        parts.update(
            cuda_include="#include <cuda_runtime_api.h>   /* -I$(CUDA_INC): the example calls the CUDA runtime */\n",
            cuda_code=CUDA_CODE % dict(in_alloc=in_alloc,
                                       on_device=", ".join("1" if s.on_device else "0" for s in plan.inputs)
                                       or "0"),
            to_device=TO_DEVICE, print_output=PRINT_CUDA, free_device=FREE_DEVICE % dict(NU=plan.name.upper()))
    shapes = getattr(plan, "fill_shapes", None) or [None] * len(plan.inputs)
    problem = getattr(plan, "fill_shapes_problem", None)
    rows = ", ".join("{%s}" % (", ".join(str(int(n)) for n in shape) if shape else "0") for shape in shapes) or "{0}"
    if problem is None:
        note = "checked when exported: the function ran on them"
    else:
        note = "but none the export tried fit the graph: give them with -d"
    return MAIN_TEMPLATE % dict(parts,
        N=plan.name, NU=plan.name.upper(), fill_shapes=rows, fill_checked=int(problem is None),
        fill_problem=_c_strings([problem or ""]), shapes_note=note,
        in_alloc=max(len(plan.inputs), 1), m_alloc=max(len(plan.shared), 1), out_alloc=max(len(plan.outputs), 1),
        input_files=_c_strings([s.file for s in plan.inputs]),
        shared_files=_c_strings([s.file for s in plan.shared]),
    )

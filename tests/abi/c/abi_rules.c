/*
 * abi_rules.c -- a host, written against ffigraph_abi.h alone, that probes what the header promises
 * where a careless library could break it without a wrong value showing: what create reads, which
 * offers are declined, what a failed run leaves in the slots and the error record, how a nested
 * graph's failure is reported, what FfgProfile.runs counts.
 *
 * usage: abi_rules MULTI.so SCAN.so PROFILED.so NAMES.so
 *   MULTI     f(x, y) = [x + y, x * y, x - y, x.T (a view of x)], x and y float64 matrices
 *   SCAN      f(xs, W, zs, V) = [sum of scan(dot(xs[t], W)), sum of scan over zs of scan over z_t's
 *             rows of dot(row, V)], all float64 (matrices; zs 3-d)
 *   PROFILED  f(x, y) = x * y + 1, float64 vectors, generated with profiling on
 *   NAMES     any library: its slots are printed
 * Every check prints "check NAME ok" or "check NAME FAIL: why"; facts the test judges itself are
 * printed as "fact KEY = VALUE". Exit 0 when every check passed, 1 otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ffigraph_abi.h"

#ifndef FFG_OUT_NONE   /* ABI 2.1; a 2.0 header lacks it (the host then still judges 2.1's rule) */
#define FFG_OUT_NONE (-3)
#endif

static int failures = 0;

static void check(const char *name, int ok, const char *why)
{
    if (ok) {
        printf("check %s ok\n", name);
    } else {
        printf("check %s FAIL: %s\n", name, why);
        failures += 1;
    }
}

/* ---- a counting allocator; when reenter_state is set, its alloc calls run on that state ---- */
static long allocations = 0;
static const FfgLibraryApi *reenter_api = NULL;
static void *reenter_state = NULL;
static const FfgTensor *reenter_inputs = NULL;
static int32_t reenter_code = -100;
static FfgOutput reenter_slot;

static void *counting_alloc(void *ctx, size_t nbytes)
{
    (void)ctx;
    allocations += 1;
    if (reenter_state != NULL) {   /* a run from inside a run of the same state: refused as busy */
        FfgError err;
        void *state = reenter_state;
        reenter_state = NULL;
        memset(&reenter_slot, 0x5a, sizeof reenter_slot);
        reenter_slot.host_buffer = NULL;
        reenter_slot.host_capacity = 0;
        reenter_code = reenter_api->run(state, reenter_inputs, 2, &reenter_slot, 1, &err);
    }
    return malloc(nbytes ? nbytes : 1);
}

static void counting_release(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static const FfgAllocator counting = {counting_alloc, counting_release, NULL};
static const FfgAllocator null_functions = {NULL, NULL, NULL};

typedef struct library {
    void *handle;
    const FfgLibraryApi *api;
    const FfgDescription *desc;
} library;

static int open_library(const char *path, library *lib)
{
    ffg_library_api_fn *entry;
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == NULL) {
        fprintf(stderr, "abi_rules: %s\n", dlerror());
        return -1;
    }
    entry = (ffg_library_api_fn *)dlsym(lib->handle, "ffg_library_api");
    lib->api = entry ? entry(FFG_ABI_MAJOR) : NULL;
    if (!FFG_API_USABLE(lib->api)) {
        fprintf(stderr, "abi_rules: %s is no ABI %d library\n", path, FFG_ABI_MAJOR);
        return -1;
    }
    lib->desc = lib->api->describe();
    printf("fact abi_version.%s = %u\n", path, (unsigned)lib->api->abi_version);
    return 0;
}

static void vector(FfgTensor *t, double *data, int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device.device_type = FFG_DEVICE_CPU;
    t->ndim = 1;
    t->dtype.code = FFG_DTYPE_FLOAT;
    t->dtype.bits = 64;
    t->dtype.lanes = 1;
    t->shape = shape;
}

static void matrix(FfgTensor *t, double *data, int64_t *shape)
{
    vector(t, data, shape);
    t->ndim = 2;
}

static double at2(const FfgTensor *t, int64_t i, int64_t j)
{
    const double *base = (const double *)((const char *)t->data + t->byte_offset);
    return base[i * t->strides[0] + j * t->strides[1]];
}

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t k;
    for (k = 0; k < n; ++k)
        if (b[k] != 0)
            return 0;
    return 1;
}

static void release_owned(FfgOutput *out, int n, const FfgAllocator *al)
{
    int k;
    for (k = 0; k < n; ++k)
        if (out[k].alias_of == FFG_OUT_OWNED && out[k].base != NULL) {
            if (al)
                al->release(al->ctx, out[k].base);
            else
                free(out[k].base);
            out[k].base = NULL;
        }
}

/* Fill slots with garbage, keeping (or clearing) the offers: a run must write every other field. */
static void garbage_slots(FfgOutput *out, int n)
{
    int k;
    memset(out, 0x5a, sizeof *out * (size_t)n);
    for (k = 0; k < n; ++k) {
        out[k].host_buffer = NULL;
        out[k].host_capacity = 0;
    }
}

static int slot_is_none(const FfgOutput *o)
{
    return o->alias_of == FFG_OUT_NONE && o->base == NULL && o->reserved == 0 && all_zero(&o->tensor, sizeof o->tensor);
}

/* ---- MULTI: x + y, x * y, x - y, x.T over 2 x 3 matrices ---- */
static double X[6] = {1, 2, 3, 4, 5, 6}, Y[6] = {-1, -0.5, 0, 0.5, 1, 1.5};
static int64_t SHAPE23[2] = {2, 3};

static int multi_values_right(const FfgOutput *out)
{
    int64_t i, j;
    for (i = 0; i < 2; ++i)
        for (j = 0; j < 3; ++j) {
            double x = X[i * 3 + j], y = Y[i * 3 + j];
            if (at2(&out[0].tensor, i, j) != x + y || at2(&out[1].tensor, i, j) != x * y
                    || at2(&out[2].tensor, i, j) != x - y || at2(&out[3].tensor, j, i) != x)
                return 0;
        }
    return 1;
}

/* create with these options, one run of MULTI; 0 when both worked and the values are right. */
static int create_and_run(const library *lib, const FfgCreateOptions *options, const FfgAllocator *release_with)
{
    FfgTensor in[2];
    FfgOutput out[4];
    FfgError err;
    int ok;
    void *state = lib->api->create(options, &err);
    if (state == NULL)
        return -1;
    matrix(&in[0], X, SHAPE23);
    matrix(&in[1], Y, SHAPE23);
    memset(out, 0, sizeof out);
    ok = lib->api->run(state, in, 2, out, 4, &err) == FFG_OK && multi_values_right(out);
    release_owned(out, 4, release_with);
    lib->api->destroy(state);
    return ok ? 0 : -2;
}

static void multi_create_options(const library *lib)
{
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
    FfgError err;
    unsigned char big[64];
    long before;
    void *state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *pages;
    pid_t child;
    int status = 0;

    /* struct_size 8: allocator and device_allocator are not there, whatever their bytes hold */
    options.struct_size = 8;
    options.allocator = &counting;
    options.device_allocator = &null_functions;
    before = allocations;
    check("create_size8_uses_no_field_past_it", create_and_run(lib, &options, NULL) == 0 && allocations == before,
          "a field past struct_size 8 was read (the allocator was used, or the device allocator refused)");
    options.struct_size = 12;   /* half of the allocator pointer: still not there */
    before = allocations;
    check("create_size12_ignores_a_half_covered_field", create_and_run(lib, &options, NULL) == 0
          && allocations == before, "a pointer struct_size covers only half of was read");
    /* struct_size 16: the allocator is there (and used), the NULL-function device allocator is not */
    options.struct_size = 16;
    before = allocations;
    check("create_size16_uses_the_allocator_not_the_device_allocator",
          create_and_run(lib, &options, &counting) == 0 && allocations > before,
          "refused a NULL-function device_allocator past struct_size, or ignored the allocator it covers");
    /* the whole struct: the NULL-function device allocator is refused, as the header says */
    options.struct_size = (uint32_t)sizeof options;
    state = lib->api->create(&options, &err);
    check("create_full_size_refuses_a_null_function_device_allocator",
          state == NULL && err.code == FFG_ERR_ABI && strstr(err.message, "device_allocator") != NULL,
          "a device allocator with NULL functions was accepted");
    lib->api->destroy(state);
    /* a larger struct (a host of a newer minor): the fields this library does not know are ignored */
    memset(big, 0xff, sizeof big);
    options.device_allocator = NULL;
    options.allocator = NULL;
    memcpy(big, &options, sizeof options);
    ((FfgCreateOptions *)(void *)big)->struct_size = (uint32_t)sizeof big;
    check("create_larger_size_ignores_unknown_fields", create_and_run(lib, (FfgCreateOptions *)(void *)big, NULL) == 0,
          "options of a newer minor (a larger struct_size) were refused");
    options.struct_size = 4;
    memset(&err, 0x5a, sizeof err);
    state = lib->api->create(&options, &err);
    check("create_size4_is_refused", state == NULL && err.code == FFG_ERR_ABI && err.node == -1 && err.input == -1
          && err.detail == 0, "struct_size 4 was accepted, or the record not reset");

    /* an 8-byte options object at the very end of a mapped page, the next page unmapped: a read
       past struct_size faults. In a child, so that a fault is reported, not fatal. */
    pages = (char *)mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || mprotect(pages + page, page, PROT_NONE) != 0) {
        check("create_size8_at_a_page_end", 0, "mmap/mprotect failed");
        return;
    }
    fflush(stdout);
    child = fork();
    if (child == 0) {
        uint32_t head[2] = {8, FFG_ABI_VERSION};
        memcpy(pages + page - 8, head, 8);
        _exit(create_and_run(lib, (const FfgCreateOptions *)(void *)(pages + page - 8), NULL) == 0 ? 0 : 3);
    }
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
        char why[64];
        snprintf(why, sizeof why, "create crashed with signal %d", WTERMSIG(status));
        check("create_size8_at_a_page_end", 0, why);
    } else {
        check("create_size8_at_a_page_end", WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "create or run failed on 8-byte options at the end of a page");
    }
    munmap(pages, 2 * page);

    /* P_create resets every field of the record, the whole message */
    options = (FfgCreateOptions)FFG_CREATE_OPTIONS_INIT;
    memset(&err, 0x5a, sizeof err);
    state = lib->api->create(&options, &err);
    check("create_resets_every_error_field", state != NULL && err.code == FFG_OK && err.node == -1 && err.input == -1
          && err.detail == 0 && all_zero(err.message, sizeof err.message), "a field of the record was left");
    lib->api->destroy(state);
}

static void multi_offers(const library *lib, void *state)
{
    FfgTensor in[2];
    FfgOutput out[4];
    FfgError err;
    double *block = (double *)malloc(64 * sizeof(double)), *spare = (double *)malloc(64 * sizeof(double));
    double sentinel[6] = {7, 7, 7, 7, 7, 7};
    int32_t code;
    int k, declined;
    matrix(&in[0], X, SHAPE23);
    matrix(&in[1], Y, SHAPE23);

    /* one block offered to outputs 0, 1 and 2: every one of them declines it */
    memset(out, 0, sizeof out);
    for (k = 0; k < 3; ++k) {
        out[k].host_buffer = block;
        out[k].host_capacity = 64 * sizeof(double);
    }
    code = lib->api->run(state, in, 2, out, 4, &err);
    declined = code == FFG_OK;
    for (k = 0; k < 3; ++k)
        declined = declined && out[k].alias_of == FFG_OUT_OWNED;
    check("one_block_offered_to_three_outputs_is_declined_by_all", declined && multi_values_right(out),
          "an output used a block offered to another output too");
    release_owned(out, 4, NULL);

    /* outputs 0 and 1 offered blocks that overlap by one element; output 2 a block of its own */
    memset(out, 0, sizeof out);
    out[0].host_buffer = block;
    out[0].host_capacity = 6 * sizeof(double);
    out[1].host_buffer = block + 5;
    out[1].host_capacity = 6 * sizeof(double);
    out[2].host_buffer = spare;
    out[2].host_capacity = 6 * sizeof(double);
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("overlapping_offers_are_both_declined_a_separate_one_used", code == FFG_OK
          && out[0].alias_of == FFG_OUT_OWNED && out[1].alias_of == FFG_OUT_OWNED
          && out[2].alias_of == FFG_OUT_HOST_BUFFER && out[2].tensor.data == (void *)spare && multi_values_right(out),
          "an overlapping offer was used, or a separate one declined");
    release_owned(out, 4, NULL);

    /* a good offer for a view result (x.T): not copied into; the block keeps its bytes */
    memset(out, 0, sizeof out);
    out[3].host_buffer = sentinel;
    out[3].host_capacity = sizeof sentinel;
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("a_view_result_ignores_a_good_offer", code == FFG_OK && out[3].alias_of == 0
          && (const char *)out[3].tensor.data + out[3].tensor.byte_offset == (const char *)X
          && memcmp(sentinel, (double[6]){7, 7, 7, 7, 7, 7}, sizeof sentinel) == 0 && multi_values_right(out),
          "a view was copied into the offered block (or the offer was written)");
    release_owned(out, 4, NULL);
    free(block);
    free(spare);
}

static void multi_failures(const library *lib, void *state)
{
    FfgTensor in[2];
    FfgOutput out[4];
    FfgError err;
    double big[20] = {0};
    int64_t shape45[2] = {4, 5}, empty[2] = {0, 3};
    int32_t code;
    int k, none;

    /* a successful run resets every field (message by its first byte) */
    matrix(&in[0], X, SHAPE23);
    matrix(&in[1], Y, SHAPE23);
    memset(out, 0, sizeof out);
    memset(&err, 0x5a, sizeof err);
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("run_success_resets_every_error_field", code == FFG_OK && err.code == FFG_OK && err.node == -1
          && err.input == -1 && err.detail == 0 && err.message[0] == '\0', "a field of the record was left");
    release_owned(out, 4, NULL);

    /* shapes that do not broadcast: a node fails; no single input is at fault */
    matrix(&in[1], big, shape45);
    garbage_slots(out, 4);
    out[0].host_buffer = big;   /* an offer: only read */
    out[0].host_capacity = sizeof big;
    memset(&err, 0x5a, sizeof err);
    code = lib->api->run(state, in, 2, out, 4, &err);
    none = code == FFG_ERR_VALUE;
    for (k = 0; k < 4; ++k)
        none = none && slot_is_none(&out[k]);
    check("failed_run_leaves_every_slot_none", none && out[0].host_buffer == (void *)big
          && out[0].host_capacity == (int64_t)sizeof big, "a slot after a failed run is not FFG_OUT_NONE/zero");
    check("failed_node_record", err.code == FFG_ERR_VALUE && err.node >= 0 && err.node < lib->desc->n_nodes
          && err.input == -1 && err.detail == 0, "node, input or detail wrong after a node failure");

    /* a wrong dtype: input 1 is at fault, no node */
    matrix(&in[1], Y, SHAPE23);
    in[1].dtype.bits = 32;
    garbage_slots(out, 4);
    memset(&err, 0x5a, sizeof err);
    code = lib->api->run(state, in, 2, out, 4, &err);
    none = code == FFG_ERR_TYPE;
    for (k = 0; k < 4; ++k)
        none = none && slot_is_none(&out[k]);
    check("failed_input_record_and_slots", none && err.node == -1 && err.input == 1 && err.detail == 0,
          "record or slots wrong after an input's dtype was refused");
    in[1].dtype.bits = 64;

    /* NULL pointers inside an FfgTensor are a misused call (FFG_ERR_ABI), naming the slot */
    in[0].shape = NULL;
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("null_shape_is_err_abi", code == FFG_ERR_ABI && err.input == 0 && err.node == -1
          && strstr(err.message, "shape pointer is NULL") != NULL, err.message);
    in[0].shape = SHAPE23;
    in[1].data = NULL;
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("null_data_is_err_abi", code == FFG_ERR_ABI && err.input == 1 && err.node == -1
          && strstr(err.message, "data pointer is NULL") != NULL, err.message);
    /* ... but an empty array may have NULL data, and NULL strides mean C order */
    in[0].data = NULL;
    in[0].shape = empty;
    in[1].shape = empty;
    memset(out, 0, sizeof out);
    code = lib->api->run(state, in, 2, out, 4, &err);
    check("null_data_of_an_empty_array_is_fine", code == FFG_OK && out[0].tensor.shape[0] == 0
          && out[3].tensor.shape[1] == 0, err.message);
    release_owned(out, 4, NULL);

    /* refused arguments: a NULL state (the counts right) writes the slots; a wrong count touches none */
    matrix(&in[0], X, SHAPE23);
    matrix(&in[1], Y, SHAPE23);
    garbage_slots(out, 4);
    code = lib->api->run(NULL, in, 2, out, 4, &err);
    none = code == FFG_ERR_ABI;
    for (k = 0; k < 4; ++k)
        none = none && slot_is_none(&out[k]);
    check("null_state_still_writes_every_slot", none, "the slots of a call refused for its NULL state");
    garbage_slots(out, 4);
    code = lib->api->run(state, in, 2, out, 3, &err);
    check("wrong_count_touches_no_slot", code == FFG_ERR_ABI && out[0].alias_of == 0x5a5a5a5a,
          "a call with the wrong count wrote its slots");
}

/* ---- SCAN: a failure in a step function, one and two levels deep ---- */
static int count_lines(const char *message, const char *prefix)
{
    int n = 0;
    const char *p = message;
    while ((p = strstr(p, prefix)) != NULL) {
        n += 1;
        p += strlen(prefix);
    }
    return n;
}

static void scan_failure(const library *lib, void *state, const char *name, int64_t *w_shape, int64_t *v_shape)
{
    double xs[12], w[10], zs[24], v[10];
    int64_t xs_shape[2] = {3, 4}, zs_shape[3] = {2, 3, 4};
    FfgTensor in[4];
    FfgOutput out[2];
    FfgError err;
    const char *last;
    int32_t code, k;
    for (k = 0; k < 24; ++k) {
        if (k < 12)
            xs[k] = k;
        if (k < 10)
            w[k] = v[k] = 1;
        zs[k] = k;
    }
    matrix(&in[0], xs, xs_shape);
    matrix(&in[1], w, w_shape);
    matrix(&in[2], zs, zs_shape);
    in[2].ndim = 3;
    matrix(&in[3], v, v_shape);
    memset(out, 0, sizeof out);
    code = lib->api->run(state, in, 4, out, 2, &err);
    last = strstr(err.message, "\n  in node #");
    printf("fact %s.code = %d\nfact %s.node = %d\nfact %s.input = %d\n", name, (int)code, name, (int)err.node, name,
           (int)err.input);
    if (err.node >= 0 && err.node < lib->desc->n_nodes)
        printf("fact %s.node_op = %s\n", name, lib->desc->nodes[err.node].op);
    printf("fact %s.in_node_lines = %d\nfact %s.inner_lines = %d\n", name, count_lines(err.message, "\n  in node #"),
           name, count_lines(err.message, "\n  in inner node: "));
    printf("fact %s.message = ", name);
    for (k = 0; err.message[k] != '\0'; ++k)   /* on one line: newlines as \n */
        fputs(err.message[k] == '\n' ? "\\n" : (char[2]){err.message[k], 0}, stdout);
    printf("\n");
    check(name, code != FFG_OK && err.node >= 0 && err.node < lib->desc->n_nodes
          && strncmp(lib->desc->nodes[err.node].op, "Scan", 4) == 0 && last != NULL
          && strtol(last + strlen("\n  in node #"), NULL, 10) == err.node
          && count_lines(err.message, "\n  in node #") == 1 && err.input == -1,
          "the node the record points at is not the Scan node in the table, or the message names another");
}

/* ---- PROFILED: which calls FfgProfile.runs counts ---- */
static void profiled_runs(const library *lib)
{
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
    FfgTensor in[2];
    FfgOutput out[1];
    FfgError err;
    FfgProfile prof;
    double x[3] = {1, 2, 3}, y[4] = {4, 5, 6, 7};
    int64_t n3[1] = {3}, n4[1] = {4};
    int32_t code;
    void *state;
    options.allocator = &counting;
    state = lib->api->create(&options, &err);
    if (state == NULL || lib->api->profile == NULL) {
        check("profile_runs", 0, "no state, or the library has no profile entry");
        return;
    }
    vector(&in[0], x, n3);
    vector(&in[1], y, n3);
    memset(out, 0, sizeof out);
    code = lib->api->run(state, in, 2, out, 1, &err);                         /* 1: succeeds */
    check("profiled_values", code == FFG_OK && ((double *)out[0].tensor.data)[2] == 3 * 6 + 1, err.message);
    release_owned(out, 1, &counting);
    vector(&in[1], y, n4);
    code = lib->api->run(state, in, 2, out, 1, &err);                         /* 2: a node fails */
    check("profiled_node_failure", code == FFG_ERR_VALUE && err.node >= 0, err.message);
    vector(&in[1], y, n3);
    in[1].dtype.bits = 32;
    code = lib->api->run(state, in, 2, out, 1, &err);                         /* 3: an input is refused */
    check("profiled_input_failure", code == FFG_ERR_TYPE && err.input == 1, err.message);
    in[1].dtype.bits = 64;
    lib->api->run(state, in, 1, out, 1, &err);                                /* refused: the count */
    lib->api->run(NULL, in, 2, out, 1, &err);                                 /* refused: no state */
    lib->api->run(state, NULL, 2, out, 1, &err);                              /* refused: no inputs */
    lib->api->run(state, in, 2, out, 1, NULL);                                /* refused: no err */
    reenter_api = lib->api;
    reenter_inputs = in;
    reenter_state = state;
    code = lib->api->run(state, in, 2, out, 1, &err);                         /* 4: succeeds; inside it */
    reenter_state = NULL;                                                     /* a busy call, refused */
    release_owned(out, 1, &counting);
    check("reentrant_run_is_busy_and_writes_its_slot", code == FFG_OK && reenter_code == FFG_ERR_RUNTIME
          && slot_is_none(&reenter_slot), "the re-entrant run was not refused as busy, or left its slot");
    code = lib->api->profile(state, &prof);
    printf("fact profile.runs = %lld\nfact profile.node0_calls = %lld\n", (long long)prof.runs,
           (long long)(prof.n_nodes > 0 ? prof.nodes[0].calls : -1));
    check("profile_runs_counts_calls_past_the_argument_and_busy_checks", code == FFG_OK && prof.runs == 4,
          "FfgProfile.runs is not the 4 calls that got past the argument and busy checks");
    lib->api->destroy(state);
}

static void print_slots(const library *lib)
{
    int32_t k;
    for (k = 0; k < lib->desc->n_inputs; ++k)
        printf("fact slot.in.%d = role %d name %s\n", (int)k, (int)lib->desc->inputs[k].role,
               lib->desc->inputs[k].name);
    for (k = 0; k < lib->desc->n_outputs; ++k)
        printf("fact slot.out.%d = role %d updates %d name %s\n", (int)k, (int)lib->desc->outputs[k].role,
               (int)lib->desc->outputs[k].updates, lib->desc->outputs[k].name);
}

int main(int argc, char **argv)
{
    library multi, scan, profiled, names;
    FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
    FfgError err;
    void *state;
    int64_t good[2] = {4, 2}, bad[2] = {5, 2};
    if (argc != 5) {
        fprintf(stderr, "usage: abi_rules MULTI.so SCAN.so PROFILED.so NAMES.so\n");
        return 2;
    }
    if (open_library(argv[1], &multi) || open_library(argv[2], &scan) || open_library(argv[3], &profiled)
            || open_library(argv[4], &names))
        return 2;
    check("library_speaks_abi_2_1", multi.api->abi_version >= 2001, "the library is older than ABI 2.1");

    multi_create_options(&multi);
    state = multi.api->create(&options, &err);
    multi_offers(&multi, state);
    multi_failures(&multi, state);
    multi.api->destroy(state);

    state = scan.api->create(&options, &err);
    scan_failure(&scan, state, "scan_body_failure_points_at_the_scan_node", bad, good);
    scan_failure(&scan, state, "nested_scan_failure_points_at_the_outer_scan_node", good, bad);
    scan.api->destroy(state);

    profiled_runs(&profiled);
    print_slots(&names);
    printf("%s\n", failures ? "some checks failed" : "all checks passed");
    return failures ? 1 : 0;
}

/*
 * ffigraph_abi.h -- the one fixed ABI between a compiled ffigraph graph and its host (ABI 2.1).
 *
 * A compiled graph is an ordinary shared library. It uses no Python API; it reads and writes
 * arrays through the structs below. A host needs this header and nothing else:
 *
 *   void *lib = dlopen("lib.so", RTLD_NOW | RTLD_LOCAL);
 *   ffg_library_api_fn *entry = (ffg_library_api_fn *)dlsym(lib, "ffg_library_api");
 *   const FfgLibraryApi *api = entry(FFG_ABI_MAJOR);   NULL: the library speaks another major
 *   check api->abi_version / 1000 == FFG_ABI_MAJOR and api->struct_size >= sizeof(FfgLibraryApi)
 *     (FFG_API_USABLE does both), then the layout in api->describe()->layout (FFG_LAYOUT_ENTRIES)
 *   FfgCreateOptions options = FFG_CREATE_OPTIONS_INIT;
 *   void *state = api->create(&options, &err);          NULL: err says why
 *   api->run(state, inputs, n_inputs, outputs, n_outputs, &err) any number of times;
 *   api->destroy(state);
 *
 * Every library exports exactly one fixed-name symbol, ffg_library_api. Its other functions are
 * also exported under the library's own symbol prefix P ("ffg_" and 24 hex digits, the same as
 * FfgLibraryApi.prefix), so a program that links several graphs statically can call them by name:
 *   P_library_api, P_version, P_describe, P_create, P_run, P_destroy, P_set_allocator, and, only
 *   in a library generated with profiling on, P_profile.
 * (When several graph libraries are linked into one executable, ffg_library_api names only one of
 * them: such a program uses P_library_api.)
 *
 * Life cycle (as in SQLite): create a state, run it any number of times, destroy it once.
 * P_destroy(NULL) is harmless; using a state after P_destroy is a caller error.
 *
 * Threads: the describe data and the FfgLibraryApi table are immutable and may be read from any
 * thread at any time. A state serves one P_run at a time: a second concurrent (or re-entrant, e.g.
 * from an allocator callback) P_run on the same state returns FFG_ERR_RUNTIME at once instead of
 * racing. Different states are independent and may run at the same time on different threads.
 * P_set_allocator and P_profile must not be called while a run on that state is in progress.
 *
 * Memory: inputs are never written. Output blocks on the CPU come from the CPU allocator given to
 * P_create (malloc when none) and the host releases each exactly once with it; blocks on CUDA from
 * the allocator given for FFG_DEVICE_CUDA (cudaMalloc/cudaFree when none). Blocks returned are
 * aligned to at least 16 bytes when they come from malloc, else to what the host allocator gives
 * (it must give at least the alignment of the element type; 16 is recommended). Inputs must be
 * aligned to their element size (FFG_ERR_VALUE otherwise).
 *
 * Versioning: FFG_ABI_VERSION = major * 1000 + minor.
 *   - A new major may change anything; hosts must refuse it, and libraries refuse hosts of another
 *     major (ffg_library_api returns NULL, P_create fails with FFG_ERR_ABI and says why).
 *   - A minor may only: append fields at the end of the structs that carry struct_size
 *     (FfgLibraryApi, FfgDescription, FfgCreateOptions), add error codes, add #defines, add
 *     functions reached through new FfgLibraryApi fields. A host reads a field only when the
 *     struct_size it was given covers it (FFG_HAS_FIELD).
 *   - Every other struct a host allocates or indexes (FfgTensor, FfgOutput, FfgAllocator,
 *     FfgError, FfgSlot, FfgNode, FfgProfile and its records) is frozen for the major: its size
 *     is fixed by a static assert below, so arrays of them keep their stride.
 *   - The same rule binds the library: of a struct the host hands in with a struct_size
 *     (FfgCreateOptions is the only one), it reads only the fields that size covers; a field past
 *     it is absent (its default is used), never read. A larger size (a host of a newer minor) is
 *     fine: the fields this library does not know are ignored.
 *   A host that relies on a promise a minor added checks the library's abi_version for it.
 *   2.1 (over 2.0): FFG_OUT_NONE, the slot a failed run leaves; a NULL data or shape pointer inside
 *     an FfgTensor is FFG_ERR_ABI (was FFG_ERR_VALUE); P_create reads no FfgCreateOptions field
 *     past struct_size; every one of several overlapping offers is declined (2.0 used the first);
 *     a failure inside a nested graph names its node on an "in inner node" line (see FfgError).
 *
 * Everything between the cdef markers is plain C that cffi's cdef() parses as well (integer
 * #defines, typedefs, structs); the Python loader reads it from this file, so the layout is never
 * typed twice.
 */
#ifndef FFIGRAPH_ABI_H
#define FFIGRAPH_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ffigraph-cdef-begin */

#define FFG_ABI_MAJOR 2
#define FFG_ABI_MINOR 1
#define FFG_ABI_VERSION 2001
#define FFG_MAX_NDIM 32
#define FFG_ERROR_MESSAGE_SIZE 512

/* Device types: the values of DLPack's DLDeviceType. */
#define FFG_DEVICE_CPU 1
#define FFG_DEVICE_CUDA 2

/* Dtype codes: the values of DLPack's DLDataTypeCode. */
#define FFG_DTYPE_INT 0
#define FFG_DTYPE_UINT 1
#define FFG_DTYPE_FLOAT 2
#define FFG_DTYPE_COMPLEX 5
#define FFG_DTYPE_BOOL 6

/* Return codes of P_run, P_create, P_set_allocator and P_profile (0 is success). */
#define FFG_OK 0
#define FFG_ERR_TYPE 1       /* wrong dtype, ndim or device of an input */
#define FFG_ERR_VALUE 2      /* wrong shape, shapes that do not broadcast, bad value */
#define FFG_ERR_INDEX 3      /* an index out of bounds */
#define FFG_ERR_NOMEM 4      /* an allocation failed */
#define FFG_ERR_ABI 5        /* a misused call: slot counts, NULL pointers (those inside an FfgTensor
                                too), versions, struct sizes */
#define FFG_ERR_RUNTIME 6    /* an op failed for another reason; a busy state */
#define FFG_ERR_CUDA 7       /* a CUDA runtime call failed: FfgError.detail holds its cudaError_t */
#define FFG_ERR_LINALG 8     /* a linear-algebra routine failed on its values: a matrix that is not
                                positive definite, a singular one, no convergence */

/* Slot roles in FfgSlot.role. */
#define FFG_ROLE_INPUT 0     /* an input the caller gives */
#define FFG_ROLE_SHARED 1    /* a shared variable's current value (an input the caller keeps) */
#define FFG_ROLE_OUTPUT 2    /* an output */
#define FFG_ROLE_UPDATE 3    /* a new value for the input slot FfgSlot.updates names */

/* FfgDescription.flags */
#define FFG_DESCRIBE_PROFILED 1   /* generated with profiling on: FfgLibraryApi.profile is set */

/* DLPack's DLDevice. */
typedef struct FfgDevice {
    int32_t device_type;      /* FFG_DEVICE_* */
    int32_t device_id;        /* 0 on the CPU (another id is refused); the CUDA ordinal on a GPU */
} FfgDevice;

/* DLPack's DLDataType. */
typedef struct FfgDtype {
    uint8_t code;             /* FFG_DTYPE_* */
    uint8_t bits;             /* bits per element: 8, 16, 32, 64 or 128; bool is 8 */
    uint16_t lanes;           /* always 1 */
} FfgDtype;

/*
 * An n-d array, layout-compatible with DLPack's DLTensor: a host holding a DLTensor passes a
 * pointer to it unchanged. Frozen for ABI 2.
 * As an input: every pointer is borrowed for the duration of one P_run; nothing is written
 * through it. data may be NULL only for an empty array, shape only when ndim == 0: a NULL pointer
 * where one is needed is a misused call, FFG_ERR_ABI with FfgError.input naming the slot.
 */
typedef struct FfgTensor {
    void *data;               /* base address; element 0 is at (char *)data + byte_offset */
    FfgDevice device;
    int32_t ndim;             /* 0 <= ndim <= FFG_MAX_NDIM */
    FfgDtype dtype;
    int64_t *shape;           /* ndim entries, each >= 0; may be NULL when ndim == 0 */
    int64_t *strides;         /* ndim entries, in ELEMENTS (may be 0 or negative). NULL means
                                 C-contiguous and is accepted on inputs; outputs always have strides */
    uint64_t byte_offset;     /* in bytes */
} FfgTensor;

/*
 * An output slot. Frozen for ABI 2.
 * Before P_run the host may offer a block for the result: host_buffer (NULL for none) of
 * host_capacity bytes. An offer is advisory: the library uses it when the result is C-contiguous,
 * fits and the block is aligned for the dtype, and declines it (result in an owned block instead)
 * when it does not, or when the block overlaps an input's memory or another output's offer (then
 * every offer of the overlapping ones is declined, whatever the slot order). A result that is a
 * view (of an input, or of a value the library holds) is not copied into an offer: it is handed
 * over where it lies, and the offered block is left as it was.
 * P_run fills the rest:
 *   alias_of == FFG_OUT_OWNED (-1): the data lies in base, a block the host now owns and must
 *     release exactly once with the allocator given to P_create (free() when none);
 *   alias_of == FFG_OUT_HOST_BUFFER (-2): the result was written into host_buffer,
 *     C-contiguous from its start; base is NULL;
 *   alias_of >= 0: the data lies inside input slot alias_of's memory (no copy);
 *     the host keeps that input alive as long as the output. base is NULL.
 *   alias_of == FFG_OUT_NONE (-3): no value (the run failed): base NULL, tensor all zero bytes
 *     (data, shape and strides NULL, ndim 0), nothing to release. Since 2.1 (2.0 left
 *     FFG_OUT_OWNED with base NULL).
 * tensor.shape and tensor.strides point into the state and stay valid until the next P_run or
 * P_destroy on that state: copy them. P_run writes every slot whenever err is not NULL, outputs
 * is not NULL and n_outputs is the description's count (the state NULL or busy included); after
 * any failure every slot is FFG_OUT_NONE, and an offered block may have been written (its bytes
 * are then unspecified). host_buffer and host_capacity are only read.
 */
enum { FFG_OUT_OWNED = -1, FFG_OUT_HOST_BUFFER = -2, FFG_OUT_NONE = -3 };

typedef struct FfgOutput {
    FfgTensor tensor;
    void *base;
    void *host_buffer;
    int64_t host_capacity;
    int32_t alias_of;
    int32_t reserved;         /* set to 0 by P_run */
} FfgOutput;

/*
 * Where memory comes from. Frozen for ABI 2. Both functions must be non-NULL (P_create and
 * P_set_allocator refuse a table with a NULL one, FFG_ERR_ABI). The library copies the table; ctx
 * must stay valid until the state is destroyed AND every block it handed out was released.
 * alloc may be called from any thread that runs the state; it returns NULL on failure (the run
 * then fails with FFG_ERR_NOMEM). release(ctx, NULL) is never called.
 */
typedef struct FfgAllocator {
    void *(*alloc)(void *ctx, size_t nbytes);
    void (*release)(void *ctx, void *ptr);
    void *ctx;
} FfgAllocator;

/*
 * Errors cross the boundary as data. Frozen for ABI 2 (the same 528 bytes as ABI 1, so a host of
 * another major can still read why it was refused). Every call that takes one (P_run, P_create)
 * first resets every field: code FFG_OK, node -1, input -1, detail 0, message "" (P_create zeroes
 * all its bytes, P_run the first: read it as a C string). A field the failure does not concern
 * keeps that value. P_run needs a non-NULL err (it returns FFG_ERR_ABI without one);
 * P_create accepts NULL.
 * Nested graphs (a scan's step function) have nodes of their own, which FfgDescription.nodes does
 * not list: a failure inside one is reported against the node of the exported graph that runs it
 * (node is that node's index), and the message names the node that failed on a line of its own.
 * The nodes of an ifelse's branches are nodes of the exported graph: listed, and reported as any.
 */
typedef struct FfgError {
    int32_t code;             /* FFG_OK or FFG_ERR_* */
    int32_t node;             /* the failing node: an index into FfgDescription.nodes, or -1 (the
                                 failure is no node's: an input, the arguments, an allocation of
                                 P_create) */
    int32_t input;            /* the input slot at fault, or -1 when no single input is */
    int32_t detail;           /* FFG_ERR_CUDA: the cudaError_t; otherwise 0 */
    char message[512];        /* FFG_ERROR_MESSAGE_SIZE; NUL-terminated. The cause comes first;
                                 inside a nested graph a line "\n  in inner node: <text>" per level
                                 of nesting follows, innermost first; after a node failure the last
                                 line is "\n  in node #N: <text>", N == node (the only such line).
                                 Those texts are cut to fit, never the cause, and the inner lines
                                 before the last one */
} FfgError;

/* One input or output of the compiled graph, as P_describe reports it. Frozen for ABI 2. */
typedef struct FfgSlot {
    const char *name;         /* unique among all slots: the user's variable name when it has one
                                 (up to a NUL in it), else "input<k>" and "output<k>" (k: the slot's
                                 index in inputs / outputs) or "shared<k>" (k counts the shared
                                 variables only: the k-th slot of role FFG_ROLE_SHARED); an
                                 update slot is named "<its shared variable's slot name>.update".
                                 Names are given in slot order, inputs first; a name already given
                                 gets "_<n>" appended, n the smallest from 1 that makes it new */
    int32_t role;             /* FFG_ROLE_* */
    int32_t ndim;
    FfgDtype dtype;
    int32_t updates;          /* FFG_ROLE_UPDATE: the input slot whose next value this is; else -1 */
    const int64_t *static_shape;   /* ndim entries; -1 where unknown */
} FfgSlot;

/* One node of the graph, in execution order (FfgError.node indexes this table; the nodes of nested
   graphs are not in it, see FfgError). Frozen for ABI 2. */
typedef struct FfgNode {
    const char *op;           /* the op, short ("Dot", "Elemwise{add}", "Composite{...}") */
    const char *text;         /* the node: op and operands, at most 200 characters */
} FfgNode;

/*
 * What a library is, returned by P_describe (static data: valid while the library is loaded).
 * Carries struct_size: a minor version may append fields.
 */
typedef struct FfgDescription {
    size_t struct_size;       /* sizeof(FfgDescription) as the library was built */
    uint32_t abi_version;     /* FFG_ABI_VERSION the library was built with */
    int32_t flags;            /* FFG_DESCRIBE_* */
    int32_t n_layout;
    int32_t n_inputs;
    const int64_t *layout;    /* sizes and offsets of the structs as compiled (FFG_LAYOUT_ENTRIES) */
    const FfgSlot *inputs;    /* n_inputs entries: the inputs, then the shared variables */
    int32_t n_outputs;
    int32_t n_nodes;
    const FfgSlot *outputs;   /* n_outputs entries: the outputs, then the updates */
    const FfgNode *nodes;     /* n_nodes entries, in execution order */
    const char *prefix;       /* the symbol prefix P */
    const char *source_hash;  /* hex digest of the generated source */
} FfgDescription;

/* Options of P_create. Carries struct_size: a minor version may append fields. P_create reads a
   field only when struct_size covers it (FFG_HAS_FIELD); one it does not cover is absent (NULL). */
typedef struct FfgCreateOptions {
    uint32_t struct_size;     /* sizeof(FfgCreateOptions) as the host compiled it; at least 8 */
    uint32_t abi_version;     /* FFG_ABI_VERSION as the host compiled it */
    const FfgAllocator *allocator;          /* CPU memory; NULL: malloc/free */
    const FfgAllocator *device_allocator;   /* CUDA memory; NULL: cudaMalloc/cudaFree */
} FfgCreateOptions;

/*
 * Profiling (only in a library generated with profiling on). Frozen for ABI 2. Counters accumulate
 * over the state's life; a host wanting the figures of some calls only subtracts two readings.
 * Times are CLOCK_MONOTONIC nanoseconds.
 */
typedef struct FfgNodeProfile {
    int64_t calls;            /* runs of the node, failed ones included */
    int64_t total_ns;         /* time inside the node, summed over those runs */
} FfgNodeProfile;

typedef struct FfgValueProfile {
    int32_t node;             /* the node computing it, in execution order */
    int32_t output;           /* which output of that node */
    int32_t ndim;             /* -1 until the node first succeeds, or when its type cannot say */
    int32_t reserved;
    int64_t nbytes;           /* bytes of its elements after the node's last successful run */
    int64_t shape[32];        /* FFG_MAX_NDIM; its shape after that run (ndim entries) */
} FfgValueProfile;

typedef struct FfgProfile {
    int64_t runs;             /* P_run calls that got past the argument checks (non-NULL err and
                                 state, the counts, the arrays) and found the state free: failed
                                 ones included; a call refused before that is not counted */
    int64_t total_ns;         /* their time inside P_run: inputs, nodes, outputs and cleanup */
    int32_t n_nodes;
    int32_t n_values;
    const FfgNodeProfile *nodes;    /* n_nodes entries, in execution order */
    const FfgValueProfile *values;  /* n_values entries: every node output, node by node */
} FfgProfile;

/*
 * The functions. All return codes are FFG_OK or FFG_ERR_*.
 *
 * version()   FFG_ABI_VERSION the library was built with.
 * describe()  the library's static description (never NULL).
 * create(options, err)
 *             a new state, or NULL (err, when not NULL, says why). options must not be NULL and
 *             must have struct_size >= 8 and abi_version of this major (FFG_CREATE_OPTIONS_INIT);
 *             fields past struct_size are not read; the allocators it points at are copied (one
 *             with a NULL function is refused, FFG_ERR_ABI). Thread-safe.
 * run(state, inputs, n_inputs, outputs, n_outputs, err)
 *             one evaluation. n_inputs/n_outputs must equal the description's counts; inputs and
 *             outputs may be NULL only when their count is 0; err must not be NULL. Every output
 *             slot is written (see FfgOutput: FFG_OUT_NONE after a failure). One run per state at
 *             a time.
 * destroy(state)
 *             frees the state (NULL is harmless). Output blocks already handed over stay valid.
 * set_allocator(state, device_type, allocator)
 *             replaces where FFG_DEVICE_CUDA memory comes from (NULL: the device's own);
 *             FFG_ERR_ABI for a NULL state, another device type, or an allocator with a NULL
 *             function. Not while a run is in progress.
 * profile(state, out)
 *             fills *out with pointers into the state: valid until the next run or destroy on it.
 *             FFG_ERR_ABI when state or out is NULL. Between runs, from the thread that runs them.
 */
typedef uint32_t ffg_version_fn(void);
typedef const FfgDescription *ffg_describe_fn(void);
typedef void *ffg_create_fn(const FfgCreateOptions *options, FfgError *err);
typedef int32_t ffg_run_fn(void *state, const FfgTensor *inputs, int32_t n_inputs,
                           FfgOutput *outputs, int32_t n_outputs, FfgError *err);
typedef void ffg_destroy_fn(void *state);
typedef int32_t ffg_set_allocator_fn(void *state, int32_t device_type, const FfgAllocator *allocator);
typedef int32_t ffg_profile_fn(void *state, FfgProfile *out);

/*
 * The table ffg_library_api returns (static data: valid while the library is loaded; read it from
 * any thread). Carries struct_size: a minor version may append function pointers.
 */
typedef struct FfgLibraryApi {
    size_t struct_size;       /* sizeof(FfgLibraryApi) as the library was built */
    uint32_t abi_version;     /* FFG_ABI_VERSION the library was built with */
    int32_t n_functions;      /* how many function pointers follow (7 in ABI 2.0 and 2.1) */
    const char *prefix;       /* the symbol prefix P */
    ffg_version_fn *version;
    ffg_describe_fn *describe;
    ffg_create_fn *create;
    ffg_run_fn *run;
    ffg_destroy_fn *destroy;
    ffg_set_allocator_fn *set_allocator;
    ffg_profile_fn *profile;  /* NULL unless the library was generated with profiling on */
} FfgLibraryApi;

/* ffg_library_api(FFG_ABI_MAJOR): the table, or NULL when the library does not speak that major. */
typedef const FfgLibraryApi *ffg_library_api_fn(uint32_t abi_major);

/* ffigraph-cdef-end */

/* The layout a library reports in FfgDescription.layout, in this order. */
#define FFG_LAYOUT_ENTRIES \
    (int64_t)sizeof(FfgTensor), (int64_t)offsetof(FfgTensor, data), \
    (int64_t)offsetof(FfgTensor, device), (int64_t)offsetof(FfgTensor, ndim), \
    (int64_t)offsetof(FfgTensor, dtype), (int64_t)offsetof(FfgTensor, shape), \
    (int64_t)offsetof(FfgTensor, strides), (int64_t)offsetof(FfgTensor, byte_offset), \
    (int64_t)sizeof(FfgOutput), (int64_t)offsetof(FfgOutput, base), \
    (int64_t)offsetof(FfgOutput, host_buffer), (int64_t)offsetof(FfgOutput, host_capacity), \
    (int64_t)offsetof(FfgOutput, alias_of), (int64_t)sizeof(FfgError), \
    (int64_t)offsetof(FfgError, message), (int64_t)sizeof(FfgAllocator), \
    (int64_t)sizeof(FfgSlot), (int64_t)offsetof(FfgSlot, updates), (int64_t)offsetof(FfgSlot, static_shape), \
    (int64_t)sizeof(FfgNode), (int64_t)sizeof(FfgDescription), (int64_t)offsetof(FfgDescription, nodes), \
    (int64_t)sizeof(FfgCreateOptions), (int64_t)sizeof(FfgLibraryApi), (int64_t)sizeof(FfgProfile)

/* Whether a struct that carries struct_size was built with `field` (a host of a newer minor
   reads a field only when this holds). */
#define FFG_HAS_FIELD(ptr, type, field) \
    ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Whether a table from ffg_library_api can be used by a host built against this header. */
#define FFG_API_USABLE(api) \
    ((api) != NULL && (api)->abi_version / 1000 == FFG_ABI_MAJOR && FFG_HAS_FIELD(api, FfgLibraryApi, profile))

/* P_create's options for a host that wants malloc/free and cudaMalloc/cudaFree. */
#define FFG_CREATE_OPTIONS_INIT {(uint32_t)sizeof(FfgCreateOptions), FFG_ABI_VERSION, NULL, NULL}

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#define FFG_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define FFG_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else   /* C89/C99 and C++98: a negative array size stops the build; unique names by line */
#define FFG_CONCAT_(a, b) a##b
#define FFG_CONCAT(a, b) FFG_CONCAT_(a, b)
#define FFG_STATIC_ASSERT(cond, msg) typedef char FFG_CONCAT(ffg_static_assert_line_, __LINE__)[(cond) ? 1 : -1]
#endif
/* DLTensor's layout (what DLPack's dlpack.h gives). */
FFG_STATIC_ASSERT(sizeof(FfgDevice) == 8, "FfgDevice must match DLDevice");
FFG_STATIC_ASSERT(sizeof(FfgDtype) == 4, "FfgDtype must match DLDataType");
FFG_STATIC_ASSERT(offsetof(FfgTensor, data) == 0, "DLTensor.data");
FFG_STATIC_ASSERT(offsetof(FfgTensor, device) == sizeof(void *), "DLTensor.device");
FFG_STATIC_ASSERT(offsetof(FfgTensor, ndim) == sizeof(void *) + 8, "DLTensor.ndim");
FFG_STATIC_ASSERT(offsetof(FfgTensor, dtype) == sizeof(void *) + 12, "DLTensor.dtype");
FFG_STATIC_ASSERT(offsetof(FfgTensor, shape) == sizeof(void *) + 16, "DLTensor.shape");
FFG_STATIC_ASSERT(offsetof(FfgTensor, strides) == 2 * sizeof(void *) + 16, "DLTensor.strides");
FFG_STATIC_ASSERT(offsetof(FfgTensor, byte_offset) == 3 * sizeof(void *) + 16, "DLTensor.byte_offset");
FFG_STATIC_ASSERT(sizeof(FfgTensor) == 3 * sizeof(void *) + 24, "sizeof(DLTensor)");
/* The structs frozen for ABI 2: their sizes (on LP64: 48, 80, 24, 528, 32, 16, 16, 280, 40). */
FFG_STATIC_ASSERT(sizeof(FfgOutput) == sizeof(FfgTensor) + 3 * sizeof(void *) + 8, "FfgOutput is frozen");
FFG_STATIC_ASSERT(sizeof(FfgAllocator) == 3 * sizeof(void *), "FfgAllocator is frozen");
FFG_STATIC_ASSERT(sizeof(FfgError) == 16 + FFG_ERROR_MESSAGE_SIZE, "FfgError is frozen");
FFG_STATIC_ASSERT(sizeof(FfgSlot) == 2 * sizeof(void *) + 16, "FfgSlot is frozen");
FFG_STATIC_ASSERT(sizeof(FfgNode) == 2 * sizeof(void *), "FfgNode is frozen");
FFG_STATIC_ASSERT(sizeof(FfgNodeProfile) == 16, "FfgNodeProfile is frozen");
FFG_STATIC_ASSERT(sizeof(FfgValueProfile) == 24 + 8 * FFG_MAX_NDIM, "FfgValueProfile is frozen");
FFG_STATIC_ASSERT(sizeof(FfgProfile) == 24 + 2 * sizeof(void *), "FfgProfile is frozen");
FFG_STATIC_ASSERT(offsetof(FfgError, message) == 16, "FfgError.message");
FFG_STATIC_ASSERT(sizeof(((FfgError *)0)->message) == FFG_ERROR_MESSAGE_SIZE, "FfgError.message");
FFG_STATIC_ASSERT(sizeof(((FfgValueProfile *)0)->shape) == FFG_MAX_NDIM * sizeof(int64_t), "FfgValueProfile.shape");

/* Marks the entry points as the library's only exported symbols. */
#if defined(_WIN32)
#define FFG_EXPORT __declspec(dllexport)
#else
#define FFG_EXPORT __attribute__((visibility("default")))
#endif

/* The one fixed-name symbol of every graph library (see the top of this file). */
FFG_EXPORT const FfgLibraryApi *ffg_library_api(uint32_t abi_major);

#ifdef __cplusplus
}
#endif

#endif /* FFIGRAPH_ABI_H */

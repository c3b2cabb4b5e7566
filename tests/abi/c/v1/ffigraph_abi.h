/*
 * ffigraph_abi.h -- the one fixed ABI between a compiled ffigraph graph and its host.
 *
 * A compiled graph is an ordinary shared library. It uses no Python API; it
 * reads and writes arrays through the structs below and exports five
 * functions, each named with the library's own prefix P:
 *
 *   uint32_t              P_version(void);     ABI version it was built against
 *   const FfgDescription *P_describe(void);    its slots and the layout it was compiled with
 *   void                 *P_create(const FfgAllocator *, FfgError *);
 *   int32_t               P_run(void *state, inputs, n_inputs, outputs, n_outputs, FfgError *);
 *   void                  P_destroy(void *state);
 * and, since 1.1:
 *   int32_t               P_set_allocator(void *state, int32_t device_type, const FfgAllocator *);
 *                         where memory on another device (FFG_DEVICE_CUDA) comes from; NULL, or
 *                         never called, means the device's own (cudaMalloc/cudaFree).
 * and, since 1.2, only in a library generated with profiling on:
 *   int32_t               P_profile(void *state, FfgProfile *out);
 *                         per-node call counts and times, and the last shape of every node output.
 *                         A library built without profiling has no such symbol and no timing code.
 *
 * Life cycle (as in SQLite):
 *   1. check P_version() == FFG_ABI_VERSION and the layout in P_describe();
 *   2. state = P_create(allocator or NULL, &err); NULL means failure, err says why;
 *   3. P_run(state, ...) any number of times; 0 is success, otherwise an FFG_ERR_* code
 *      and err holds the message, the node and the input that failed;
 *   4. P_destroy(state); P_destroy(NULL) is harmless; using state afterwards is a caller error.
 *
 * Output blocks on the CPU are released with P_create's allocator; blocks on CUDA with the one
 * given to P_set_allocator for FFG_DEVICE_CUDA (cudaFree when none was given).
 *
 * Versioning: FFG_ABI_VERSION = major * 1000 + minor. A new major means a struct
 * or signature changed: hosts must refuse it. A new minor only appends fields at
 * the end of structs or adds error codes: hosts built for an older minor still work.
 *
 * Everything between the cdef markers is plain C that cffi's cdef() parses
 * as well (integer #defines, typedefs, structs); the Python loader reads it
 * from this file, so the layout is never typed twice.
 */
#ifndef FFIGRAPH_ABI_H
#define FFIGRAPH_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ffigraph-cdef-begin */

#define FFG_ABI_VERSION 1003
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

/* Return codes of P_run and P_create (0 is success). */
#define FFG_OK 0
#define FFG_ERR_TYPE 1       /* wrong dtype, ndim or device of an input */
#define FFG_ERR_VALUE 2      /* wrong shape, shapes that do not broadcast, bad value */
#define FFG_ERR_INDEX 3      /* an index out of bounds */
#define FFG_ERR_NOMEM 4      /* an allocation failed */
#define FFG_ERR_ABI 5        /* slot counts or struct layout do not match */
#define FFG_ERR_RUNTIME 6    /* an op failed for another reason */
#define FFG_ERR_CUDA 7       /* a CUDA runtime call failed: FfgError.reserved holds its cudaError_t,
                                the message CUDA's own name and string (since 1.1) */
#define FFG_ERR_LINALG 8     /* a linear-algebra routine failed on its values: a matrix that is not
                                positive definite, a singular one, no convergence (since 1.3) */

/* Slot roles in FfgDescription. */
#define FFG_ROLE_INPUT 0
#define FFG_ROLE_SHARED 1
#define FFG_ROLE_OUTPUT 2
#define FFG_ROLE_UPDATE 3

/* DLPack's DLDevice. */
typedef struct FfgDevice {
    int32_t device_type;      /* FFG_DEVICE_* */
    int32_t device_id;        /* 0 on the CPU */
} FfgDevice;

/* DLPack's DLDataType. */
typedef struct FfgDtype {
    uint8_t code;             /* FFG_DTYPE_* */
    uint8_t bits;             /* bits per element: 8, 16, 32, 64 or 128; bool is 8 */
    uint16_t lanes;           /* always 1 */
} FfgDtype;

/*
 * An n-d array, layout-compatible with DLPack's DLTensor: a host holding a
 * DLTensor passes a pointer to it unchanged.
 * All pointers are borrowed for the duration of one call unless said otherwise.
 */
typedef struct FfgTensor {
    void *data;               /* base address; element 0 is at (char *)data + byte_offset */
    FfgDevice device;
    int32_t ndim;             /* 0 <= ndim <= FFG_MAX_NDIM */
    FfgDtype dtype;
    int64_t *shape;           /* ndim entries; may be NULL when ndim == 0 */
    int64_t *strides;         /* ndim entries, in ELEMENTS (may be 0 or negative); NULL = C-contiguous */
    uint64_t byte_offset;     /* in bytes */
} FfgTensor;

/*
 * An output slot.
 * Before P_run the host may offer a block for the result: host_buffer (NULL for
 * none) of host_capacity bytes. P_run fills the rest:
 *   alias_of == FFG_OUT_OWNED (-1): the data lies in base, a block the host now owns
 *     and must release exactly once with the allocator given to P_create (free()
 *     when none was given);
 *   alias_of == FFG_OUT_HOST_BUFFER (-2): the result was written into host_buffer,
 *     C-contiguous from its start; base is NULL;
 *   alias_of >= 0: the data lies inside input slot alias_of's memory (no copy);
 *     the host keeps that input alive as long as the output.
 * tensor.shape and tensor.strides point into the state and stay valid until the
 * next P_run or P_destroy on that state: copy them.
 */
enum { FFG_OUT_OWNED = -1, FFG_OUT_HOST_BUFFER = -2 };

typedef struct FfgOutput {
    FfgTensor tensor;
    void *base;
    void *host_buffer;
    int64_t host_capacity;
    int32_t alias_of;
    int32_t reserved;
} FfgOutput;

/* Where output and scratch memory comes from; NULL at P_create means malloc/free. */
typedef struct FfgAllocator {
    void *(*alloc)(void *ctx, size_t nbytes);
    void (*release)(void *ctx, void *ptr);
    void *ctx;
} FfgAllocator;

/* Errors cross the boundary as data; the message is NUL-terminated. */
typedef struct FfgError {
    int32_t code;             /* FFG_OK or FFG_ERR_* */
    int32_t node;             /* index of the failing node in execution order, or -1 */
    int32_t input;            /* index of the input slot at fault, or -1 */
    int32_t reserved;         /* FFG_ERR_CUDA: the cudaError_t; otherwise 0 */
    char message[512];        /* FFG_ERROR_MESSAGE_SIZE */
} FfgError;

/* One input or output of the compiled graph, as P_describe reports it. */
typedef struct FfgSlot {
    const char *name;
    int32_t role;             /* FFG_ROLE_* */
    int32_t ndim;
    FfgDtype dtype;
    const int64_t *static_shape;   /* ndim entries; -1 where unknown */
} FfgSlot;

typedef struct FfgDescription {
    uint32_t abi_version;
    int32_t n_layout;
    const int64_t *layout;    /* sizes and offsets of these structs as compiled (see FFG_LAYOUT) */
    int32_t n_inputs;
    int32_t n_outputs;
    const FfgSlot *inputs;
    const FfgSlot *outputs;
    const char *source_hash;  /* hex digest of the generated source */
} FfgDescription;

/* The signatures of the five exported functions (declare them as `ffg_run_fn P_run;`). */
typedef uint32_t ffg_version_fn(void);
typedef const FfgDescription *ffg_describe_fn(void);
typedef void *ffg_create_fn(const FfgAllocator *allocator, FfgError *err);
typedef int32_t ffg_run_fn(void *state, const FfgTensor *inputs, int32_t n_inputs,
                           FfgOutput *outputs, int32_t n_outputs, FfgError *err);
typedef void ffg_destroy_fn(void *state);
typedef int32_t ffg_set_allocator_fn(void *state, int32_t device_type, const FfgAllocator *allocator);

/*
 * Profiling (since 1.2). Counters accumulate over the state's life; a host wanting the figures of
 * some calls only subtracts two readings. Times are CLOCK_MONOTONIC nanoseconds.
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
    int64_t runs;             /* P_run calls that got past the argument checks */
    int64_t total_ns;         /* their time inside P_run: inputs, nodes, outputs and cleanup */
    int32_t n_nodes;
    int32_t n_values;
    const FfgNodeProfile *nodes;    /* n_nodes entries, in execution order */
    const FfgValueProfile *values;  /* n_values entries: every node output, node by node */
} FfgProfile;

/* Fills *out with pointers into the state: valid until the next P_run or P_destroy on it.
   FFG_ERR_ABI when state or out is NULL. Call it between runs, from the thread that runs them. */
typedef int32_t ffg_profile_fn(void *state, FfgProfile *out);

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
    (int64_t)sizeof(FfgSlot), (int64_t)sizeof(FfgDescription)

/* DLTensor layout on LP64 platforms (what DLPack's dlpack.h gives). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#define FFG_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define FFG_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else   /* C99 and C++98: a negative array size stops the build; unique names by line */
#define FFG_CONCAT_(a, b) a##b
#define FFG_CONCAT(a, b) FFG_CONCAT_(a, b)
#define FFG_STATIC_ASSERT(cond, msg) typedef char FFG_CONCAT(ffg_static_assert_line_, __LINE__)[(cond) ? 1 : -1]
#endif
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
FFG_STATIC_ASSERT(sizeof(((FfgError *)0)->message) == FFG_ERROR_MESSAGE_SIZE, "FfgError.message");
FFG_STATIC_ASSERT(sizeof(((FfgValueProfile *)0)->shape) == FFG_MAX_NDIM * sizeof(int64_t), "FfgValueProfile.shape");

/* Marks the five entry points as the library's only exported symbols. */
#if defined(_WIN32)
#define FFG_EXPORT __declspec(dllexport)
#else
#define FFG_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* FFIGRAPH_ABI_H */

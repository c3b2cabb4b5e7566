/*
 * ffg_dlpack.h -- hand ffigraph tensors on as DLPack, and take DLPack tensors in, from plain C.
 *
 * DLPack (https://dmlc.github.io/dlpack/) is how array libraries lend each other
 * memory without copying: the producer fills a DLManagedTensorVersioned, and the
 * consumer calls its deleter exactly once when done with it. This file does the
 * bookkeeping that rule asks of a C host of a compiled ffigraph graph:
 *
 *   - ffg_dlpack_take wraps a DLPack tensor received from elsewhere (PyTorch,
 *     numpy, CuPy, ...) in a reference-counted holder and gives back an
 *     FfgTensor to pass to P_run as an input;
 *   - ffg_dlpack_wrap_output turns one output of a successful P_run into a
 *     DLPack tensor of its own: it owns the output's block, or keeps the input
 *     it aliases alive, and copies the shape and strides P_run lends only until
 *     the next run.
 *
 * The types below are ffigraph's own spelling of DLPack 1.x's, so this header
 * never clashes with a real dlpack.h in the same program. They are
 * layout-identical (checked below): a host that also includes dlpack.h may cast
 * an FfgDLManagedTensorVersioned * to a DLManagedTensorVersioned * and back.
 * The deleter's parameter is a pointer to the same layout under another name,
 * so calling it through either type passes the same address in the same way.
 *
 * Only the C standard library is used; the header compiles as C99, C11 and C++.
 */
#ifndef FFG_DLPACK_H
#define FFG_DLPACK_H

#include "ffigraph_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version this file writes into the tensors it makes, and the only major it reads. */
#define FFG_DLPACK_MAJOR 1
#define FFG_DLPACK_MINOR 0

/* DLPack's flag bits: the consumer must not write the memory / the producer made a copy for it. */
#define FFG_DLPACK_FLAG_READ_ONLY (1ull << 0)
#define FFG_DLPACK_FLAG_IS_COPIED (1ull << 1)

/* DLPack's DLPackVersion. */
typedef struct FfgDLPackVersion {
    uint32_t major;
    uint32_t minor;
} FfgDLPackVersion;

/*
 * DLPack's DLManagedTensorVersioned. dl_tensor is the ABI's FfgTensor, which is
 * already layout-compatible with DLTensor. Whoever receives one owns it and
 * calls deleter(self) exactly once when done (deleter may be NULL: nothing to
 * free); manager_ctx belongs to the producer.
 */
typedef struct FfgDLManagedTensorVersioned {
    FfgDLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct FfgDLManagedTensorVersioned *self);
    uint64_t flags;             /* FFG_DLPACK_FLAG_* bits */
    FfgTensor dl_tensor;
} FfgDLManagedTensorVersioned;

/*
 * The layout dlpack.h gives. The offsets hold on every platform where pointers
 * are 8 bytes (LP64 and LLP64); with 4-byte pointers only the first ones are fixed.
 */
FFG_STATIC_ASSERT(sizeof(FfgDLPackVersion) == 8, "FfgDLPackVersion must match DLPackVersion");
FFG_STATIC_ASSERT(offsetof(FfgDLManagedTensorVersioned, version) == 0, "DLManagedTensorVersioned.version");
FFG_STATIC_ASSERT(offsetof(FfgDLManagedTensorVersioned, manager_ctx) == 8, "DLManagedTensorVersioned.manager_ctx");
FFG_STATIC_ASSERT(sizeof(void *) != 8 || offsetof(FfgDLManagedTensorVersioned, deleter) == 16,
                  "DLManagedTensorVersioned.deleter");
FFG_STATIC_ASSERT(sizeof(void *) != 8 || offsetof(FfgDLManagedTensorVersioned, flags) == 24,
                  "DLManagedTensorVersioned.flags");
FFG_STATIC_ASSERT(sizeof(void *) != 8 || offsetof(FfgDLManagedTensorVersioned, dl_tensor) == 32,
                  "DLManagedTensorVersioned.dl_tensor");
FFG_STATIC_ASSERT(sizeof(void *) != 8 || sizeof(FfgDLManagedTensorVersioned) == 32 + sizeof(FfgTensor),
                  "sizeof(DLManagedTensorVersioned)");

/*
 * A DLPack tensor taken in as a graph input: opaque, reference-counted.
 *
 * Threading: where the compiler has GCC's __atomic builtins (gcc, clang) the
 * count is changed atomically, so a holder may be dropped, and outputs aliasing
 * it deleted, from any threads at once -- an output handed to another library
 * is often freed on a thread the host does not choose. Elsewhere the count is a
 * plain int and the host must serialise every call touching one holder (the
 * drops and the deleters of outputs that alias it).
 */
typedef struct FfgDLPackInput FfgDLPackInput;

/*
 * Takes ownership of *managed and fills *as_input with a copy of its dl_tensor,
 * ready to pass to P_run as an input slot. *holder gets a new holder with a
 * count of 1, which is the caller's: drop it with ffg_dlpack_drop. managed's
 * deleter runs once every reference is gone (the caller's and those of outputs
 * aliasing it, see ffg_dlpack_wrap_output).
 *
 * as_input->shape and ->strides still point into the managed tensor: they stay
 * valid as long as the holder lives. strides may be NULL (C-contiguous), as
 * DLPack producers are allowed to send; P_run accepts that.
 *
 * Refusals return an FFG_ERR_* code, leave *holder NULL (where holder is not
 * NULL) and do NOT take ownership: the caller still owns managed and must call
 * its deleter itself.
 *   FFG_ERR_ABI    managed, holder or as_input is NULL; version.major is not 1 (a DLPack
 *                  whose layout may differ from the one above);
 *   FFG_ERR_VALUE  shape is NULL while ndim > 0;
 *   FFG_ERR_TYPE   ndim outside 0..FFG_MAX_NDIM, or dtype.lanes != 1;
 *   FFG_ERR_NOMEM  the holder could not be allocated.
 * The device, dtype and shape are not checked against the graph here; P_run does that.
 * err may be NULL; on success err->code is set to FFG_OK.
 */
int32_t ffg_dlpack_take(FfgDLManagedTensorVersioned *managed, FfgDLPackInput **holder,
                        FfgTensor *as_input, FfgError *err);

/*
 * Gives up one reference to holder. The last one calls the managed tensor's
 * deleter (when it has one) and frees the holder; using the holder after the
 * caller's own drop is a caller error. NULL is harmless.
 */
void ffg_dlpack_drop(FfgDLPackInput *holder);

/*
 * 1 when the producer marked the taken tensor FFG_DLPACK_FLAG_READ_ONLY, else 0
 * (0 for NULL). A compiled graph never writes its inputs, so a read-only tensor
 * is a fine input; outputs aliasing it carry the flag on.
 */
int ffg_dlpack_read_only(const FfgDLPackInput *holder);

/*
 * Wraps output *out of a successful P_run as a new DLPack tensor in *wrapped,
 * which the caller owns and hands on; its deleter must be called exactly once
 * (by whoever it was handed to). Call it once per output, after the run and
 * before the next run on the same state: it copies shape and strides out of the
 * state, so the wrapped tensor outlives both the next run and P_destroy.
 *
 * The wrapped tensor has version FFG_DLPACK_MAJOR.FFG_DLPACK_MINOR, out's data,
 * device, dtype, ndim and byte_offset, a private copy of the shape, and always
 * explicit strides in elements when ndim > 0 (DLPack deprecates NULL strides;
 * a C-contiguous output gets them computed); a 0-d tensor has NULL strides.
 * IS_COPIED is never set. The wrapper itself (struct, copies, context) comes
 * from malloc whatever allocator is given: it is host metadata, even for CUDA data.
 *
 * What the wrapped tensor's deleter does depends on out->alias_of:
 *   FFG_OUT_OWNED        it owns out->base and releases it through a copy of
 *                        *allocator taken now (free() when allocator is NULL).
 *                        After a successful wrap the host must NOT release base
 *                        itself. allocator must be the one the block came from:
 *                        the CPU allocator given to P_create for CPU outputs
 *                        (NULL when none was given); for a CUDA output the one
 *                        given to P_set_allocator for FFG_DEVICE_CUDA -- when
 *                        none was given (the library used cudaFree), pass one
 *                        whose release calls cudaFree. A non-CPU output with a
 *                        NULL allocator is refused, as free() cannot release it.
 *                        A NULL base (nothing was allocated) is not released.
 *   alias_of >= 0        the data lies in input slot alias_of. inputs[alias_of]
 *                        (n_inputs entries) must be the holder of that input
 *                        from ffg_dlpack_take: the wrapped tensor takes a
 *                        reference to it, and its deleter drops it, so the input
 *                        lives as long as the output whatever order the two are
 *                        freed in. The READ_ONLY flag is carried over. An input
 *                        passed to P_run as a plain FfgTensor has no holder: then
 *                        this is refused, and the host must keep that input alive
 *                        itself as long as it uses the output, or copy the output.
 *   FFG_OUT_HOST_BUFFER  the data is the host's own block (out->host_buffer);
 *                        the deleter frees only the wrapper, and the host must
 *                        keep its block alive until the deleter has run.
 *
 * Refusals return an FFG_ERR_* code, set *wrapped to NULL (where wrapped is not
 * NULL), allocate nothing, and leave base the host's to release:
 *   FFG_ERR_ABI    out or wrapped is NULL; an allocator with a NULL release;
 *   FFG_ERR_VALUE  shape is NULL while ndim > 0; alias_of FFG_OUT_NONE (a failed
 *                  run's slot) or another value that is none of the above; an output aliasing a slot with no holder in
 *                  inputs (err->input names the slot); an owned non-CPU output
 *                  with allocator NULL;
 *   FFG_ERR_TYPE   ndim outside 0..FFG_MAX_NDIM;
 *   FFG_ERR_NOMEM  the wrapper could not be allocated.
 * err may be NULL; on success err->code is set to FFG_OK.
 *
 * Threading: wrapping different outputs from different threads is safe; the
 * wrapped tensors' deleters may run on any thread (see FfgDLPackInput).
 */
int32_t ffg_dlpack_wrap_output(const FfgOutput *out, const FfgAllocator *allocator,
                               FfgDLPackInput *const *inputs, int32_t n_inputs,
                               FfgDLManagedTensorVersioned **wrapped, FfgError *err);

#ifdef __cplusplus
}
#endif

#endif /* FFG_DLPACK_H */

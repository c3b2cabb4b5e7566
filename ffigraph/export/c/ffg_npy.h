/*
 * ffg_npy.h -- read and write numpy's .npy files from plain C.
 *
 * For hosts of compiled ffigraph graphs that want to feed a graph arrays saved
 * from Python with np.save, and hand its results back for np.load. The reader
 * is strict: it accepts what numpy writes on a little-endian machine for the
 * dtypes the ABI has (bool, int8..int64, uint8..uint64, float32, float64,
 * complex64, complex128) in C order, and refuses everything else with a
 * message that names the file, says what was found and, where it can, how to
 * save the array differently.
 *
 * Only the C standard library is used; the header compiles as C99, C11 and C++.
 */
#ifndef FFG_NPY_H
#define FFG_NPY_H

#include "ffigraph_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An array read by ffg_npy_read. tensor describes it in the ABI's terms and can
 * be passed to P_run as it is: CPU, C-contiguous (strides NULL, byte_offset 0),
 * tensor.data == data and tensor.shape pointing at shape below -- so a copy of
 * the struct still points at the original's shape.
 */
typedef struct FfgNpyArray {
    FfgTensor tensor;
    int64_t shape[FFG_MAX_NDIM];
    void *data;                 /* malloc'd block of the elements; NULL only when never filled */
} FfgNpyArray;

/*
 * Reads the .npy file at path into *out, which is overwritten (free a previous
 * array first). Returns 0 on success; otherwise an FFG_ERR_* code, with
 * err->message naming the file and what was wrong, and *out holding no memory:
 *   FFG_ERR_TYPE   a dtype the ABI lacks, big-endian data, Fortran order, too many dimensions;
 *   FFG_ERR_VALUE  the file cannot be read, is not a .npy file, or its sizes do not add up;
 *   FFG_ERR_NOMEM  the data does not fit in memory.
 * err may be NULL; then only the return code reports a failure.
 */
int32_t ffg_npy_read(const char *path, FfgNpyArray *out, FfgError *err);

/*
 * Writes the CPU tensor *t to path as a C-order, little-endian .npy file of
 * format version 1.0. The tensor may be any view: strides in elements (zero or
 * negative allowed; NULL means C-contiguous) and byte_offset are honoured.
 * Returns 0 or an FFG_ERR_* code as ffg_npy_read does; err may be NULL.
 * A file that fails while being written is left as far as it got.
 */
int32_t ffg_npy_write(const char *path, const FfgTensor *t, FfgError *err);

/* Frees what ffg_npy_read allocated and sets data NULL; harmless on a zeroed or already freed array. */
void ffg_npy_free(FfgNpyArray *a);

/* The numpy descr string of a dtype ("<f8", "|b1", ...), or NULL when the ABI has none. */
const char *ffg_npy_descr(FfgDtype dtype);

#ifdef __cplusplus
}
#endif

#endif /* FFG_NPY_H */

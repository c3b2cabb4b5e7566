"""A one-argument trampoline to a graph library's ``P_run``, for CPython.

cffi's ABI-mode calls cost CPython about 70 ns per argument: ``P_run``'s six take about 450 ns,
a call with one pointer about 220 ns (measured on this project's machine). A compiled function
passes the same six arguments on every call (its state, its call block's input and output slots,
their counts, its error record), so they are written once into a ``FfgRunArgs`` struct and
``ffg_run_packed(args)`` makes the call. The trampoline is plain C over the ABI header (no Python
API), built once per compile cache (its own folder, ``callshim/``, keyed like a cache entry by
source, compiler and flags, under a file lock) and shared by every function of the process. PyPy's
JIT makes ABI-mode calls cheap (about 25 ns), so there the call stays direct, as it does wherever
the trampoline cannot be built or loaded.

The trampoline also answers the question the caller asks after every call: did each output come
back in the host array it was offered, shaped like that array? The caller says per output which
shape it offered (``PackedRun.expect``); a return of 0 means yes for all of them, so the common
call reads no output slot from Python (each field read through cffi costs about 40 ns).
``LOOK`` (-1) means some output must be read from its slot; a positive value is P_run's error.

And it answers the question asked before every call: is each input the array it was last call?
Python compares identities only (``v is exact[i]``, about 25 ns); the trampoline checks that each
such array object still has the data pointer, rank, extents, strides and dtype its slot describes,
by reading numpy's array struct at offsets found once from known arrays (``_array_layout``; the file
includes neither Python's nor numpy's headers). ``CHANGED`` (-2) means one was changed in place
(``a.shape = ...``, ``a.dtype = ...``, ``a.resize(..., refcheck=False)``): nothing ran, and the
caller describes its inputs afresh. (A thread that reshapes an array while another passes it to a
function races as it would with any other reader of that array.)

The same reading proves, before every run, that an output's spare array (the result of last call,
offered again because nobody holds it any more) is still exactly the block it was: the data
pointer offered, the shape offered, C-contiguous strides, its dtype, owning and writeable. A caller
that reshaped it, changed its dtype or strides or resized its block before dropping it made it
something else: that offer is withdrawn (the library allocates the output) and the caller drops
the spare.
"""
from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
import threading

import numpy as np

from ffigraph.abi import MAX_NDIM, ffi, prebuilt
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import build_library

_log = logging.getLogger("ffigraph.linkers")

SOURCE = r"""/* ffigraph call trampoline: P_run's six arguments read from one struct (plain C, no Python API). */
#include <stdint.h>
#include "ffigraph_abi.h"

/* Where the fields of numpy's array object lie (byte offsets found by the host from a known array:
   this file includes neither Python's nor numpy's headers). */
typedef struct FfgArrayLayout {
    int32_t data, nd, dimensions, strides, descr, flags;
} FfgArrayLayout;

/* An input slot's array object, watched: the slot describes it as it was when described. */
typedef struct FfgWatch {
    const char *object;         /* the array object; NULL: not watched */
    const void *descr;          /* its dtype object then */
} FfgWatch;

/* An output's spare array, offered again: it must still be the block the offer names. */
typedef struct FfgSpare {
    const char *object;         /* the array object; NULL: the offer is a fresh array (or none) */
    const void *descr;          /* its dtype object when it was made */
    int64_t itemsize;           /* bytes per element of that dtype */
} FfgSpare;

#define FFG_NPY_OWNDATA 0x0004
#define FFG_NPY_WRITEABLE 0x0400

typedef struct FfgRunArgs {
    ffg_run_fn *run;            /* the library's P_run */
    void *state;
    const FfgTensor *inputs;
    FfgOutput *outputs;
    FfgError *err;
    int32_t n_inputs;
    int32_t n_outputs;
    const int32_t *offer_ndim;  /* per output: rank of the host array offered to it, -1 for none */
    const int64_t *offer_shape; /* per output: FFG_MAX_NDIM extents, the first offer_ndim[k] used */
    const FfgWatch *watch;      /* per input */
    const FfgSpare *spare;      /* per output */
    FfgArrayLayout layout;
} FfgRunArgs;

/* Whether the watched array object still has the data, rank, extents, strides and dtype its slot
   describes (the host holds a reference to it, so the object is alive). */
static int ffg_unchanged(const FfgArrayLayout *at, const FfgWatch *w, const FfgTensor *t)
{
    const char *obj = w->object;
    const intptr_t *dims, *strides;
    int64_t itemsize = t->dtype.bits / 8;
    int32_t d;
    if (*(char *const *)(obj + at->data) != (const char *)t->data + t->byte_offset
            || *(const int *)(obj + at->nd) != t->ndim
            || *(const void *const *)(obj + at->descr) != w->descr)
        return 0;
    dims = *(const intptr_t *const *)(obj + at->dimensions);
    strides = *(const intptr_t *const *)(obj + at->strides);
    for (d = 0; d < t->ndim; d++)
        if (dims[d] != t->shape[d] || strides[d] != t->strides[d] * itemsize)
            return 0;
    return 1;
}

/* Whether output k's spare array is still, in every respect the library relies on, the block its
   slot offers: that data pointer, the offered rank and extents, C-contiguous strides, the dtype it was
   made with, and its own writeable memory (a resize frees the old block: the pointer differs then). */
static int ffg_spare_intact(const FfgRunArgs *args, int32_t k)
{
    const FfgArrayLayout *at = &args->layout;
    const FfgSpare *spare = &args->spare[k];
    const char *obj = spare->object;
    const int64_t *want = args->offer_shape + (int64_t)k * FFG_MAX_NDIM;
    const intptr_t *dims, *strides;
    int32_t nd = args->offer_ndim[k], d;
    int64_t step = spare->itemsize;
    int flags = *(const int *)(obj + at->flags);
    if (*(char *const *)(obj + at->data) != (const char *)args->outputs[k].host_buffer
            || *(const int *)(obj + at->nd) != nd || *(const void *const *)(obj + at->descr) != spare->descr
            || (flags & (FFG_NPY_OWNDATA | FFG_NPY_WRITEABLE)) != (FFG_NPY_OWNDATA | FFG_NPY_WRITEABLE))
        return 0;
    dims = *(const intptr_t *const *)(obj + at->dimensions);
    strides = *(const intptr_t *const *)(obj + at->strides);
    for (d = nd - 1; d >= 0; d--) {
        if (dims[d] != want[d] || (dims[d] > 1 && strides[d] != step))
            return 0;
        step *= want[d];
    }
    return 1;
}

/* P_run's code when it fails (> 0); -2 without running when a watched input array changed in place
   since its slot was written; otherwise 0 when every output was written into the host array offered
   to it with that array's shape, or -1 when the caller must read some output's slot (an offer of a
   spare array that is no longer intact is withdrawn first: that output's slot is read). */
__attribute__((visibility("default")))
int32_t ffg_run_packed(const FfgRunArgs *args)
{
    int32_t code, k, d;
    for (k = 0; k < args->n_inputs; k++)
        if (args->watch[k].object != NULL && !ffg_unchanged(&args->layout, &args->watch[k], &args->inputs[k]))
            return -2;
    for (k = 0; k < args->n_outputs; k++)
        if (args->spare[k].object != NULL && args->outputs[k].host_buffer != NULL && !ffg_spare_intact(args, k)) {
            args->outputs[k].host_buffer = NULL;
            args->outputs[k].host_capacity = 0;
        }
    code = args->run(args->state, args->inputs, args->n_inputs, args->outputs, args->n_outputs, args->err);
    if (code != FFG_OK)
        return code;
    for (k = 0; k < args->n_outputs; k++) {
        const FfgOutput *out = &args->outputs[k];
        const int64_t *want = args->offer_shape + (int64_t)k * FFG_MAX_NDIM;
        if (out->alias_of != FFG_OUT_HOST_BUFFER || out->tensor.ndim != args->offer_ndim[k])
            return -1;
        for (d = 0; d < out->tensor.ndim; d++)
            if (out->tensor.shape[d] != want[d])
                return -1;
    }
    return 0;
}
"""

_CDEF = """
typedef struct FfgArrayLayout { int32_t data, nd, dimensions, strides, descr, flags; } FfgArrayLayout;
typedef struct FfgWatch { void *object; void *descr; } FfgWatch;
typedef struct FfgSpare { void *object; void *descr; int64_t itemsize; } FfgSpare;
typedef struct FfgRunArgs {
    void *run; void *state; void *inputs; void *outputs; void *err; int32_t n_inputs; int32_t n_outputs;
    int32_t *offer_ndim; int64_t *offer_shape; FfgWatch *watch; FfgSpare *spare; FfgArrayLayout layout;
} FfgRunArgs;
int32_t ffg_run_packed(const FfgRunArgs *args);
"""

LOOK = -1   # ffg_run_packed: success, but some output is not the offered array as offered
CHANGED = -2   # ffg_run_packed: not run, a watched input array changed in place
NAME = "ffigraph_callshim"   # the compiler sees ffigraph_callshim.c
FFI_MODULE = "ffigraph.linkers.c._callshim_ffi"   # the prebuilt FFI of _CDEF (tools/gen_ffi.py)
_shim_ffi = prebuilt.load(_CDEF, FFI_MODULE)
_loaded = []          # [the library] once built and opened, [None] where it is not used
_layouts = []         # [numpy's array layout (offsets), or None] once read
_NULL = _shim_ffi.NULL
_lock = threading.Lock()


def _library():
    """The trampoline library, or None (PyPy, or it could not be built: the direct call is used)."""
    if _loaded:
        return _loaded[0]
    with _lock:
        if not _loaded:
            lib = None
            if platform.python_implementation() == "CPython":
                try:
                    lib = _shim_ffi.dlopen(_built())
                except Exception as err:   # noqa: BLE001 - a slower call, said once, beats no call
                    _log.warning("the call trampoline could not be built or loaded (%s: %s); calls use "
                                 "cffi's direct six-argument call", type(err).__name__, err)
            _loaded.append(lib)
    return _loaded[0]


def _built():
    """The trampoline's path in the cache (built there first if needed; a private build when the cache
    cannot be used). Its SHA-256 is recorded beside it (``<key>.so.sha256``) and checked before it is
    loaded: a library that does not match is built again and replaced."""
    try:
        folder = cache.private_subdir("callshim")
    except (OSError, cache.CacheSecurityError):
        return build_library(SOURCE, NAME, {})
    path = os.path.join(folder, cache.cache_key(SOURCE, {}) + ".so")
    try:
        return _cached(folder, path)
    except cache.CacheSecurityError as why:   # someone else's file, or a link: not loaded, built privately
        _log.warning("the call trampoline in the cache is not loaded (%s); building a private one", why)
        return build_library(SOURCE, NAME, {})


def _cached(folder, path):
    if sound_library(path):
        return path
    with cache.lock_for(folder, os.path.basename(path)):
        if not sound_library(path):
            work = tempfile.mkdtemp(prefix="build-", dir=folder)
            try:
                built = build_library(SOURCE, NAME, {}, directory=work)
                cache.write_private_file(path + ".sha256", cache.sha256_file(built).encode())
                os.rename(built, path)   # atomic: a reader finds no library or a whole one
                _log.debug("built the call trampoline %s", path)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    if not sound_library(path):
        raise cache.CacheSecurityError("the call trampoline %s does not match the hash recorded beside it "
                                       "right after it was built" % path)
    return path


def sound_library(path):
    """Whether the trampoline library ``path`` and its recorded hash are both private (not links,
    the user's alone) and agree; CacheSecurityError when one of them is not private."""
    try:
        cache.check_private(path)
        recorded = cache.read_private_file(path + ".sha256")
    except FileNotFoundError:
        return False
    return recorded is not None and recorded.decode("ascii", "replace") == cache.sha256_file(path)


def _address(cdata):
    return _shim_ffi.cast("void *", int(ffi.cast("uintptr_t", cdata)))


def _array_layout():
    """Byte offsets of ``data``, ``nd``, ``dimensions``, ``strides`` and ``descr`` in numpy's array
    object, found by reading two known arrays of this process (numpy's public struct puts them in
    that order after the object header, whose size varies with CPython's build), or None when what
    is read does not match exactly (then inputs are checked from Python, as on PyPy)."""
    def word(address, offset, kind="intptr_t"):
        return _shim_ffi.cast(kind + " *", address + offset)[0]

    def matches(arr, data):
        address = id(arr)
        try:
            if word(address, data) != arr.__array_interface__["data"][0] or word(address, data + 8, "int") != arr.ndim:
                return False
            dims, strides = word(address, data + 16), word(address, data + 24)
            return (word(address, data + 40) == id(arr.dtype) and word(address, data + 48, "int") == arr.flags.num
                    and all(word(dims, 8 * d) == n for d, n in enumerate(arr.shape))
                    and all(word(strides, 8 * d) == n for d, n in enumerate(arr.strides)))
        except Exception:   # noqa: BLE001 - any surprise means: do not read array objects from C
            return False

    if _shim_ffi.sizeof("intptr_t") != 8 or _shim_ffi.sizeof("int") != 4:
        return None
    readonly = np.zeros(7, np.int32)
    readonly.flags.writeable = False
    probes = [np.empty((3, 5), np.float64)[::-1, ::2], np.zeros(7, np.int32), readonly]
    for data in range(16, 64, 8):   # the header is 16 bytes in a release build, more in others
        if all(matches(arr, data) for arr in probes):
            return dict(data=data, nd=data + 8, dimensions=data + 16, strides=data + 24, descr=data + 40,
                        flags=data + 48)
    return None


class PackedRun:
    """One call block's packed call: ``call(args)`` runs it; ``expect(k, shape)`` records the shape
    of the host array offered to output ``k`` from now on (None: no array is offered);
    ``watch(i, arr)`` makes the trampoline check before each run that input ``i``'s array object
    still is as its slot describes it (None: stop). ``watching`` says whether it can (numpy's
    layout was read): then the caller may skip re-reading an input that is the same object, and
    may offer an output its spare array again, named by ``spare(k, arr)``, which the trampoline
    checks is still intact before the run."""

    __slots__ = ("call", "args", "watching", "_keep", "_ndim", "_shape", "_watch", "_spare")
    LOOK = LOOK
    CHANGED = CHANGED

    def __init__(self, call, args, keep, ndim, shape, watch, spare, watching):
        self.call, self.args, self._keep, self._ndim, self._shape = call, args, keep, ndim, shape
        self._watch, self._spare, self.watching = watch, spare, watching

    def renew(self, run, state):
        """Run ``state`` (with ``run``, its library's P_run) from now on."""
        self.args.run, self.args.state = _address(run), _address(state)

    def spare(self, k, arr):
        """Output ``k`` may be offered ``arr`` (a C-contiguous array made for it, which its caller
        holds for as long as it is named here), checked intact before each run; None: no spare."""
        s = self._spare[k]
        if arr is None or not self.watching:
            s.object = _NULL
            return
        s.descr = _shim_ffi.cast("void *", id(arr.dtype))
        s.itemsize = arr.itemsize
        s.object = _shim_ffi.cast("void *", id(arr))

    def watch(self, i, arr):
        """Watch input ``i``'s array ``arr`` (its caller holds a reference for as long as it is
        watched), or stop watching (None)."""
        w = self._watch[i]
        if arr is None or not self.watching:
            w.object = _NULL
            return
        w.descr = _shim_ffi.cast("void *", id(arr.dtype))
        w.object = _shim_ffi.cast("void *", id(arr))

    def expect(self, k, shape):
        if shape is None or len(shape) > MAX_NDIM:
            self._ndim[k] = -1
            return
        base = k * MAX_NDIM
        for d, n in enumerate(shape):
            self._shape[base + d] = n
        self._ndim[k] = len(shape)


def packed_run(run, state, inputs, n_inputs, outputs, n_outputs, err):
    """A ``PackedRun`` whose ``call(args)`` is ``run(state, inputs, n_inputs, outputs, n_outputs, err)``
    followed by the offered-outputs check, or None when the trampoline is not used here. The caller
    keeps every argument alive for as long as it calls (a call block and its compiled graph do)."""
    lib = _library()
    if lib is None:
        return None
    args = _shim_ffi.new("FfgRunArgs *")
    args.run, args.state = _address(run), _address(state)
    args.inputs, args.outputs, args.err = _address(inputs), _address(outputs), _address(err)
    args.n_inputs, args.n_outputs = n_inputs, n_outputs
    ndim = _shim_ffi.new("int32_t[]", [-1] * max(n_outputs, 1))
    shape = _shim_ffi.new("int64_t[]", max(n_outputs, 1) * MAX_NDIM)
    watch = _shim_ffi.new("FfgWatch[]", max(n_inputs, 1))   # zeroed: nothing watched
    spare = _shim_ffi.new("FfgSpare[]", max(n_outputs, 1))   # zeroed: no spare offered
    args.offer_ndim, args.offer_shape, args.watch, args.spare = ndim, shape, watch, spare
    layout = _layout()
    if layout is not None:
        for field, offset in layout.items():
            setattr(args.layout, field, offset)
    return PackedRun(lib.ffg_run_packed, args, (ndim, shape, watch, spare), ndim, shape, watch, spare,
                     layout is not None)


def _layout():
    if not _layouts:
        _layouts.append(_array_layout())
    return _layouts[0]


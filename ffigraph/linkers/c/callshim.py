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
"""
from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
import threading

import cffi
from filelock import FileLock

from ffigraph.abi import ffi
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import build_library

_log = logging.getLogger("ffigraph.linkers")

SOURCE = r"""/* ffigraph call trampoline: P_run's six arguments read from one struct (plain C, no Python). */
#include <stdint.h>
#include "ffigraph_abi.h"

typedef struct FfgRunArgs {
    ffg_run_fn *run;            /* the library's P_run */
    void *state;
    const FfgTensor *inputs;
    FfgOutput *outputs;
    FfgError *err;
    int32_t n_inputs;
    int32_t n_outputs;
} FfgRunArgs;

__attribute__((visibility("default")))
int32_t ffg_run_packed(const FfgRunArgs *args)
{
    return args->run(args->state, args->inputs, args->n_inputs, args->outputs, args->n_outputs, args->err);
}
"""

_CDEF = """
typedef struct FfgRunArgs {
    void *run; void *state; void *inputs; void *outputs; void *err; int32_t n_inputs; int32_t n_outputs;
} FfgRunArgs;
int32_t ffg_run_packed(const FfgRunArgs *args);
"""

NAME = "ffigraph_callshim"   # the compiler sees ffigraph_callshim.c
_shim_ffi = cffi.FFI()
_shim_ffi.cdef(_CDEF)
_loaded = []          # [the library] once built and opened, [None] where it is not used
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
    cannot be used)."""
    try:
        folder = cache.private_subdir("callshim")
    except OSError:
        return build_library(SOURCE, NAME, {})
    path = os.path.join(folder, cache.cache_key(SOURCE, {}) + ".so")
    if not os.path.exists(path):
        with FileLock(path + ".lock"):
            if not os.path.exists(path):
                work = tempfile.mkdtemp(prefix="build-", dir=folder)
                try:
                    built = build_library(SOURCE, NAME, {}, directory=work)
                    os.rename(built, path)   # atomic: a reader finds no library or a whole one
                    _log.debug("built the call trampoline %s", path)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    cache.check_private(path)
    return path


def _address(cdata):
    return _shim_ffi.cast("void *", int(ffi.cast("uintptr_t", cdata)))


def packed_run(run, state, inputs, n_inputs, outputs, n_outputs, err):
    """``(call, args)`` such that ``call(args)`` is ``run(state, inputs, n_inputs, outputs, n_outputs,
    err)``, or None when the trampoline is not used here. The caller keeps every argument alive for as
    long as it calls (a call block and its compiled graph do)."""
    lib = _library()
    if lib is None:
        return None
    args = _shim_ffi.new("FfgRunArgs *")
    args.run, args.state = _address(run), _address(state)
    args.inputs, args.outputs, args.err = _address(inputs), _address(outputs), _address(err)
    args.n_inputs, args.n_outputs = n_inputs, n_outputs
    return lib.ffg_run_packed, args

"""The ABI shared by every compiled graph: the C header, cffi's view of it, dtype codes.

``HEADER_PATH`` is the single source of truth; ``ffi`` is built from the part
of it between the cdef markers, so Python and C cannot disagree on a struct.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ffigraph.abi import prebuilt

HEADER_NAME = "ffigraph_abi.h"
HEADER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), HEADER_NAME)

_CDEF_RE = re.compile(r"/\* ffigraph-cdef-begin \*/(.*?)/\* ffigraph-cdef-end \*/", re.S)


def header_text() -> str:
    with open(HEADER_PATH) as fh:
        return fh.read()


def cdef_text() -> str:
    """The declarations cffi needs, cut from the header (comments removed)."""
    match = _CDEF_RE.search(header_text())
    if match is None:
        raise RuntimeError("%s has no cdef markers" % HEADER_PATH)
    body = re.sub(r"/\*.*?\*/", "", match.group(1), flags=re.S)
    return body


# From the C library: free (owned output blocks), and the dynamic loader's calls, so that a graph
# library's entry points are looked up by name at run time with no per-library cdef (cffi keeps
# every cdef for the life of the process) and the library can be closed once nothing uses it.
LIBC_CDEF = """
void free(void *ptr);
void *dlopen(const char *filename, int flags);
void *dlsym(void *handle, const char *symbol);
int dlclose(void *handle);
char *dlerror(void);
"""
FFI_MODULE = "ffigraph.abi._abi_ffi"   # the prebuilt FFI of these declarations (tools/gen_ffi.py)


def ffi_cdef() -> str:
    """Every declaration of ``ffi``: the header's, then the C library's."""
    return cdef_text() + LIBC_CDEF


ffi = prebuilt.load(ffi_cdef(), FFI_MODULE)
_libc = ffi.dlopen(None)
c_free = _libc.free


def _const(name):
    # In ABI mode the header's #define constants are attributes of any lib of this ffi.
    return getattr(_libc, name)


ABI_VERSION = _const("FFG_ABI_VERSION")
ABI_MAJOR = _const("FFG_ABI_MAJOR")
LIBRARY_API_SYMBOL = "ffg_library_api"   # the one fixed-name symbol of every graph library
MAX_NDIM = _const("FFG_MAX_NDIM")
DEVICE_CPU = _const("FFG_DEVICE_CPU")
DEVICE_CUDA = _const("FFG_DEVICE_CUDA")

ENTRY_POINTS = ("library_api", "version", "describe", "create", "run", "destroy", "set_allocator")
OPTIONAL_ENTRY_POINTS = ("profile",)   # only in libraries generated with profiling on


def expected_layout():
    """The struct sizes and offsets cffi sees, in the order of FFG_LAYOUT_ENTRIES."""
    return [
        ffi.sizeof("FfgTensor"), ffi.offsetof("FfgTensor", "data"), ffi.offsetof("FfgTensor", "device"),
        ffi.offsetof("FfgTensor", "ndim"), ffi.offsetof("FfgTensor", "dtype"),
        ffi.offsetof("FfgTensor", "shape"), ffi.offsetof("FfgTensor", "strides"),
        ffi.offsetof("FfgTensor", "byte_offset"), ffi.sizeof("FfgOutput"), ffi.offsetof("FfgOutput", "base"),
        ffi.offsetof("FfgOutput", "host_buffer"), ffi.offsetof("FfgOutput", "host_capacity"),
        ffi.offsetof("FfgOutput", "alias_of"), ffi.sizeof("FfgError"), ffi.offsetof("FfgError", "message"),
        ffi.sizeof("FfgAllocator"), ffi.sizeof("FfgSlot"), ffi.offsetof("FfgSlot", "updates"),
        ffi.offsetof("FfgSlot", "static_shape"), ffi.sizeof("FfgNode"), ffi.sizeof("FfgDescription"),
        ffi.offsetof("FfgDescription", "nodes"), ffi.sizeof("FfgCreateOptions"), ffi.sizeof("FfgLibraryApi"),
        ffi.sizeof("FfgProfile"),
    ]


# ------------------------------------------------------------------ dtypes

_KIND_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_CODE_KIND = {v: k for k, v in _KIND_CODE.items()}


def dtype_code(dtype):
    """(code, bits) of a numpy dtype, as DLPack spells it."""
    dtype = np.dtype(dtype)
    return _KIND_CODE[dtype.kind], dtype.itemsize * 8


# The C element type of each dtype, as generated code and the ABI header spell it.
C_ELEMENT_TYPES = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double", "complex64": "float _Complex", "complex128": "double _Complex",
}


def c_element_type(dtype):
    """The C type of one element of ``dtype`` (``float64`` -> ``double``)."""
    return C_ELEMENT_TYPES[np.dtype(dtype).name]


def dtype_from_code(code, bits):
    kind = _CODE_KIND.get(code)
    if kind is None:
        raise TypeError("unknown dtype code %d" % code)
    if kind == "b":
        return np.dtype(bool)
    return np.dtype("%s%d" % (kind, bits // 8))


class CudaError(RuntimeError):
    """A CUDA runtime call failed inside a compiled graph; ``cuda_code`` is its cudaError_t."""

    cuda_code = None


def error_codes():
    """{code: (name, Python exception class)} for the FFG_ERR_* codes."""
    return {
        _const("FFG_ERR_TYPE"): ("type", TypeError),
        _const("FFG_ERR_VALUE"): ("value", ValueError),
        _const("FFG_ERR_INDEX"): ("index", IndexError),
        _const("FFG_ERR_NOMEM"): ("memory", MemoryError),
        _const("FFG_ERR_ABI"): ("abi", RuntimeError),
        _const("FFG_ERR_RUNTIME"): ("runtime", RuntimeError),
        _const("FFG_ERR_CUDA"): ("cuda", CudaError),
        _const("FFG_ERR_LINALG"): ("linalg", np.linalg.LinAlgError),
    }

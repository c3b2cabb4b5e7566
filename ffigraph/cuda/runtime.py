"""The CUDA runtime seen from Python: libcudart loaded with cffi (ABI mode, no compiling).

Used for device arrays (allocate, copy, free) and to ask whether a GPU is
present. Every failing call raises ``CudaError`` carrying CUDA's own error
number, name and string. Loading never needs a driver: libcudart loads
anywhere; its first call then says "insufficient driver" (35) or "no device"
(100), which ``gpu_status()`` reports as the reason GPU work cannot run.
"""
from __future__ import annotations

import os
import threading

import cffi

from ffigraph.abi import CudaError, ffi
from ffigraph.cuda import toolchain

MEMCPY_HOST_TO_DEVICE = 1
MEMCPY_DEVICE_TO_HOST = 2
MEMCPY_DEVICE_TO_DEVICE = 3
_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76

_CDEF = """
int cudaGetDeviceCount(int *count);
int cudaGetDevice(int *device);
int cudaDeviceGetAttribute(int *value, int attr, int device);
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);
int cudaMemcpy(void *dst, const void *src, size_t count, int kind);
int cudaDeviceSynchronize(void);
int cudaRuntimeGetVersion(int *version);
int cudaDriverGetVersion(int *version);
int cudaGetLastError(void);
const char *cudaGetErrorName(int error);
const char *cudaGetErrorString(int error);
"""

_lock = threading.Lock()
_state = {}
# cudart's declarations in an FFI of their own: the ABI's ``ffi`` is prebuilt (ffigraph.abi.prebuilt)
# and takes no further cdef. Only primitive types cross between the two, which cffi shares.
_cudart_ffi = cffi.FFI()


def cudart():
    """The loaded libcudart (raises CudaToolkitError when the toolkit is not found)."""
    with _lock:
        if "lib" not in _state:
            folder = toolchain.runtime_lib_dir()
            _cudart_ffi.cdef(_CDEF)
            _state["lib"] = _cudart_ffi.dlopen(os.path.join(folder, "libcudart.so"))
        return _state["lib"]


def error_of(status, what):
    """A CudaError for a failed call (CUDA's number, name and string in the message)."""
    lib = cudart()
    lib.cudaGetLastError()   # clear a non-sticky error
    name = ffi.string(lib.cudaGetErrorName(status)).decode()
    text = ffi.string(lib.cudaGetErrorString(status)).decode()
    err = CudaError("%s: CUDA error %d (%s): %s" % (what, status, name, text))
    err.cuda_code = int(status)
    return err


def check(status, what):
    if status != 0:
        raise error_of(status, what)


def device_count():
    n = ffi.new("int *")
    check(cudart().cudaGetDeviceCount(n), "cudaGetDeviceCount")
    return n[0]


def gpu_status():
    """(True, description) when a GPU can run work, else (False, the reason, in CUDA's words)."""
    with _lock:
        if "status" in _state:
            return _state["status"]
    try:
        n = device_count()
        status = (n > 0, "%d CUDA device(s)" % n if n else "no CUDA device (cudaGetDeviceCount gave 0)")
    except CudaError as err:
        status = (False, str(err))
    except (toolchain.CudaToolkitError, OSError) as err:
        status = (False, "the CUDA runtime library could not be loaded: %s" % err)
    with _lock:
        _state["status"] = status
    return status


def device_arch():
    """The compute capability of the current device as an int (90 for sm_90), or None without a GPU."""
    ok, _ = gpu_status()
    if not ok:
        return None
    lib = cudart()
    dev, major, minor = ffi.new("int *"), ffi.new("int *"), ffi.new("int *")
    check(lib.cudaGetDevice(dev), "cudaGetDevice")
    check(lib.cudaDeviceGetAttribute(major, _ATTR_CC_MAJOR, dev[0]), "cudaDeviceGetAttribute")
    check(lib.cudaDeviceGetAttribute(minor, _ATTR_CC_MINOR, dev[0]), "cudaDeviceGetAttribute")
    return major[0] * 10 + minor[0]


def malloc(nbytes):
    """A device block of nbytes (at least 1) as a cffi pointer freed with cudaFree when collected."""
    ptr = ffi.new("void **")
    check(cudart().cudaMalloc(ptr, max(int(nbytes), 1)), "cudaMalloc(%d bytes)" % nbytes)
    return ffi.gc(ptr[0], free_block)


def free_block(ptr):
    cudart().cudaFree(ptr)


def memcpy(dst, src, nbytes, kind, what="cudaMemcpy"):
    if nbytes:
        check(cudart().cudaMemcpy(dst, src, nbytes, kind), what)

"""``DeviceArray``: ffigraph's own small device array, used when pycuda is not installed.

It exposes ``__cuda_array_interface__`` (v3) and, on CPython, ``__dlpack__``,
so CuPy, PyTorch or Numba can take it without a copy; ``from_host`` and
``get`` copy to and from numpy. Results of GPU graphs come back as pycuda
``GPUArray`` when pycuda is importable (``wrap_output``), else as DeviceArray.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ffigraph.abi import dtype_code, ffi
from ffigraph.cuda import runtime
from ffigraph.cuda.marshal import (DLPACK_CUDA, DLDataType, DLDevice, DLManagedTensor, DLTensor, capsule_api,
                                   device_view)
from ffigraph.linkers.c.marshal import DeviceBlock, DeviceView


class DeviceArray:
    """An n-d array in CUDA memory: address, shape, strides (in elements), dtype; ``owner`` keeps it alive."""

    def __init__(self, address, shape, dtype, strides=None, owner=None, device_id=0):
        self.view = DeviceView(address, shape, strides, dtype, device_id, owner)

    # ---- numpy-like attributes

    @property
    def shape(self):
        return self.view.shape

    @property
    def dtype(self):
        return self.view.dtype

    @property
    def ndim(self):
        return len(self.view.shape)

    @property
    def size(self):
        return int(np.prod(self.view.shape, dtype=np.int64))

    @property
    def strides(self):
        """Strides in bytes, as numpy gives them."""
        return tuple(s * self.dtype.itemsize for s in self.view.element_strides())

    @property
    def ptr(self):
        return self.view.address

    def __repr__(self):
        return "DeviceArray(shape=%s, dtype=%s, strides=%s, ptr=0x%x)" % (
            self.shape, self.dtype, self.strides, self.ptr)

    # ---- exchange with other GPU libraries

    @property
    def __cuda_array_interface__(self):
        v = self.view
        return {"shape": v.shape, "typestr": v.dtype.str, "data": (v.address, False), "version": 3,
                "strides": None if v.strides is None else self.strides,
                "stream": 1}   # ffigraph's kernels run on the legacy default stream

    def __dlpack_device__(self):
        return (DLPACK_CUDA, self.view.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _make_capsule(self)

    # ---- copies

    @classmethod
    def from_host(cls, array):
        """A C-contiguous device copy of a numpy array (or anything np.asarray takes)."""
        host = np.ascontiguousarray(array)
        if host.dtype.kind not in "biuf" or host.dtype.byteorder == ">":
            raise TypeError("DeviceArray.from_host: dtype %s cannot go to the GPU" % host.dtype)
        block = runtime.malloc(host.nbytes)
        runtime.memcpy(block, ffi.from_buffer(host), host.nbytes, runtime.MEMCPY_HOST_TO_DEVICE,
                       "cudaMemcpy host to device (%d bytes)" % host.nbytes)
        return cls(int(ffi.cast("uintptr_t", block)), host.shape, host.dtype, None, block)

    def get(self):
        """A numpy copy (any strides: the covering span is copied, then viewed and compacted)."""
        v = self.view
        out_dtype = v.dtype
        if self.size == 0:
            return np.empty(v.shape, out_dtype)
        strides = v.element_strides()
        low = sum((n - 1) * s for n, s in zip(v.shape, strides) if s < 0)
        high = sum((n - 1) * s for n, s in zip(v.shape, strides) if s > 0)
        span = np.empty(high - low + 1, out_dtype)
        start = v.address + low * out_dtype.itemsize
        runtime.memcpy(ffi.from_buffer(span), ffi.cast("void *", start), span.nbytes,
                       runtime.MEMCPY_DEVICE_TO_HOST, "cudaMemcpy device to host (%d bytes)" % span.nbytes)
        base = span[-low:] if low else span
        return np.lib.stride_tricks.as_strided(base, v.shape, [s * out_dtype.itemsize for s in strides]).copy()

    to_host = get

    def copy(self):
        """A C-contiguous device copy (one device-to-device copy when already contiguous)."""
        v = self.view
        if v.strides is not None and any(n > 1 and s != c for n, s, c in
                                         zip(v.shape, v.strides, _c_strides(v.shape))):
            return DeviceArray.from_host(self.get())
        nbytes = self.size * v.dtype.itemsize
        block = runtime.malloc(nbytes)
        runtime.memcpy(block, ffi.cast("void *", v.address), nbytes, runtime.MEMCPY_DEVICE_TO_DEVICE,
                       "cudaMemcpy device to device (%d bytes)" % nbytes)
        return DeviceArray(int(ffi.cast("uintptr_t", block)), v.shape, v.dtype, None, block, v.device_id)


def _c_strides(shape):
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


def to_host(value):
    """numpy copy of any device array (DeviceArray, GPUArray, CAI object); host values pass through."""
    if isinstance(value, np.ndarray):
        return value
    getter = getattr(value, "get", None)
    if callable(getter):
        return getter()
    view = device_view(value)
    return DeviceArray(view.address, view.shape, view.dtype, view.strides, value, view.device_id).get()


# ------------------------------------------------------------------ results of compiled graphs


def wrap_output(block):
    """A pycuda GPUArray when pycuda is installed, else a DeviceArray; either keeps the block alive."""
    if not isinstance(block, DeviceBlock):
        return block
    gpuarray = _pycuda_gpuarray()
    if gpuarray is not None:
        byte_strides = tuple(s * block.dtype.itemsize for s in block.strides)
        return gpuarray.GPUArray(block.shape, block.dtype, gpudata=_PycudaHolder(block), strides=byte_strides)
    return DeviceArray(block.address, block.shape, block.dtype, block.strides, block.keep, block.device_id)


class _PycudaHolder:
    """What pycuda accepts as ``gpudata``: int() gives the address; holding it keeps the block."""

    def __init__(self, block):
        self.block = block

    def __int__(self):
        return self.block.address

    __index__ = __int__


def _pycuda_gpuarray():
    try:
        from ffigraph.cuda.pycuda_ops import use_primary_context

        use_primary_context()   # optional extra ffigraph[cuda]; the runtime's context, as our libraries
        import pycuda.gpuarray as gpuarray
    except Exception:   # not installed, or no driver to initialise it
        return None
    return gpuarray


# ------------------------------------------------------------------ DLPack export (CPython)

_exported = {}   # id of the DLManagedTensor -> (array, the ctypes objects it points into)


@ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
def _deleter(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


# The destructor gets the dying capsule as a raw pointer: making a Python object of it would
# touch a refcount that already reached zero.
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _raw_capsule_calls():
    api = ctypes.pythonapi
    is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", api))
    pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", api))
    return is_valid, pointer


def _capsule_destructor(capsule):
    # an unconsumed capsule frees its tensor; a consumer renames it "used_dltensor" and calls the deleter
    is_valid, pointer = _raw_capsule_calls()
    if is_valid(capsule, b"dltensor"):
        _exported.pop(pointer(capsule, b"dltensor"), None)


_capsule_destructor_c = _CapsuleDestructor(_capsule_destructor) if hasattr(ctypes, "pythonapi") else None


def _make_capsule(array):
    api = capsule_api()
    if api is None:
        raise BufferError("DeviceArray.__dlpack__ needs the CPython C API (ctypes.pythonapi); on this "
                          "interpreter use __cuda_array_interface__")
    v = array.view
    ndim = len(v.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*v.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*v.element_strides())
    code, bits = dtype_code(v.dtype)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(v.address, DLDevice(DLPACK_CUDA, v.device_id), ndim, DLDataType(code, bits, 1),
                                 shape, strides, 0)
    managed.manager_ctx = None
    managed.deleter = _deleter
    _exported[ctypes.addressof(managed)] = (array, managed, shape, strides)
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
    return api.PyCapsule_New(ctypes.addressof(managed), b"dltensor", _capsule_destructor_c)

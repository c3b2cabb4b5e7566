"""Device arrays at the boundary: any ``__cuda_array_interface__`` (v2, v3) or CUDA ``__dlpack__``
object becomes a ``DeviceView`` (pointer, shape, strides in elements, dtype), with no copy.

Strides are kept as they are (negative and zero included); byte strides that
are not whole elements are refused, since the ABI counts in elements.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ffigraph.abi import dtype_from_code
from ffigraph.linkers.c.marshal import DeviceView

DLPACK_CUDA = 2
DLPACK_CPU = 1


def device_view(value, what="a GPU input"):
    """The DeviceView of ``value``, or TypeError/ValueError naming what is wrong with it."""
    if isinstance(value, DeviceView):
        return value
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_cuda_array_interface(value, interface, what)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        return _from_dlpack(value, what)
    if isinstance(value, np.ndarray) or np.isscalar(value) or isinstance(value, (list, tuple)):
        raise TypeError("%s takes a device array, got a host value (%s): copy it to the GPU with "
                        "ffigraph.cuda.DeviceArray.from_host(x), or use gpu_from_host(x) in the graph"
                        % (what, type(value).__name__))
    raise TypeError("%s takes an object with __cuda_array_interface__ or a CUDA __dlpack__, got %s"
                    % (what, type(value).__name__))


def _from_cuda_array_interface(value, cai, what):
    version = cai.get("version")
    if version not in (2, 3):
        raise TypeError("%s: __cuda_array_interface__ version %r is not supported (2 or 3)" % (what, version))
    if cai.get("mask") is not None:
        raise TypeError("%s: masked device arrays are not supported" % what)
    try:
        dtype = np.dtype(cai["typestr"])
        address, readonly = cai["data"]
        shape = tuple(cai["shape"])
    except (KeyError, TypeError, ValueError) as err:
        raise TypeError("%s: malformed __cuda_array_interface__ (%s)" % (what, err)) from None
    if dtype.byteorder == ">" or dtype.kind not in "biuf":
        raise TypeError("%s: dtype %s cannot cross the ABI on the GPU" % (what, dtype.str))
    strides = cai.get("strides")
    if strides is not None:
        strides = _element_strides(strides, dtype, what)
    if address == 0 and int(np.prod(shape)) > 0:
        raise ValueError("%s: __cuda_array_interface__ gives a NULL data pointer for shape %s" % (what, shape))
    return DeviceView(address or 0, shape, strides, dtype, 0, value, readonly)


def _element_strides(byte_strides, dtype, what):
    out = []
    for axis, s in enumerate(byte_strides):
        if s % dtype.itemsize:
            raise ValueError("%s: stride %d bytes on axis %d is not a whole number of %s elements"
                             % (what, s, axis, dtype))
        out.append(s // dtype.itemsize)
    return tuple(out)


# ------------------------------------------------------------------ DLPack (CPython only)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


def capsule_api():
    """ctypes' view of the C API calls a DLPack capsule needs; None where there is none (PyPy)."""
    api = getattr(ctypes, "pythonapi", None)
    if api is None:
        return None
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return api


def _from_dlpack(value, what):
    device_type, device_id = value.__dlpack_device__()
    if int(device_type) != DLPACK_CUDA:
        raise TypeError("%s: the DLPack array is on device type %d, not CUDA (%d): copy it to the GPU with "
                        "DeviceArray.from_host or gpu_from_host" % (what, device_type, DLPACK_CUDA))
    api = capsule_api()
    if api is None:
        raise TypeError("%s: reading a DLPack capsule needs the CPython C API (ctypes.pythonapi), which this "
                        "interpreter lacks; pass an object with __cuda_array_interface__ instead" % what)
    capsule = value.__dlpack__()
    return view_of_capsule(capsule, what, api)


def view_of_capsule(capsule, what="a DLPack capsule", api=None, expect_device=DLPACK_CUDA):
    """The DeviceView of an unconsumed "dltensor" capsule; the view keeps the capsule (its owner) alive,
    and the capsule's own destructor frees the tensor when the view is gone."""
    api = api or capsule_api()
    if not api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise TypeError("%s: not an unconsumed DLPack capsule named 'dltensor'" % what)
    managed = DLManagedTensor.from_address(api.PyCapsule_GetPointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    if t.dtype.lanes != 1:
        raise TypeError("%s: vector dtypes (lanes %d) are not supported" % (what, t.dtype.lanes))
    dtype = dtype_from_code(t.dtype.code, t.dtype.bits)
    shape = [t.shape[d] for d in range(t.ndim)]
    strides = [t.strides[d] for d in range(t.ndim)] if t.strides else None
    address = (t.data or 0) + t.byte_offset
    view = DeviceView(address, shape, strides, dtype, t.device.device_id, capsule)
    if t.device.device_type != expect_device:
        raise TypeError("%s: the DLPack tensor is on device type %d, expected %d"
                        % (what, t.device.device_type, expect_device))
    return view

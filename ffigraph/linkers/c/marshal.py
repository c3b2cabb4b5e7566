"""Moving values across the ABI: numpy arrays into FfgTensor slots, output slots into arrays.

Inputs are passed without a copy whenever the array can be described
(any strides in whole elements, negative and zero included). Outputs come
back without a copy: the array's base keeps the C block alive and frees it
exactly once (``ffi.gc``), or keeps the input it views alive.
"""
from __future__ import annotations

import numpy as np

from ffigraph.abi import DEVICE_CPU, MAX_NDIM, c_free, dtype_code, dtype_from_code, error_codes, ffi

_NULL = ffi.NULL
_DTYPE_CODES = {}


def _code_of(dtype):
    try:
        return _DTYPE_CODES[dtype]
    except KeyError:
        code = _DTYPE_CODES[dtype] = dtype_code(dtype)
        return code


def describable(arr):
    """An array whose strides are whole elements: passed as is; otherwise a contiguous copy."""
    itemsize = arr.itemsize
    for s in arr.strides:
        if s % itemsize:
            return np.ascontiguousarray(arr)
    return arr


def from_dlpack_or_array(value):
    """numpy view of an object with ``__dlpack__`` (CPU), or the value itself."""
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__") and hasattr(np, "from_dlpack"):
        return np.from_dlpack(value)
    return value


class _OutputArray:
    """Exposes a C block (or a view into an input) to numpy; numpy keeps it as the base."""

    __slots__ = ("__array_interface__", "keep")

    def __init__(self, interface, keep):
        self.__array_interface__ = interface
        self.keep = keep


class CallBlock:
    """Preallocated ABI structs for one library state: inputs, outputs, shape/stride storage, error."""

    def __init__(self, n_inputs, n_outputs, out_dtypes, out_ndims):
        self.n_inputs = n_inputs
        self.n_outputs = n_outputs
        self.inputs = ffi.new("FfgTensor[]", max(n_inputs, 1))
        self.dims = ffi.new("int64_t[]", max(2 * MAX_NDIM * n_inputs, 1))
        self.outputs = ffi.new("FfgOutput[]", max(n_outputs, 1))
        self.err = ffi.new("FfgError *")
        self.out_dtypes = [np.dtype(d) for d in out_dtypes]
        self.out_ndims = list(out_ndims)
        self.keep = [None] * n_inputs   # the arrays whose memory the slots point at
        for i in range(n_inputs):
            t = self.inputs[i]
            t.device.device_type = DEVICE_CPU
            t.device.device_id = 0
            t.dtype.lanes = 1
            t.shape = self.dims + 2 * MAX_NDIM * i
            t.strides = self.dims + 2 * MAX_NDIM * i + MAX_NDIM

    def set_input(self, i, arr):
        """Point slot i at ``arr`` (an ndarray) without copying when it can be described."""
        if arr.ndim > MAX_NDIM:
            raise ValueError("arrays of more than %d dimensions cannot cross the ABI" % MAX_NDIM)
        arr = describable(arr)
        self.keep[i] = arr
        t = self.inputs[i]
        t.data = ffi.cast("void *", arr.__array_interface__["data"][0])
        t.byte_offset = 0
        t.ndim = arr.ndim
        code, bits = _code_of(arr.dtype)
        t.dtype.code = code
        t.dtype.bits = bits
        itemsize = arr.itemsize
        shape, strides = t.shape, t.strides
        for d, (n, s) in enumerate(zip(arr.shape, arr.strides)):
            shape[d] = n
            strides[d] = s // itemsize
        return arr

    def release_inputs(self):
        for i in range(self.n_inputs):
            self.keep[i] = None

    def get_output(self, k):
        """The k-th output as an ndarray that owns (or keeps alive) its memory."""
        o = self.outputs[k]
        t = o.tensor
        ndim = t.ndim
        dtype = dtype_from_code(t.dtype.code, t.dtype.bits)
        shape = tuple(t.shape[d] for d in range(ndim))
        itemsize = dtype.itemsize
        strides = tuple(t.strides[d] * itemsize for d in range(ndim))
        address = int(ffi.cast("uintptr_t", t.data)) + t.byte_offset
        if o.base != _NULL:
            size = 1
            for n in shape:
                size *= n
            keep = ffi.gc(o.base, c_free, size=size * itemsize)
        elif o.alias_of >= 0:
            keep = self.keep[o.alias_of]
        else:
            raise RuntimeError("output %d came back with neither its own memory nor an input to view" % k)
        interface = {"data": (address, False), "shape": shape, "strides": strides,
                     "typestr": dtype.str, "version": 3}
        return np.asarray(_OutputArray(interface, keep))

    def error(self):
        """(exception class, message, node index, input index) from the error record."""
        err = self.err
        cls = error_codes().get(err.code, ("runtime", RuntimeError))[1]
        return cls, ffi.string(err.message).decode("utf-8", "replace"), err.node, err.input

"""``GpuArrayType``: like TensorType (dtype, static shape), but the values live on a CUDA device.

At the boundary a value may be any object exposing ``__cuda_array_interface__``
(version 2 or 3: pycuda's GPUArray, CuPy, PyTorch, Numba) or ``__dlpack__`` on
a CUDA device; it crosses the ABI as its pointer, shape and strides (no copy,
no hidden contiguity requirement). Results come back as pycuda GPUArrays when
pycuda is installed, else as ffigraph's own ``DeviceArray``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.abi import dtype_code
from ffigraph.cuda.marshal import device_view
from ffigraph.graph.type import Type
from ffigraph.graph.c_interface import CType
from ffigraph.abi import c_element_type
from ffigraph.tensor.type import normalize_dtype, normalize_shape


class GpuArrayCType(CType):
    """The C side: the same ``ffg_array`` local as TensorType, its data a device pointer."""

    def c_abi_dtype(self):
        return self.numpy_dtype

    def c_declare(self, name, sub, check_input=True):
        return "ffg_array %s;" % name

    def c_init(self, name, sub):
        return "%(n)s.data = NULL;\n%(n)s.owned = NULL;\n%(n)s.offered = NULL;\n%(n)s.in_offered = 0;" % dict(n=name)

    def c_extract(self, name, sub, check_input=True):
        code, bits = dtype_code(self.numpy_dtype)
        static = ", ".join(str(-1 if s is None else s) for s in self.shape) or "0"
        return """
static const int64_t %(name)s_static[] = {%(static)s};
if (ffg_extract_on(&%(name)s, %(input)s, %(slot)d, %(label)s, %(check)d, FFG_DEVICE_CUDA, %(code)d, %(bits)d,
                   %(ndim)d, %(name)s_static, %(err)s))
    %(fail)s
""" % dict(name=name, static=static, input=sub["input"], slot=sub["input_index"], label=sub["input_name"],
           check=1 if check_input else 0, code=code, bits=bits, ndim=self.ndim, err=sub["err"], fail=sub["fail"])

    def c_sync(self, name, sub):
        code, bits = dtype_code(self.numpy_dtype)
        return ("ffg_publish_on(%(output)s, &%(name)s, FFG_DEVICE_CUDA, %(code)d, %(bits)d, %(ndim)d, %(shape)s, "
                "%(strides)s, %(alias)d);" % dict(output=sub["output"], name=name, code=code, bits=bits,
                                                  ndim=self.ndim, shape=sub["out_shape"],
                                                  strides=sub["out_strides"], alias=sub["alias_of"]))

    def c_profile_value(self, name, sub):
        """Record this value's shape and bytes after its node ran (profiled libraries only)."""
        return "ffg_profile_array(%s, &%s, %d, %d);" % (sub["record"], name, self.ndim, self.numpy_dtype.itemsize)

    def c_cleanup(self, name, sub):
        # device blocks go back to the device allocator (ffg_cu_release lives in the .cu prelude's C twin)
        return "ffg_cuda_release(%(alloc)s, %(name)s.owned);\n%(name)s.owned = NULL;" % dict(
            alloc=sub["device_allocator"], name=name)

    def c_support_code(self, **kwargs):
        return CUDA_RELEASE_DECL

    def c_literal(self, name, data):
        return None   # constants on the device are made by a transfer of a host constant

    def c_registry_values(self):
        return dict(ndim=self.ndim, itemsize=self.numpy_dtype.itemsize, ctype=c_element_type(self.dtype))

    def c_code_cache_version(self):
        return (1,)

    def to_c_value(self, value):
        return device_view(value, what=str(self))

    def from_c_value(self, block):
        from ffigraph.cuda.device_array import wrap_output

        return wrap_output(block)


# The gcc side releases device blocks through a function the .cu prelude's library part defines.
CUDA_RELEASE_DECL = """/* defined in the graph's CUDA object: cudaFree, or the host's device allocator */
void ffg_cuda_release(const FfgAllocator *allocator, void *ptr);"""


class GpuArrayType(GpuArrayCType, Type):
    """Values are arrays of ``dtype`` with ``len(shape)`` dimensions on a CUDA device."""

    __props__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        self.dtype = normalize_dtype(dtype)
        self.shape = normalize_shape(shape)
        self.numpy_dtype = np.dtype(self.dtype)

    device = "cuda"

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def broadcastable(self):
        return tuple(s == 1 for s in self.shape)

    def clone(self, dtype=None, shape=None):
        return GpuArrayType(self.dtype if dtype is None else dtype, self.shape if shape is None else shape)

    def __str__(self):
        return "GpuArrayType(%s, shape=%s)" % (self.dtype, self.shape)

    def filter(self, data, strict=False, allow_downcast=None):
        """A device array of this dtype and ndim; host arrays are refused (transfer them explicitly)."""
        view = device_view(data, what=str(self))
        if view.dtype != self.numpy_dtype:
            raise TypeError("%s: expected dtype %s, got a device array of %s (device arrays are not cast "
                            "implicitly)" % (self, self.dtype, view.dtype))
        if len(view.shape) != self.ndim:
            raise TypeError("%s: expected %d dimensions, got %d (shape %s)"
                            % (self, self.ndim, len(view.shape), view.shape))
        for axis, (want, got) in enumerate(zip(self.shape, view.shape)):
            if want is not None and want != got:
                raise ValueError("%s: expected static shape %s, got %s (axis %d differs)"
                                 % (self, self.shape, view.shape, axis))
        return data

    def values_eq(self, a, b):
        from ffigraph.cuda.device_array import to_host

        return self.host_type().values_eq(to_host(a), to_host(b))

    def values_eq_approx(self, a, b, **kwargs):
        from ffigraph.cuda.device_array import to_host

        return self.host_type().values_eq_approx(to_host(a), to_host(b), **kwargs)

    def copy_value(self, value):
        """A device copy sharing no memory with ``value`` (what DeepCopyOp hands out)."""
        from ffigraph.cuda.device_array import DeviceArray

        view = device_view(value, what=str(self))
        return DeviceArray(view.address, view.shape, view.dtype, view.strides, value, view.device_id).copy()

    def convert_variable(self, var):
        other = var.type
        if other == self:
            return var
        if isinstance(other, GpuArrayType) and other.dtype == self.dtype and other.ndim == self.ndim:
            if all(s is None or s == o for s, o in zip(self.shape, other.shape)):
                return var
        return None

    def host_type(self):
        """The TensorType of the same dtype and shape, on the CPU."""
        from ffigraph.tensor.type import TensorType

        return TensorType(self.dtype, self.shape)

    def make_variable(self, name=None):
        from ffigraph.cuda.variable import GpuArrayVariable

        return GpuArrayVariable(self, None, None, name)


def gpu_type_of(tensor_type):
    """The GpuArrayType matching a TensorType."""
    return GpuArrayType(tensor_type.dtype, tensor_type.shape)

"""PyCUDA ops: an op whose ``make_thunk`` compiles its kernel with pycuda's ``SourceModule``, as in
Theano's PyCUDA example (the seed), running in a graph beside ffigraph's generated kernels.

Types line up because both sides speak GpuArrayType: the generated libraries
hand back pycuda ``GPUArray``s when pycuda is installed (and accept any
``__cuda_array_interface__`` object), and this op reads and writes GPUArrays.
pycuda is imported only when such a thunk is made; it needs a CUDA driver to
build and to run.
"""
from __future__ import annotations

import numpy as np

from ffigraph.cuda.marshal import device_view
from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op


def require_pycuda():
    """pycuda's compiler and gpuarray modules in the primary context, or ImportError saying how to get them."""
    try:
        use_primary_context()
        import pycuda.gpuarray as gpuarray
        from pycuda.compiler import SourceModule
    except ImportError as err:
        raise ImportError("PyCUDA ops need pycuda: pip install pycuda, or pip install '.[cuda]' from a "
                          "checkout of ffigraph (it builds only where a CUDA driver is installed): %s"
                          % err) from None
    return SourceModule, gpuarray


def use_primary_context():
    """Make pycuda work in the device's primary context, the one the CUDA runtime (and so every ffigraph
    library) uses: memory of one context is not usable from another."""
    try:
        import pycuda.autoprimaryctx  # noqa: F401  (pycuda >= 2021.1)
    except ImportError as err:
        if "autoprimaryctx" not in str(err):
            raise
        import pycuda.autoinit  # noqa: F401  (older pycuda: its own context)


def as_gpuarray(value, gpuarray):
    """A pycuda GPUArray viewing ``value`` (any __cuda_array_interface__ object), C-contiguous only."""
    if isinstance(value, gpuarray.GPUArray):
        return value
    view = device_view(value, what="a PyCUDA op input")
    c_strides = view.__class__(0, view.shape, None, view.dtype).element_strides()
    if any(n > 1 and s != c for n, s, c in zip(view.shape, view.element_strides(), c_strides)):
        raise ValueError("PyCUDA op inputs must be C-contiguous, got strides %s for shape %s (add an explicit "
                         "copy before the op)" % (view.strides, view.shape))
    return gpuarray.GPUArray(view.shape, view.dtype, gpudata=view.address, base=value)


class PyCUDADoubleOp(Op):
    """The seed's example: doubles a float32 GPU tensor with a kernel built by SourceModule."""

    __props__ = ()

    def make_node(self, x):
        if not isinstance(getattr(x, "type", None), GpuArrayType) or x.type.dtype != "float32":
            raise TypeError("PyCUDADoubleOp takes a float32 GPU tensor, got %s" % (getattr(x, "type", x),))
        return Apply(self, [x], [x.type()])

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes

    def __str__(self):
        return "PyCUDADoubleOp"

    def make_thunk(self, node, storage_map, compute_map, no_recycling):
        SourceModule, gpuarray = require_pycuda()
        mod = SourceModule("""
        __global__ void my_fct(const float *i0, float *o0, int size) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < size)
                o0[i] = i0[i] * 2;
        }""")
        kernel = mod.get_function("my_fct")
        in_cell, out_cell = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            x = as_gpuarray(in_cell[0], gpuarray)
            z = gpuarray.empty(x.shape, np.float32)
            if x.size:
                kernel(x, z, np.int32(x.size), block=(512, 1, 1), grid=((x.size + 511) // 512, 1))
            out_cell[0] = z
            if compute_map is not None:
                compute_map[node.outputs[0]][0] = True

        thunk.inputs, thunk.outputs = [in_cell], [out_cell]
        return thunk

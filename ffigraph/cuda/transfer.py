"""Transfers between host and device: ``gpu_from_host`` and ``host_from_gpu``, each the other's gradient.

Both take any strides. A strided host array is packed on the host first (the
copy is part of the transfer, and so visible in the graph); a strided device
array is gathered on the device by a kernel before the copy back. Results are
C-contiguous.
"""
from __future__ import annotations

from ffigraph.abi import dtype_code
from ffigraph.cuda.op import GpuKernelOp
from ffigraph.cuda.type import GpuArrayType, gpu_type_of
from ffigraph.graph.basic import Apply
from ffigraph.abi import c_element_type
from ffigraph.tensor.type import TensorType


def _strided_index_code():
    """Device/host code turning a C-order element index into an offset with any strides."""
    return r"""
typedef struct { int32_t ndim; int64_t shape[FFG_MAX_NDIM]; int64_t strides[FFG_MAX_NDIM]; } %(S)s_layout;

static __host__ __device__ int64_t %(S)s_offset(const %(S)s_layout *l, int64_t i)
{
    int64_t off = 0;
    int d;
    for (d = l->ndim - 1; d >= 0; --d) {
        off += (i %% l->shape[d]) * l->strides[d];
        i /= l->shape[d];
    }
    return off;
}

static void %(S)s_layout_of(const FfgTensor *t, %(S)s_layout *l, int *contiguous)
{
    int64_t want = 1;
    int d;
    l->ndim = t->ndim;
    ffg_cu_strides(t, l->strides);
    *contiguous = 1;
    for (d = t->ndim - 1; d >= 0; --d) {
        l->shape[d] = t->shape[d];
        if (t->shape[d] != 1 && l->strides[d] != want)
            *contiguous = 0;
        want *= t->shape[d];
    }
}
"""


class GpuFromHost(GpuKernelOp):
    """Copy a host tensor to the device."""

    __props__ = ()

    def make_node(self, x):
        from ffigraph.tensor.basic import as_tensor_variable

        if isinstance(getattr(x, "type", None), GpuArrayType):
            raise TypeError("gpu_from_host takes a host tensor, got %s, already on the GPU" % (x,))
        x = as_tensor_variable(x)
        if not isinstance(x.type, TensorType):
            raise TypeError("gpu_from_host takes a host tensor, got %s (%s)" % (x, x.type))
        return Apply(self, [x], [gpu_type_of(x.type)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes

    def grad(self, inputs, output_grads):
        return [host_from_gpu(output_grads[0])]

    def __str__(self):
        return "GpuFromHost"

    def cuda_launcher(self, node, symbol):
        t = node.inputs[0].type
        code, bits = dtype_code(t.numpy_dtype)
        return (_strided_index_code() + r"""
/* host -> device: pack a strided host array, then one copy */
FFG_CU_LAUNCHER int32_t %(S)s(%(params)s)
{
    const FfgTensor *x;
    %(S)s_layout l;
    int contiguous;
    int64_t n, i;
    size_t nbytes;
    const %(T)s *src;
    %(T)s *packed = NULL;
    void *dev;
    (void)device_alloc;
    if (ffg_cu_check_call(err, "GpuFromHost", inputs, n_inputs, 1, outputs, owned, n_outputs, 1))
        return err ? err->code : FFG_ERR_ABI;
    x = &inputs[0];
    if (ffg_cu_check_tensor(err, "GpuFromHost", x, 0, FFG_DEVICE_CPU, %(code)d, %(bits)d, %(ndim)d))
        return err->code;
    %(S)s_layout_of(x, &l, &contiguous);
    n = ffg_cu_size(x->ndim, x->shape);
    nbytes = (size_t)n * sizeof(%(T)s);
    src = (const %(T)s *)((const char *)x->data + x->byte_offset);
    if (!contiguous && n > 0) {
        packed = (%(T)s *)ffg_cu_host_alloc(host_alloc, nbytes, err);
        if (packed == NULL)
            return err->code;
        for (i = 0; i < n; ++i)
            packed[i] = src[%(S)s_offset(&l, i)];
        src = packed;
    }
    dev = ffg_cu_alloc(device_alloc, nbytes, err);
    if (dev != NULL && n > 0
            && ffg_cu_check(err, cudaMemcpy(dev, src, nbytes, cudaMemcpyHostToDevice), "GpuFromHost: cudaMemcpy")) {
        ffg_cu_free(device_alloc, dev);
        dev = NULL;
    }
    ffg_cu_host_free(host_alloc, packed);
    if (dev == NULL)
        return err->code;
    ffg_cu_set_output(&outputs[0], dev, FFG_DEVICE_CUDA, %(code)d, %(bits)d, %(ndim)d, x->shape);
    owned[0] = dev;
    return FFG_OK;
}
""") % dict(S=symbol, params=_params(), T=c_element_type(t.dtype), code=code, bits=bits, ndim=t.ndim)


class HostFromGpu(GpuKernelOp):
    """Copy a device tensor to the host."""

    __props__ = ()

    def make_node(self, x):
        if not isinstance(getattr(x, "type", None), GpuArrayType):
            raise TypeError("host_from_gpu takes a GPU tensor, got %s (%s)" % (x, getattr(x, "type", type(x))))
        return Apply(self, [x], [x.type.host_type()()])

    def infer_shape(self, fgraph, node, input_shapes):
        return input_shapes

    def grad(self, inputs, output_grads):
        return [gpu_from_host(output_grads[0])]

    def __str__(self):
        return "HostFromGpu"

    def cuda_launcher(self, node, symbol):
        t = node.inputs[0].type
        code, bits = dtype_code(t.numpy_dtype)
        return (_strided_index_code() + r"""
/* gather a strided device array into a contiguous block */
static __global__ void %(S)s_gather(%(S)s_layout l, const %(T)s *src, %(T)s *dst, int64_t n)
{
    int64_t i;
    for (i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = src[%(S)s_offset(&l, i)];
}

/* device -> host: gather on the device when strided, then one copy */
FFG_CU_LAUNCHER int32_t %(S)s(%(params)s)
{
    const FfgTensor *x;
    %(S)s_layout l;
    int contiguous;
    int64_t n;
    size_t nbytes;
    const %(T)s *src;
    %(T)s *tmp = NULL;
    void *host;
    if (ffg_cu_check_call(err, "HostFromGpu", inputs, n_inputs, 1, outputs, owned, n_outputs, 1))
        return err ? err->code : FFG_ERR_ABI;
    x = &inputs[0];
    if (ffg_cu_check_tensor(err, "HostFromGpu", x, 0, FFG_DEVICE_CUDA, %(code)d, %(bits)d, %(ndim)d))
        return err->code;
    %(S)s_layout_of(x, &l, &contiguous);
    n = ffg_cu_size(x->ndim, x->shape);
    nbytes = (size_t)n * sizeof(%(T)s);
    src = (const %(T)s *)((const char *)x->data + x->byte_offset);
    host = ffg_cu_host_alloc(host_alloc, nbytes, err);
    if (host == NULL)
        return err->code;
    if (n > 0 && !contiguous) {
        tmp = (%(T)s *)ffg_cu_alloc(device_alloc, nbytes, err);
        if (tmp != NULL) {
            %(S)s_gather<<<ffg_cu_blocks(n), FFG_CU_THREADS>>>(l, src, tmp, n);
            if (ffg_cu_launched(err, "HostFromGpu: gather kernel")) {
                ffg_cu_free(device_alloc, tmp);
                tmp = NULL;
            }
        }
        if (tmp == NULL) {
            ffg_cu_host_free(host_alloc, host);
            return err->code;
        }
        src = tmp;
    }
    if (n > 0 && ffg_cu_check(err, cudaMemcpy(host, src, nbytes, cudaMemcpyDeviceToHost), "HostFromGpu: cudaMemcpy")) {
        ffg_cu_free(device_alloc, tmp);
        ffg_cu_host_free(host_alloc, host);
        return err->code;
    }
    ffg_cu_free(device_alloc, tmp);
    ffg_cu_set_output(&outputs[0], host, FFG_DEVICE_CPU, %(code)d, %(bits)d, %(ndim)d, x->shape);
    owned[0] = host;
    return FFG_OK;
}
""") % dict(S=symbol, params=_params(), T=c_element_type(t.dtype), code=code, bits=bits, ndim=t.ndim)


def _params():
    from ffigraph.cuda.prelude import LAUNCHER_PARAMS

    return LAUNCHER_PARAMS


_gpu_from_host = GpuFromHost()
_host_from_gpu = HostFromGpu()


def gpu_from_host(x):
    """The symbolic copy of host tensor ``x`` to the GPU."""
    return _gpu_from_host(x)


def host_from_gpu(x):
    """The symbolic copy of GPU tensor ``x`` back to the host."""
    return _host_from_gpu(x)

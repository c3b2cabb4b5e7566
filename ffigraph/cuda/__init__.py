"""CUDA: GPU tensors, host/device transfers, generated kernels over the ffigraph ABI, PyCUDA ops.

Everything here is plain C/CUDA compiled by nvcc into ordinary shared libraries
(no Python symbols), loaded with cffi like the C backend's. pycuda is optional
(``pip install ".[cuda]"`` from a checkout) and imported only when used.

``gpu_status()`` says whether a GPU can run work here, and if not, why (in
CUDA's own words: "insufficient driver", "no device").
"""
from ffigraph.cuda.device_array import DeviceArray, to_host
from ffigraph.cuda.runtime import gpu_status
from ffigraph.cuda.transfer import GpuFromHost, HostFromGpu, gpu_from_host, host_from_gpu
from ffigraph.cuda.type import GpuArrayType
# last: registers CUDA with the C linker (ffigraph.linkers.devices) and its GPU rewrite with optdb
from ffigraph.cuda import device as _device  # noqa: E402,F401

__all__ = ["DeviceArray", "GpuArrayType", "GpuFromHost", "HostFromGpu", "gpu_from_host", "gpu_status",
           "host_from_gpu", "to_host"]

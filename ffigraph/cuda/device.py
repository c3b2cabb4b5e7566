"""CUDA as a device of the C linker, registered (with its GPU rewrite) when ``ffigraph.cuda`` is imported.

The linker and export reach CUDA only through ``ffigraph.linkers.devices``,
so they never import this package; each method hands over a piece that lives
in its own module here.
"""
from __future__ import annotations

from ffigraph.cuda import allocator, runtime, toolchain
from ffigraph.cuda.device_array import to_host
from ffigraph.cuda.prelude import CUDA_PRELUDE
from ffigraph.cuda.rewrite import gpu_rewrite
from ffigraph.graph.rewriting import optdb
from ffigraph.linkers import devices


class CudaDevice(devices.Device):
    name = "cuda"

    def prelude(self):
        return CUDA_PRELUDE

    def build_requirements(self):
        return toolchain.cuda_requirements()   # read per graph: config.nvcc and the archs may change

    def install_allocator(self, library, state, block):
        return allocator.install(library, state, block)

    def free_block(self, ptr):
        runtime.free_block(ptr)

    def to_host(self, value):
        return to_host(value)

    def toolchain_root(self, build_requirements):
        return toolchain.cuda_root(build_requirements["nvcc"])


devices.register(CudaDevice())
if "gpu" not in optdb:   # Mode(device='cuda') includes this tag; after fusion, before inplace
    optdb.register("gpu", gpu_rewrite, "gpu", position=4.5)

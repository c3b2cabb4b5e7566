"""Where a compiled graph's GPU memory comes from, seen from Python.

A library with CUDA code is given a device allocator through the ABI's
``P_set_allocator(state, FFG_DEVICE_CUDA, &allocator)``:

* ``set_device_allocator(alloc, free)`` installs any Python pair
  (``alloc(nbytes) -> address``, ``free(address)``), e.g. over CuPy's pool;
* otherwise, when pycuda is installed, its ``DeviceMemoryPool`` is used;
* otherwise the library's own default, cudaMalloc/cudaFree, is kept.

Output blocks the library hands over are released through the same pair,
exactly once, when the Python object holding them is collected.
"""
from __future__ import annotations

import threading

from ffigraph.abi import DEVICE_CUDA, ffi

_lock = threading.Lock()
_chosen = {}


class PythonDeviceAllocator:
    """An FfgAllocator whose calls go to two Python functions (cffi callbacks)."""

    def __init__(self, alloc, free, name="python"):
        self.name = name
        self._alloc, self._free = alloc, free
        self.live = {}   # address -> what alloc returned (kept alive until freed)
        self.struct = ffi.new("FfgAllocator *")
        self._callbacks = (ffi.callback("void *(*)(void *, size_t)", self._on_alloc),
                           ffi.callback("void (*)(void *, void *)", self._on_release))
        self.struct.alloc, self.struct.release = self._callbacks
        self.struct.ctx = ffi.NULL

    def _on_alloc(self, ctx, nbytes):
        try:
            block = self._alloc(int(nbytes))
            address = int(block)
        except Exception:   # an allocation failure is reported by the library as FFG_ERR_NOMEM
            return ffi.NULL
        if address == 0:
            return ffi.NULL
        with _lock:
            self.live[address] = block
        return ffi.cast("void *", address)

    def _on_release(self, ctx, ptr):
        self.release(int(ffi.cast("uintptr_t", ptr)))

    def release(self, address):
        with _lock:
            block = self.live.pop(address, None)
        if block is not None:
            self._free(block)

    def release_cdata(self, ptr):
        """The destructor for an owned output block (ffi.gc)."""
        self.release(int(ffi.cast("uintptr_t", ptr)))


def set_device_allocator(alloc=None, free=None, name="python"):
    """Use ``alloc(nbytes) -> block`` (int(block) is the device address) and ``free(block)`` for the GPU
    memory of graphs compiled from now on; ``set_device_allocator()`` goes back to the default."""
    with _lock:
        if alloc is None:
            _chosen.pop("allocator", None)
            _chosen["decided"] = False
            return None
        if free is None:
            raise TypeError("set_device_allocator needs both alloc and free")
        chosen = PythonDeviceAllocator(alloc, free, name)
        _chosen["allocator"] = chosen
        _chosen["decided"] = True
        return chosen


def current_device_allocator():
    """The allocator new GPU graphs get: the one set, else pycuda's pool when importable, else None."""
    with _lock:
        if _chosen.get("decided"):
            return _chosen.get("allocator")
    pool = _pycuda_pool()
    chosen = None
    if pool is not None:
        chosen = PythonDeviceAllocator(pool.allocate, lambda block: block.free(), "pycuda DeviceMemoryPool")
    with _lock:
        if not _chosen.get("decided"):
            _chosen["allocator"] = chosen
            _chosen["decided"] = True
        return _chosen.get("allocator")


def _pycuda_pool():
    try:
        from ffigraph.cuda.pycuda_ops import use_primary_context

        use_primary_context()   # optional extra; needs a driver
        from pycuda.tools import DeviceMemoryPool
    except Exception:
        return None
    return DeviceMemoryPool()


def install(library, state, block):
    """Give one compiled state its device allocator, and its call block the matching release."""
    chosen = current_device_allocator()
    if chosen is None:
        return None
    code = library.set_allocator(state, DEVICE_CUDA, chosen.struct)
    if code != 0:
        raise RuntimeError("%s refused the device allocator (code %d)" % (library.path, code))
    block.device_release = chosen.release_cdata
    return chosen

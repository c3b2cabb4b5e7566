"""Test helpers for the CUDA tiers: building launchers on their own, reading cubin architectures.

Tiers (see conftest.py):
  always     code generation, marshaling, layout: no toolkit needed;
  nvcc       ``needs_nvcc``: compiles and loads libraries; with no GPU, calls must fail with
             CUDA's own "no driver"/"no device" error through the error record (a test that only
             passes by seeing that error is ``needs_no_gpu`` and its name ends in ``_without_gpu``:
             it shows an error is reported, not that anything works on a device);
  gpu        ``@pytest.mark.gpu``: results on a real device (skipped here, with the reason).
"""
from __future__ import annotations

import hashlib
import importlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import pytest

from ffigraph.abi import HEADER_PATH, ffi
from ffigraph.cuda import toolchain
from ffigraph.cuda.prelude import CUDA_PRELUDE, LAUNCHER_PARAMS

NVCC = toolchain.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (set CUDA_HOME or put nvcc on PATH)")


def _gpu_present():
    try:
        from ffigraph.cuda.runtime import gpu_status

        return gpu_status()[0]
    except Exception:
        return False


GPU_PRESENT = _gpu_present()
# Calls made with fake device pointers expect CUDA to refuse before touching them: only without a GPU.
# Such a test passes by seeing CUDA's "no driver"/"no device" error, and its name ends in _without_gpu.
needs_no_gpu = pytest.mark.skipif(GPU_PRESENT, reason="a GPU is present: fake device pointers would be "
                                  "dereferenced (the gpu tier checks real values instead)")

TENSOR_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensor")
SCALAR_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scalar")


def cpu_op_tests(name, folder=TENSOR_TESTS):
    """The CPU op tests' module ``name`` of tests/tensor (test_elemwise, test_build_ops, test_reductions)
    or of another ``folder`` (tests/scalar's test_special_functions): the GPU tier takes its numpy
    references and spelled-out output dtypes from their tables, so both backends answer to the same
    oracle. It is the very module pytest collects (same name, same path)."""
    if folder not in sys.path:
        sys.path.append(folder)
    module = importlib.import_module(name)
    assert os.path.dirname(os.path.abspath(module.__file__)) == folder, module.__file__
    return module


_cudart = []


def device_memory():
    """(free, total) bytes of the current device, from cudaMemGetInfo: libcudart through cffi, loaded
    from the same file as ffigraph.cuda.runtime loads it (so the same library, the same context)."""
    if not _cudart:
        import cffi

        own = cffi.FFI()
        own.cdef("int cudaMemGetInfo(size_t *free, size_t *total); int cudaDeviceSynchronize(void);")
        _cudart.append((own, own.dlopen(os.path.join(toolchain.runtime_lib_dir(), "libcudart.so"))))
    own, lib = _cudart[0]
    free, total = own.new("size_t *"), own.new("size_t *")
    assert lib.cudaDeviceSynchronize() == 0
    status = lib.cudaMemGetInfo(free, total)
    assert status == 0, "cudaMemGetInfo failed with CUDA error %d" % status
    return int(free[0]), int(total[0])


EM_CUDA = 190
# CUDA errors a GPU-less machine gives: insufficient driver (35), no device (100)
NO_GPU_CUDA_ERRORS = {35: "cudaErrorInsufficientDriver", 100: "cudaErrorNoDevice"}

_built = {}


def _shared_build(key):
    """Where the launchers of ``key`` (their text, the ABI header, the archs, which nvcc) are kept for the whole test
    run, or None. ``./dev test`` gives every phase one compile cache (FFIGRAPH_COMPILEDIR, one
    subfolder per interpreter); nvcc's output depends on the text and the flags alone, so the workers
    and the PyPy phase load the library the first build left in a folder beside those subfolders
    instead of running nvcc again (some 15 s of nvcc in the PyPy phase). Without that variable each
    process builds its own, as before."""
    root = os.environ.get("FFIGRAPH_COMPILEDIR")
    if not root:
        return None
    folder = os.path.join(root, "test-nvcc-launchers")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "lib%s.so" % key)


def build_launchers(launchers, archs=("sm_90",), tag="t", declarations=None):
    """Compile ``launchers`` ({symbol: .cu text}) with the prelude into one shared library, exported.

    Returns (cffi lib, path). Each symbol is declared with the launcher signature, unless
    ``declarations`` gives its own C declaration.
    """
    declarations = declarations or {}
    text = CUDA_PRELUDE + "\n\n" + "\n\n".join(launchers.values())
    digest = hashlib.sha256((text + repr(archs)).encode()).hexdigest()[:16]
    if digest in _built:
        return _built[digest]
    with open(HEADER_PATH, "rb") as fh:
        header = fh.read()
    lib_path = _shared_build(hashlib.sha256(text.encode() + header + (repr(archs) + NVCC + repr(os.stat(NVCC).st_mtime)).encode()).hexdigest()[:24])
    if lib_path is None or not os.path.exists(lib_path):
        folder = tempfile.mkdtemp(prefix="ffg-cu-%s-" % tag, dir=os.path.dirname(lib_path) if lib_path else None)
        cu = os.path.join(folder, "k.cu")
        built_path = os.path.join(folder, "libk.so")
        with open(cu, "w") as fh:
            fh.write(text)
        cmd = [NVCC, "-shared", "-O2", "-std=c++14", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-cudart", "shared",
               "-DFFG_CU_EXPORT_LAUNCHERS", "-I" + os.path.dirname(HEADER_PATH)]
        for a in archs:
            num = a.split("_")[1]
            cmd += ["-gencode", "arch=compute_%s,code=%s" % (num, a)]
        cmd += ["-o", built_path, cu]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if proc.returncode != 0:
            raise AssertionError("nvcc failed on %s:\n%s" % (cu, proc.stdout[-6000:]))
        if lib_path is None:
            lib_path = built_path
        else:   # published whole by one rename: a worker (or the PyPy phase) reading it sees all of it
            os.replace(built_path, lib_path)
            shutil.rmtree(folder, ignore_errors=True)
    lib = Functions(lib_path, {symbol: declarations.get(symbol) for symbol in launchers})
    _built[digest] = (lib, lib_path)
    return lib, lib_path


class Functions:
    """Functions of a shared library as attributes, each typed by its C declaration (default: the
    launcher signature). ffigraph's ``ffi`` is prebuilt and takes no cdef: the symbols are looked up
    with the dynamic loader and cast to function pointers, as ffigraph loads its own libraries."""

    def __init__(self, path, declarations):
        from ffigraph.linkers.c import dl

        self.handle = dl.open_library(path)   # kept open for the life of the process, like ffi.dlopen
        for symbol, declaration in declarations.items():
            declaration = (declaration or "int32_t %s(%s);" % (symbol, LAUNCHER_PARAMS)).strip().rstrip(";")
            pointer_type = re.sub(r"\b%s\s*\(" % re.escape(symbol), "(*)(", declaration, count=1)
            setattr(self, symbol, dl.symbol(self.handle, symbol, pointer_type))


def cubin_archs(path):
    """The SM numbers of every CUDA ELF (cubin) embedded in a file (a .so, .o or .cubin)."""
    with open(path, "rb") as fh:
        data = fh.read()
    archs = set()
    start = data.find(b"\x7fELF")
    while start >= 0:
        if len(data) >= start + 52 and data[start + 4] == 2:   # ELFCLASS64
            machine = struct.unpack_from("<H", data, start + 18)[0]
            if machine == EM_CUDA:
                flags = struct.unpack_from("<I", data, start + 48)[0]
                archs.add((flags >> 8) & 0xFF)
        start = data.find(b"\x7fELF", start + 1)
    return archs


def undefined_python_symbols(path):
    out = subprocess.run(["nm", "-D", "--undefined-only", path], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return [ln.split()[-1] for ln in out.splitlines() if ln.split() and ln.split()[-1].lstrip("_").startswith("Py")]


class Slots:
    """ABI tensors for calling a launcher by hand: inputs described from numpy arrays or raw pointers."""

    def __init__(self, n_inputs, n_outputs):
        self.inputs = ffi.new("FfgTensor[]", max(n_inputs, 1))
        self.outputs = ffi.new("FfgTensor[]", max(n_outputs, 1))
        self.owned = ffi.new("void *[]", max(n_outputs, 1))
        self.err = ffi.new("FfgError *")
        self.keep = []
        for k in range(n_outputs):
            shape = ffi.new("int64_t[]", 32)
            strides = ffi.new("int64_t[]", 32)
            self.keep += [shape, strides]
            self.outputs[k].shape = shape
            self.outputs[k].strides = strides
        self.n_inputs, self.n_outputs = n_inputs, n_outputs

    def set(self, i, shape, dtype_code, bits, device_type=2, data=0x1000, strides=None):
        t = self.inputs[i]
        t.data = ffi.cast("void *", data)
        t.device.device_type = device_type
        t.device.device_id = 0
        t.ndim = len(shape)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype_code, bits, 1
        sh = ffi.new("int64_t[]", list(shape) or [0])
        self.keep.append(sh)
        t.shape = sh
        if strides is None:
            t.strides = ffi.NULL
        else:
            st = ffi.new("int64_t[]", list(strides) or [0])
            self.keep.append(st)
            t.strides = st
        t.byte_offset = 0

    def call(self, fn):
        self.err.code = 0
        self.err.detail = 0
        self.err.message[0] = b"\0"
        rc = fn(self.inputs, self.n_inputs, self.outputs, self.owned, self.n_outputs, ffi.NULL, ffi.NULL, self.err)
        return rc, self.err.detail, ffi.string(self.err.message).decode()

"""CUDA core: configuration, marshaling of device arrays, transfers, the GPU rewrite, libraries built by nvcc.

Three tiers (tests/cuda_helpers.py): always; nvcc (compiles, and with no GPU each call must end in
CUDA's own "insufficient driver"/"no device" error through the error record: a test that passes only
by seeing that error says so, ``..._without_gpu``); gpu (real results, against numpy).
"""
import os
import platform
import subprocess

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.abi import CudaError, expected_layout, ffi
from ffigraph.cuda import DeviceArray, GpuArrayType, gpu_from_host, gpu_status, host_from_gpu, toolchain
from ffigraph.cuda.marshal import DLPACK_CPU, device_view, view_of_capsule
from ffigraph.cuda.transfer import GpuFromHost, HostFromGpu
from cuda_helpers import NO_GPU_CUDA_ERRORS, Slots, build_launchers, cubin_archs, device_memory, needs_no_gpu, \
    needs_nvcc, undefined_python_symbols
from helpers import assert_matches

CPYTHON = platform.python_implementation() == "CPython"
GPU_OK, GPU_REASON = gpu_status()


class FakeCai:
    """A __cuda_array_interface__ over HOST memory: enough to check marshaling (never dereferenced
    as device memory by a successful call here, since no GPU can run)."""

    def __init__(self, arr, version=3, strides="auto", **extra):
        self.arr = arr
        self.__cuda_array_interface__ = dict(
            shape=arr.shape, typestr=arr.dtype.str, data=(arr.__array_interface__["data"][0], False),
            version=version, strides=arr.strides if strides == "auto" else strides, **extra)


def _expect_no_gpu_error(excinfo_value):
    assert isinstance(excinfo_value, CudaError), excinfo_value
    assert excinfo_value.cuda_code in NO_GPU_CUDA_ERRORS, excinfo_value
    assert NO_GPU_CUDA_ERRORS[excinfo_value.cuda_code] in str(excinfo_value)


# ------------------------------------------------------------------ always: configuration


def test_mode_device_includes_the_gpu_rewrite():
    assert "gpu" in Mode(device="cuda").include
    assert "gpu" not in Mode(device="cpu").include
    assert "device=cuda" in str(Mode(device="cuda"))
    with pytest.raises(ValueError, match="device"):
        Mode(device="tpu")
    with config.change_flags(device="cuda"):
        assert "gpu" in Mode().include
    with pytest.raises(ValueError, match="device"):
        config.device = "gpu0"


def test_arch_flags_follow_config():
    with config.change_flags(cuda_arch="sm_80,sm_90"):
        flags = toolchain.arch_flags()
    assert flags == ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
                     "-gencode", "arch=compute_90,code=compute_90"]
    with config.change_flags(cuda_arch="sm_75,bogus"):
        with pytest.raises(ValueError, match="bogus"):
            toolchain.target_archs()


@pytest.mark.skipif(GPU_OK, reason="a GPU is present: auto means its own architecture")
def test_auto_arch_without_a_gpu_is_sm80_sm90():
    with config.change_flags(cuda_arch="auto"):
        assert toolchain.target_archs() == ["sm_80", "sm_90"]


def test_nvcc_found_through_config_and_cuda_home(tmp_path, monkeypatch):
    fake = tmp_path / "cuda" / "bin"
    fake.mkdir(parents=True)
    nvcc = fake / "nvcc"
    nvcc.write_text("#!/bin/sh\necho fake\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    with config.change_flags(nvcc=""):
        assert toolchain.find_nvcc() == str(nvcc)
    with config.change_flags(nvcc="/opt/elsewhere/nvcc"):
        assert toolchain.find_nvcc() == "/opt/elsewhere/nvcc"
    monkeypatch.delenv("CUDA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))   # nothing there
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with config.change_flags(nvcc=""):
        found = toolchain.find_nvcc()
    assert found in (None, "/usr/local/cuda/bin/nvcc")


# ------------------------------------------------------------------ always: marshaling


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("case", ["c", "f", "negative", "broadcast", "0d", "empty"])
def test_cuda_array_interface_marshaling(version, case):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    arr = {"c": base, "f": np.asfortranarray(base), "negative": base[::-1, ::-2],
           "broadcast": np.broadcast_to(base[:1], (4, 6)), "0d": np.array(2.5, np.float32),
           "empty": base[:0]}[case]
    obj = FakeCai(arr, version=version, strides=None if case == "c" else arr.strides)
    view = device_view(obj)
    assert view.address == arr.__array_interface__["data"][0]
    assert view.shape == arr.shape and view.dtype == arr.dtype and view.owner is obj
    assert view.element_strides() == tuple(s // 4 for s in arr.strides)


def test_marshaling_refuses_what_the_abi_cannot_describe():
    arr = np.zeros((3, 4), np.float64)
    with pytest.raises(TypeError, match="version 1"):
        device_view(FakeCai(arr, version=1))
    with pytest.raises(TypeError, match="masked"):
        device_view(FakeCai(arr, mask=object()))
    with pytest.raises(ValueError, match="whole number"):
        device_view(FakeCai(arr, strides=(32, 4)))
    with pytest.raises(TypeError, match="cannot cross"):
        device_view(FakeCai(arr.astype(">f8")))
    bad = FakeCai(arr)
    bad.__cuda_array_interface__["data"] = (0, False)
    with pytest.raises(ValueError, match="NULL"):
        device_view(bad)
    with pytest.raises(TypeError, match="not CUDA"):
        device_view(arr)   # numpy's __dlpack__ says CPU
    with pytest.raises(TypeError, match="host value|__cuda_array_interface__"):
        device_view([1.0, 2.0])


def test_gpu_type_filter():
    t = GpuArrayType("float32", (None, 3))
    ok = FakeCai(np.zeros((2, 3), np.float32))
    assert t.filter(ok) is ok
    with pytest.raises(TypeError, match="dtype"):
        t.filter(FakeCai(np.zeros((2, 3), np.float64)))
    with pytest.raises(TypeError, match="dimensions"):
        t.filter(FakeCai(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="static shape"):
        t.filter(FakeCai(np.zeros((2, 4), np.float32)))
    with pytest.raises(TypeError, match="DeviceArray.from_host"):
        t.filter(np.zeros((2, 3), np.float32))


def test_device_array_interfaces():
    host = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = DeviceArray(host.__array_interface__["data"][0], (3, 4), np.int32, strides=(1, 3), owner=host)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<i4"
    assert cai["strides"] == (4, 12) and cai["data"] == (d.ptr, False)
    assert d.__dlpack_device__() == (2, 0)
    assert d.strides == (4, 12) and d.size == 12 and d.ndim == 2
    again = device_view(d)
    assert (again.address, again.shape, again.element_strides()) == (d.ptr, (3, 4), (1, 3))


@pytest.mark.skipif(not CPYTHON, reason="DLPack capsules are read through ctypes.pythonapi, which PyPy lacks")
def test_dlpack_capsules_round_trip():
    host = np.arange(10, dtype=np.float64)
    d = DeviceArray(host.__array_interface__["data"][0] + 8, (3,), np.float64, strides=(-2,), owner=host)
    view = view_of_capsule(d.__dlpack__())
    assert (view.address, view.shape, view.strides, view.dtype) == (d.ptr, (3,), (-2,), np.float64)
    assert device_view(d).address == d.ptr
    cpu = view_of_capsule(host[::3].__dlpack__(), expect_device=DLPACK_CPU)
    assert cpu.shape == (4,) and cpu.strides == (3,)
    with pytest.raises(TypeError, match="expected 2"):
        view_of_capsule(host.__dlpack__())


@pytest.mark.skipif(CPYTHON, reason="the PyPy message is only seen on PyPy")
def test_dlpack_export_says_why_on_pypy():
    d = DeviceArray(4096, (2,), np.float32)
    with pytest.raises(BufferError, match="pythonapi"):
        d.__dlpack__()


# ------------------------------------------------------------------ always: ops and gradients


def test_transfer_types_and_errors():
    x = T.fmatrix("x")
    g = gpu_from_host(x)
    assert g.type == GpuArrayType("float32", (None, None))
    back = host_from_gpu(g)
    assert back.type == x.type
    with pytest.raises(TypeError, match="host tensor"):
        gpu_from_host(g)
    with pytest.raises(TypeError, match="GPU tensor"):
        host_from_gpu(x)


def test_transfer_gradients_are_each_other():
    x = T.dvector("x")
    cost = (host_from_gpu(gpu_from_host(x)) * 3.0).sum()
    gx = T.grad(cost, x)
    ops = set()
    stack = [gx]
    while stack:
        v = stack.pop()
        if v.owner is not None:
            ops.add(type(v.owner.op))
            stack.extend(v.owner.inputs)
    assert {GpuFromHost, HostFromGpu} <= ops
    assert gx.type == x.type


def test_transfer_sources_are_plain_launchers():
    x = T.dmatrix("x")
    for node in [gpu_from_host(x).owner, host_from_gpu(gpu_from_host(x)).owner]:
        src = node.op.c_cuda_source_apply(node, "node0")
        assert "FFG_CU_LAUNCHER int32_t ffg_cu_node0(" in src
        assert "Python.h" not in src and "numpy" not in src
        assert "cudaMemcpy" in src
    assert "__global__ void ffg_cu_node0_gather" in host_from_gpu(gpu_from_host(x)).owner.op.c_cuda_source_apply(
        host_from_gpu(gpu_from_host(x)).owner, "node0")


# ------------------------------------------------------------------ nvcc: libraries and errors


@needs_nvcc
@pytest.mark.parametrize("linker", ["c", "c|py", "py", "cvm"])
def test_transfer_graph_reports_cuda_error_without_gpu(linker):
    if GPU_OK:
        pytest.skip("a GPU is present: the gpu tier checks values instead")
    x = T.dmatrix("x")
    f = function([x], host_from_gpu(gpu_from_host(x)) * 2, mode=Mode(linker=linker))
    with pytest.raises(CudaError) as info:
        f(np.ones((2, 3)))
    _expect_no_gpu_error(info.value)
    assert "GpuFromHost" in str(info.value) and "cudaMalloc" in str(info.value)
    with pytest.raises(CudaError):   # and again: nothing left half done
        f(np.ones((0, 3)))


@needs_nvcc
@needs_no_gpu
def test_gpu_inputs_are_type_checked_then_reach_the_launcher_without_gpu():
    """Host arrays and device arrays of the wrong dtype are refused; device arrays (a strided one too)
    get to the HostFromGpu launcher, which reports CUDA's "no driver" error: that they are marshaled
    right is seen on a device (test_gpu_transfers_round_trip, test_gpu_a_view_alone_on_the_device)."""
    g = GpuArrayType("float64", (None, None))("g")
    f = function([g], host_from_gpu(g), mode=Mode(linker="c"))
    with pytest.raises(TypeError, match="from_host"):
        f(np.ones((2, 2)))
    with pytest.raises(TypeError, match="dtype"):
        f(FakeCai(np.ones((2, 2), np.float32)))
    # a strided device array reaches the launcher, which needs the GPU (gather kernel or copy)
    host = np.arange(12.0).reshape(3, 4)
    for arr in (host, host[::-1, ::2]):
        with pytest.raises(CudaError) as info:
            f(FakeCai(arr))
        _expect_no_gpu_error(info.value)
        assert "HostFromGpu" in str(info.value)


@needs_nvcc
def test_gpu_library_is_plain_and_for_the_default_archs():
    x = T.fvector("x")
    with config.change_flags(cuda_arch="sm_80,sm_90"):
        f = function([x], host_from_gpu(gpu_from_host(x)), mode=Mode(linker="c"))
    lib = f.maker.linker.compiled.library
    assert cubin_archs(lib.path) == {80, 90}
    assert undefined_python_symbols(lib.path) == []
    desc = lib.describe()
    assert [desc.layout[i] for i in range(desc.n_layout)] == expected_layout()
    exported = subprocess.run(["nm", "-D", "--defined-only", lib.path], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    names = {ln.split()[-1] for ln in exported.splitlines() if " T " in ln}
    assert names == {lib.prefix + "_" + e for e in ("library_api", "version", "describe", "create", "run",
                                                      "destroy", "set_allocator")} | {"ffg_library_api"}, names
    ldd = subprocess.run(["ldd", lib.path], stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert "libcudart" in ldd and "not found" not in ldd and "python" not in ldd.lower()
    source = open(lib.source_path).read()
    assert "Python.h" not in source and "cuda_runtime" not in source   # the C side is plain C
    assert os.path.exists(lib.path[:-3] + ".cu") or os.path.exists(os.path.join(os.path.dirname(lib.path),
                                                                                 "lib.cu"))


@needs_nvcc
def test_set_allocator_contract():
    x = T.fvector("x")
    f = function([x], host_from_gpu(gpu_from_host(x)), mode=Mode(linker="c"))
    compiled = f.maker.linker.compiled
    lib, state = compiled.library, compiled.state
    assert lib.set_allocator(state, 1, ffi.NULL) == 5       # the CPU allocator is P_create's
    assert lib.set_allocator(ffi.NULL, 2, ffi.NULL) == 5
    half = ffi.new("FfgAllocator *")
    assert lib.set_allocator(state, 2, half) == 5           # no alloc/release functions
    assert lib.set_allocator(state, 2, ffi.NULL) == 0


@needs_nvcc
def test_cache_key_covers_nvcc_and_archs():
    from ffigraph.linkers.c.cache import cache_key

    req = dict(cuda_sources=["x"], cuda=dict(nvcc="nvcc", nvcc_version="13.0", nvcc_flags=["a"], cudart_dir="/d"))
    other = dict(req, cuda=dict(req["cuda"], nvcc_flags=["b"]))
    newer = dict(req, cuda=dict(req["cuda"], nvcc_version="13.1"))
    keys = {cache_key("int x;", r) for r in (req, other, newer)}
    assert len(keys) == 3


@needs_nvcc
def test_transfer_launchers_refuse_bad_input_with_ffigraph_codes():
    x = T.dmatrix("x")
    up = gpu_from_host(x).owner
    down = host_from_gpu(gpu_from_host(x)).owner
    lib, path = build_launchers({"ffg_cu_up": up.op.cuda_launcher(up, "ffg_cu_up"),
                                 "ffg_cu_down": down.op.cuda_launcher(down, "ffg_cu_down")}, tag="transfer")
    assert cubin_archs(path) == {90}
    assert undefined_python_symbols(path) == []
    host = np.ones((2, 3))
    cases = [  # (launcher, device, code, bits, shape, data, expected rc, message part)
        (lib.ffg_cu_up, 2, 2, 64, (2, 3), 0x1000, 1, "device type 2"),
        (lib.ffg_cu_up, 1, 2, 32, (2, 3), 0x1000, 1, "dtype"),
        (lib.ffg_cu_up, 1, 2, 64, (6,), 0x1000, 1, "dimensions"),
        (lib.ffg_cu_up, 1, 2, 64, (2, 3), 0, 5, "NULL data"),   # FFG_ERR_ABI since ABI 2.1
        (lib.ffg_cu_down, 1, 2, 64, (2, 3), 0x1000, 1, "device type 1"),
        (lib.ffg_cu_down, 2, 0, 64, (2, 3), 0x1000, 1, "dtype"),
        (lib.ffg_cu_down, 2, 2, 64, (2, 3, 1), 0x1000, 1, "dimensions"),
    ]
    for fn, device, code, bits, shape, data, rc_want, part in cases:
        s = Slots(1, 1)
        s.set(0, shape, code, bits, device_type=device, data=data)
        rc, _, message = s.call(fn)
        assert rc == rc_want and s.err.code == rc, (rc, message)
        assert part in message
    s = Slots(1, 1)
    rc = lib.ffg_cu_up(ffi.NULL, 1, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, s.err)
    assert rc == 5 and "inputs array is NULL" in ffi.string(s.err.message).decode()
    assert lib.ffg_cu_up(s.inputs, 1, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, ffi.NULL) == 5
    s.set(0, (2, 3), 2, 64, device_type=1, data=host.__array_interface__["data"][0])
    s.err.code = 0
    rc = lib.ffg_cu_up(s.inputs, 2, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, s.err)
    assert rc == 5 and "expected 1 inputs" in ffi.string(s.err.message).decode()
    if not GPU_OK:   # good input: CUDA's own error through the record, no crash
        s = Slots(1, 1)
        s.set(0, (2, 3), 2, 64, device_type=1, data=host.__array_interface__["data"][0])
        rc, cuda_code, message = s.call(lib.ffg_cu_up)
        assert rc == 7 and cuda_code in NO_GPU_CUDA_ERRORS and NO_GPU_CUDA_ERRORS[cuda_code] in message


@needs_nvcc
def test_device_array_from_host_says_why_without_gpu():
    if GPU_OK:
        pytest.skip("a GPU is present")
    with pytest.raises(CudaError) as info:
        DeviceArray.from_host(np.ones(3))
    _expect_no_gpu_error(info.value)
    assert not GPU_OK and ("35" in GPU_REASON or "100" in GPU_REASON or "could not be loaded" in GPU_REASON)


# ------------------------------------------------------------------ gpu: real values

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_transfers_round_trip(dtype):
    x = T.tensor(dtype, (None, None), "x")
    out = host_from_gpu(gpu_from_host(x))
    f = function([x], out, mode=Mode(linker="c"))
    base = (np.arange(30) % 7).astype(dtype).reshape(5, 6)
    for arr in (base, base[::-1, ::2], base.T, base[:0], np.broadcast_to(base[:1], (5, 6))):
        assert_matches(f(arr), arr, out.type, 0, 0, dtype=dtype)
    d = DeviceArray.from_host(base)
    assert (d.dtype, d.shape) == (np.dtype(dtype), base.shape)
    np.testing.assert_array_equal(d.get(), base)
    g = GpuArrayType(dtype, (None, None))("g")
    back_out = host_from_gpu(g)
    back = function([g], back_out, mode=Mode(linker="c"))
    assert_matches(back(d), base, back_out.type, 0, 0, dtype=dtype)


@pytest.mark.gpu
def test_gpu_device_mode_matches_numpy():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    out = (T.exp(x) * 2 + y).sum(axis=0) + T.dot(x, y.T).sum()
    f = function([x, y], out, mode=Mode(linker="cvm", device="cuda"))
    _assert_runs_on_the_device(f)           # the values below come from GPU kernels, not a CPU fallback
    a, b = np.random.rand(4, 5), np.random.rand(4, 5)
    assert_matches(f(a, b), (np.exp(a) * 2 + b).sum(0) + (a @ b.T).sum(), out.type, 1e-12, 1e-12, dtype="float64")


@pytest.mark.gpu
def test_gpu_pycuda_op_beside_generated_kernels():
    pytest.importorskip("pycuda", reason="pycuda is not installed (pip install '.[cuda]': it builds where the "
                                         "CUDA headers, cuRAND's included, and a driver's libcuda are)")
    from ffigraph.cuda.elemwise import GpuElemwise
    from ffigraph.cuda.pycuda_ops import PyCUDADoubleOp
    from ffigraph.scalar import basic as scalar

    x = T.fmatrix("x")
    out = host_from_gpu(PyCUDADoubleOp()(GpuElemwise(scalar.exp)(gpu_from_host(x))))
    f = function([x], out, mode=Mode(linker="cvm"))
    a = np.random.rand(5, 5).astype(np.float32)
    assert_matches(f(a), np.exp(a) * 2, out.type, 1e-6, 1e-6, dtype="float32")


# ------------------------------------------------------------------ nvcc and gpu: the host's device allocator


def _allocator_function():
    """x -> [x * x kept on the device, the same moved back]: the device output and gpu_from_host's
    block come from the device allocator (the same graph on both tiers: nvcc compiles it here)."""
    from ffigraph.cuda.elemwise import GpuElemwise
    from ffigraph.scalar.basic import SCALAR_OPS

    x = T.dvector("x")
    g = gpu_from_host(x)
    square = GpuElemwise(SCALAR_OPS["mul"])(g, g)
    outs = [square, host_from_gpu(square)]
    return function([x], outs, mode=Mode(linker="c")), outs


@needs_nvcc
@needs_no_gpu
def test_device_memory_comes_from_the_host_allocator_without_gpu():
    """The host's allocator is installed and asked for the first block (40 bytes), which is released
    exactly once when the copy into it fails with CUDA's "no driver" error; an allocator that gives
    nothing is a MemoryError. That device memory from it works: test_gpu_host_device_allocator."""
    from ffigraph.cuda.allocator import set_device_allocator

    calls = []
    host_blocks = {}

    def alloc(nbytes):   # host memory standing in for a pool: the copy into it fails without a driver
        buf = np.empty(nbytes, np.uint8)
        address = buf.__array_interface__["data"][0]
        host_blocks[address] = buf
        calls.append(("alloc", nbytes))
        return address

    def free(address):
        calls.append(("free", address))
        del host_blocks[address]

    x = T.dvector("x")
    chosen = set_device_allocator(alloc, free)
    try:
        f, _ = _allocator_function()
        assert f.maker.linker.compiled.device_allocator is chosen
        with pytest.raises(CudaError) as info:
            f(np.arange(5.0))
        _expect_no_gpu_error(info.value)
        assert "cudaMemcpy" in str(info.value)          # the allocation itself succeeded
        assert calls[0] == ("alloc", 40) and calls[1][0] == "free" and not host_blocks   # freed exactly once

        calls.clear()
        set_device_allocator(lambda n: 0, free)         # a pool that is out of memory
        g = function([x], host_from_gpu(gpu_from_host(x)) + 1, mode=Mode(linker="c"))
        with pytest.raises(MemoryError, match="device allocator could not give 24 bytes"):
            g(np.arange(3.0))
        assert calls == []
    finally:
        set_device_allocator()


class _CountingDevicePool:
    """alloc/free for set_device_allocator over cudaMalloc/cudaFree (ffigraph.cuda.runtime), keeping
    count: every block it handed out and not yet got back, by address."""

    def __init__(self):
        self.blocks = {}   # address -> (the cudaMalloc pointer, freed when dropped; nbytes)
        self.allocs = self.frees = 0

    def alloc(self, nbytes):
        from ffigraph.cuda import runtime

        ptr = runtime.malloc(nbytes)
        address = int(ffi.cast("uintptr_t", ptr))
        self.blocks[address] = (ptr, nbytes)
        self.allocs += 1
        return address

    def free(self, address):
        assert address in self.blocks, "0x%x: freed twice, or never handed out" % address
        del self.blocks[address]
        self.frees += 1

    def owns(self, address, nbytes):
        return any(a <= address and address + nbytes <= a + max(n, 1) for a, (_, n) in self.blocks.items())


def _device_address(value):
    return value.__cuda_array_interface__["data"][0]


def _assert_no_device_memory_leak(call, label, leaked_per_call, calls=128, rounds=3):
    """``calls`` calls of ``call`` leave the device's free memory (cudaMemGetInfo) within a quarter of
    what a leak of ``leaked_per_call`` bytes a call would take, in one of ``rounds`` rounds at least.
    Other processes on the GPU (xdist workers) take and give back memory during a round (up to 200 MB
    was seen with 8 workers on an H100), a leak takes its share in every round: 128 calls of a 16 MiB
    leak take 2 GiB, and a leak of half of that (one block of two) still 1 GiB, over the 512 MiB bound."""
    bound = calls * leaked_per_call // 4
    drops = []
    for _ in range(rounds):
        before = device_memory()[0]
        for _ in range(calls):
            call()
        drop = before - device_memory()[0]
        if drop <= bound:
            return
        drops.append(drop)
    raise AssertionError("%s: the device's free memory fell in each of %d rounds of %d calls, by %s bytes "
                         "(bound %d)" % (label, rounds, calls, drops, bound))


@pytest.mark.gpu
def test_gpu_host_device_allocator():
    """A host allocator over cudaMalloc/cudaFree, given by set_device_allocator: a kernel writes the
    device output into a block of it, the values round-trip (numpy's x * x, float64, NaN/inf, strided
    and empty inputs), every block comes back exactly once when the results are dropped, and 128 more
    calls of 8 MiB blocks leave the device's free memory where it was (cudaMemGetInfo, see
    _assert_no_device_memory_leak); the library's own allocator (none set) leaks nothing either."""
    import gc

    from ffigraph.cuda import to_host
    from ffigraph.cuda.allocator import set_device_allocator

    n = 1 << 20   # 8 MiB of float64 per block
    x = np.linspace(-3.0, 3.0, n)
    x[:3] = [np.nan, np.inf, -np.inf]
    pool = _CountingDevicePool()

    def call(f, outs, value, owned_by=None):
        dev, host = f(value)
        want = value * value
        if owned_by is not None and value.size:
            assert owned_by.owns(_device_address(dev), value.nbytes), "the device output is not the pool's"
        assert_matches(host, want, outs[1].type, 0, 0, dtype="float64")
        assert_matches(to_host(dev), want, outs[0].type, 0, 0, dtype="float64")
        del dev, host
        if not CPYTHON:
            gc.collect()   # the blocks go back when the results are collected

    chosen = set_device_allocator(pool.alloc, pool.free, name="counting pool")
    try:
        f, outs = _allocator_function()
        assert f.maker.linker.compiled.device_allocator is chosen
        for value in (x, x[::-3], x[:0], x[:1]):
            call(f, outs, value, pool)
            assert pool.blocks == {} and pool.allocs == pool.frees
        assert pool.allocs >= 3   # the output's block at least, every non-empty call
        # a leak of the blocks: 2 x 8 MiB a call
        _assert_no_device_memory_leak(lambda: call(f, outs, x, pool), "the host's allocator", 2 * x.nbytes)
        assert pool.blocks == {} and pool.allocs == pool.frees
    finally:
        set_device_allocator()
    f, outs = _allocator_function()          # no allocator set: the library's cudaMalloc (or pycuda's pool)
    assert f.maker.linker.compiled.device_allocator is not chosen
    call(f, outs, x)
    _assert_no_device_memory_leak(lambda: call(f, outs, x), "the library's own device allocator", 2 * x.nbytes)


@needs_nvcc
def test_nvcc_sees_the_abi_structs_as_cffi_does():
    """The launchers are C++ compiled by nvcc: their view of every ABI struct must be cffi's."""
    probe = r"""
extern "C" __attribute__((visibility("default"))) int32_t ffg_cu_layout_probe(int64_t *out)
{
    static const int64_t layout[] = {FFG_LAYOUT_ENTRIES};
    int32_t n = (int32_t)(sizeof layout / sizeof layout[0]);
    memcpy(out, layout, sizeof layout);
    return n;
}"""
    lib, _ = build_launchers({"ffg_cu_layout_probe": probe}, tag="layout",
                             declarations={"ffg_cu_layout_probe": "int32_t ffg_cu_layout_probe(int64_t *out);"})
    out = ffi.new("int64_t[]", 64)
    n = lib.ffg_cu_layout_probe(out)
    assert [out[i] for i in range(n)] == expected_layout()


# ------------------------------------------------------------------ always: the GPU rewrite


def _op_names(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


def _assert_runs_on_the_device(f):
    """f's arithmetic runs on the GPU: every node but the transfers at the edges is a GPU node, and
    they all run in one whole-graph library that nvcc built (cubins for the architectures this
    configuration targets, linked to the CUDA runtime)."""
    names = _op_names(f)
    assert {"GpuElemwise", "GpuReduce", "GpuDot"} <= set(names), names
    assert all(n.startswith("Gpu") or n == "HostFromGpu" for n in names), names
    assert (names.count("GpuFromHost"), names.count("HostFromGpu")) == (len(f.maker.fgraph.inputs), 1), names
    assert (getattr(f.maker.linker, "chosen", None) or f.maker.linker).name == "c"
    assert cubin_archs(f.library_path) == {int(a[len("sm_"):]) for a in toolchain.target_archs()}
    ldd = subprocess.run(["ldd", f.library_path], stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert "libcudart" in ldd, ldd


def test_device_mode_moves_supported_nodes_with_transfers_at_the_edges():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    out = (T.exp(x) * 2 + y).sum(axis=0) + T.dot(x, y.T).sum() + T.argmax(x, axis=0)
    f = function([x, y], out, mode=Mode(linker="py", device="cuda"))   # py: nothing is compiled here
    names = _op_names(f)
    assert names.count("GpuFromHost") == 3            # x, y, and the argmax that stays on the CPU
    assert names.count("HostFromGpu") == 1            # the one result
    assert {"GpuElemwise", "GpuReduce", "GpuDot", "GpuDimShuffle"} <= set(names)
    assert "ArgReduce" in names
    assert not {"Elemwise", "FusedElemwise", "FusedReduce", "Dot", "DimShuffle"} & set(names), names
    cpu = function([x, y], out, mode=Mode(linker="py"))
    assert not [n for n in _op_names(cpu) if n.startswith(("Gpu", "Host"))]


def test_device_mode_keeps_unsupported_nodes_on_the_cpu():
    z = T.zvector("z")   # complex: no GPU code
    f = function([z], T.exp(z) * 2, mode=Mode(linker="py", device="cuda"))
    assert not [n for n in _op_names(f) if n.startswith("Gpu")]
    x = T.dvector("x")
    g = function([x], T.sort(x), mode=Mode(linker="py", device="cuda"))   # no GPU sort: it stays
    assert _op_names(g) == ["SortOp"]


def test_gpu_dimshuffle_is_a_view():
    from ffigraph.cuda.views import GpuDimShuffle

    arr = np.zeros((3, 4), np.float32)
    g = GpuArrayType("float32", (None, None))("g")
    node = GpuDimShuffle(2, (1, "x", 0))(g).owner
    cell = [None]
    node.op.perform(node, [FakeCai(arr)], [cell])
    out = cell[0]
    assert out.shape == (4, 1, 3) and out.view.element_strides() == (1, 0, 4)
    assert out.ptr == arr.__array_interface__["data"][0]
    with pytest.raises(TypeError, match="GPU tensor"):
        GpuDimShuffle(2, (1, 0))(T.fmatrix())


@needs_nvcc
@needs_no_gpu
@pytest.mark.parametrize("linker", ["c", "cvm"])
def test_device_mode_graph_builds_and_reports_cuda_errors_without_gpu(linker):
    """A device-mode graph compiles and its call reports CUDA's "no driver" error (its values on a
    device: test_gpu_device_mode_matches_numpy)."""
    x, y = T.fmatrix("x"), T.fmatrix("y")
    f = function([x, y], (T.exp(x) * y).sum(axis=1) + T.dot(x, y.T).max(), mode=Mode(linker=linker, device="cuda"))
    _assert_runs_on_the_device(f)
    with pytest.raises(CudaError) as info:
        f(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    _expect_no_gpu_error(info.value)


def _identity_function():
    """A GPU input that is also the output: a DeepCopyOp, so the result shares no memory with it."""
    g = GpuArrayType("float32", (None,))("g")
    return function([g], g, mode=Mode(linker="cvm")), g


@needs_nvcc
@needs_no_gpu
def test_gpu_output_that_is_an_input_asks_for_a_device_copy_without_gpu():
    """The copy is a device allocation (cudaMalloc, which reports CUDA's "no driver" error here), not a
    host memcpy of a device pointer; that it copies: test_gpu_output_that_is_an_input_is_copied_on_the_device."""
    f, _ = _identity_function()
    assert _op_names(f) == ["DeepCopyOp"]
    with pytest.raises(CudaError) as info:
        f(FakeCai(np.ones(4, np.float32)))
    _expect_no_gpu_error(info.value)
    assert "cudaMalloc" in str(info.value)


@pytest.mark.gpu
def test_gpu_output_that_is_an_input_is_copied_on_the_device():
    """The result of a graph whose output is its GPU input: the same bits (NaN, -0.0, inf), in a device
    buffer that does not overlap the input's, unchanged when the input is overwritten afterwards;
    a reversed (negative-stride) device view gives its values, in a buffer of its own."""
    from ffigraph.cuda import runtime, to_host

    f, g = _identity_function()
    assert _op_names(f) == ["DeepCopyOp"]
    host = np.array([1.5, -0.0, np.nan, np.inf, -np.inf, -3.25, 7.0], np.float32)
    d = DeviceArray.from_host(host)
    nbytes = host.nbytes

    def disjoint(a, b):
        return a + nbytes <= b or b + nbytes <= a

    out = f(d)
    assert out is not d and disjoint(_device_address(out), d.ptr), (_device_address(out), d.ptr)
    got = to_host(out)
    assert_matches(got, host, g.type, 0, 0, dtype="float32")
    assert got.tobytes() == host.tobytes()                   # bit for bit: -0.0 and the NaN too
    runtime.memcpy(ffi.cast("void *", d.ptr), ffi.from_buffer(np.zeros_like(host)), nbytes,
                   runtime.MEMCPY_HOST_TO_DEVICE)
    np.testing.assert_array_equal(d.get(), np.zeros_like(host))
    assert to_host(out).tobytes() == host.tobytes()          # the copy kept its values

    runtime.memcpy(ffi.cast("void *", d.ptr), ffi.from_buffer(host), nbytes, runtime.MEMCPY_HOST_TO_DEVICE)
    reversed_view = DeviceArray(d.ptr + (host.size - 1) * 4, host.shape, np.float32, strides=(-1,), owner=d)
    out = f(reversed_view)
    assert disjoint(_device_address(out), d.ptr)
    got = to_host(out)
    assert_matches(got, host[::-1], g.type, 0, 0, dtype="float32")
    assert got.tobytes() == host[::-1].tobytes()


def _view_alone_function():
    """A transpose of a GPU input, moved back: the view's library has no kernel of its own."""
    from ffigraph.cuda.views import GpuDimShuffle

    g = GpuArrayType("float32", (None, None))("g")
    out = host_from_gpu(GpuDimShuffle(2, (1, 0))(g))
    return function([g], out, mode=Mode(linker="c|py")), out


@needs_nvcc
@needs_no_gpu
def test_a_view_alone_on_the_device_links_the_cuda_object_without_gpu():
    """The view's own library loads and runs (an unlinked CUDA object would fail to load); the copy
    back reports CUDA's "no driver" error. Its values: test_gpu_a_view_alone_on_the_device."""
    f, _ = _view_alone_function()
    with pytest.raises(CudaError) as info:
        f(FakeCai(np.ones((2, 3), np.float32)))
    _expect_no_gpu_error(info.value)
    assert "HostFromGpu" in str(info.value)


@pytest.mark.gpu
def test_gpu_a_view_alone_on_the_device():
    f, out = _view_alone_function()
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    a[0, :3] = [np.nan, np.inf, -0.0]
    for value in (a, a[::-1, ::2], a[:0]):
        assert_matches(f(DeviceArray.from_host(value)), value.T, out.type, 0, 0, dtype="float32")

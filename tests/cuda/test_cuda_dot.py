"""GpuDot (ffigraph/cuda/dot.py): generated source, launchers compiled by nvcc, and results on a GPU.

Tiers (see tests/cuda_helpers.py):
  always   the node's types and the generated .cu text, for the four shape cases and several dtypes,
           the cuBLAS variant's text (cuBLAS forced on; never compiled here), make_node's errors;
  nvcc     every tiled launcher compiled in ONE nvcc run, then called by hand with ABI tensors: bad
           inputs are refused with the right code, good ones reach CUDA and fail with its own
           "no driver"/"no device" error on a GPU-less machine, never a crash (those tests show only
           that the error is reported, and their names end in _without_gpu);
  gpu      results against NumPy on a device (skipped without one).
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from cuda_helpers import NO_GPU_CUDA_ERRORS, Functions, needs_no_gpu, Slots, build_launchers, cubin_archs, needs_nvcc, \
    undefined_python_symbols
from ffigraph.abi import dtype_code, ffi
from ffigraph.cuda import toolchain
from ffigraph.cuda.dot import TILE, GpuDot, gpu_dot_supported
from ffigraph.cuda.prelude import LAUNCHER_PARAMS
from ffigraph.cuda.type import GpuArrayType
from ffigraph.tensor.math import Dot

CASES = {"mm": (2, 2), "mv": (2, 1), "vm": (1, 2), "vv": (1, 1)}
DTYPES = ("float32", "float64", "int32", "int64", "uint8", "bool")
# (x dtype, y dtype): promoted like NumPy, converted inside the kernel
MIXED = (("int32", "float64"), ("bool", "int32"), ("int8", "uint8"))

FFG_ERR_TYPE, FFG_ERR_VALUE, FFG_ERR_ABI, FFG_ERR_CUDA = 1, 2, 5, 7
CUDA = 2


def gpu_var(dtype, ndim, name, static=None):
    return GpuArrayType(dtype, static if static is not None else (None,) * ndim)(name)


def dot_node(case, dx, dy=None):
    xnd, ynd = CASES[case]
    return GpuDot().make_node(gpu_var(dx, xnd, "x"), gpu_var(dy or dx, ynd, "y"))


def source(node, symbol="ffg_cu_t"):
    return node.op.cuda_launcher(node, symbol)


@pytest.fixture
def no_cublas(monkeypatch):
    monkeypatch.setattr(toolchain, "cublas_available", lambda nvcc=None: False)


@pytest.fixture
def with_cublas(monkeypatch):
    """Pretend the toolkit has cuBLAS (the text is checked, never compiled: there is none here)."""
    monkeypatch.setattr(toolchain, "cublas_available", lambda nvcc=None: True)
    monkeypatch.setattr(toolchain, "runtime_lib_dir", lambda nvcc=None: "/opt/cuda/lib64")


# ================================================================== always: types and source


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_output_type_matches_numpy_dot(case, dtype):
    xnd, ynd = CASES[case]
    xs = (3, 5) if xnd == 2 else (5,)
    ys = (5, 4) if ynd == 2 else (5,)
    node = GpuDot().make_node(gpu_var(dtype, xnd, "x", xs), gpu_var(dtype, ynd, "y", ys))
    want = np.dot(np.zeros(xs, dtype), np.zeros(ys, dtype))   # numpy's dtype and static shape
    out = node.outputs[0].type
    assert isinstance(out, GpuArrayType)
    assert (out.dtype, out.shape) == (want.dtype.name, want.shape)
    assert out.ndim == xnd + ynd - 2


@pytest.mark.parametrize("dx,dy", MIXED + (("float32", "float64"), ("uint8", "int64")))
def test_mixed_dtypes_promote_like_numpy(dx, dy):
    node = GpuDot().make_node(gpu_var(dx, 2, "x"), gpu_var(dy, 1, "y"))
    assert node.outputs[0].type.dtype == np.result_type(dx, dy).name


def test_infer_shape_and_props():
    node = dot_node("mm", "float32")
    assert node.op.infer_shape(None, node, [("m", "k"), ("k", "n")]) == [("m", "n")]
    assert node.op.infer_shape(None, dot_node("vv", "float32"), [("k",), ("k",)]) == [()]
    assert node.op.infer_shape(None, dot_node("mv", "float32"), [("m", "k"), ("k",)]) == [("m",)]
    assert node.op.infer_shape(None, dot_node("vm", "float32"), [("k",), ("k", "n")]) == [("n",)]
    assert GpuDot() == GpuDot() and hash(GpuDot()) == hash(GpuDot())


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_source_structure(case, dtype, no_cublas):
    text = source(dot_node(case, dtype))
    params = " ".join(LAUNCHER_PARAMS.split())
    head = text[text.index("FFG_CU_LAUNCHER int32_t ffg_cu_t("):]
    assert " ".join(head[:head.index(")") + 1].split()) == "FFG_CU_LAUNCHER int32_t ffg_cu_t(%s)" % params
    assert text.count("FFG_CU_LAUNCHER") == 1
    assert "static __global__ void __launch_bounds__(%d * %d)\nffg_cu_t_tiled(" % (TILE, TILE) in text
    assert text.count("__shared__") == 2 and "__syncthreads();" in text
    assert "ffg_cu_t_tiled<<<grid, block>>>" in text
    assert "ffg_cu_check_call(" in text and text.count("ffg_cu_check_tensor(") == 2
    assert "ffg_cu_alloc_array(device_alloc," in text and "ffg_cu_set_output(&outputs[0]" in text
    assert "cudaMemsetAsync" in text   # K == 0
    for word in ("Python.h", "numpy", "Py_", "PyObject", "cublas"):
        assert word not in text
    xnd, ynd = CASES[case]
    code, bits = dtype_code(dtype)
    assert "FFG_DEVICE_CUDA, %d, %d, %d)" % (code, bits, xnd) in text
    assert "FFG_DEVICE_CUDA, %d, %d, %d)" % (code, bits, ynd) in text
    assert "ffg_cu_set_output(&outputs[0], data, FFG_DEVICE_CUDA, %d, %d, %d, out_shape)" \
        % (code, bits, xnd + ynd - 2) in text
    # how the sum is kept: the float itself, wrapping unsigned integers, or or-of-ands
    if dtype == "bool":
        assert "unsigned int acc = 0;" in text and "acc |= a_k & b_k;" in text
    elif dtype.startswith("float"):
        assert "%s acc = 0;" % ("float" if dtype == "float32" else "double") in text
    else:
        assert "%s acc = 0;" % ("uint64_t" if dtype == "int64" else "uint32_t") in text
    # every line indented by spaces, none absurdly long
    assert "\t" not in text
    assert max(len(line) for line in text.splitlines()) <= 120


def test_source_names_come_from_the_symbol(no_cublas):
    node = dot_node("mm", "float64")
    a, b = source(node, "ffg_cu_node1"), source(node, "ffg_cu_node2")
    assert "ffg_cu_node1_tiled" in a and "ffg_cu_node2" not in a
    assert "ffg_cu_node2_tiled" in b and "ffg_cu_node1" not in b
    assert node.op.c_libraries() == [] and node.op.c_lib_dirs() == []


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cublas_variant_source(case, dtype, with_cublas):
    node = dot_node(case, dtype)
    assert node.op.uses_cublas(node)
    text = source(node)
    gemm = "cublasSgemm" if dtype == "float32" else "cublasDgemm"
    other = "cublasDgemm" if dtype == "float32" else "cublasSgemm"
    assert "#include <cublas_v2.h>" in text and "status = %s(handle," % gemm in text and other not in text
    assert "cublasCreate(&handle)" in text and "std::lock_guard<std::mutex>" in text
    assert "CUBLAS_STATUS_EXECUTION_FAILED" in text and "FFG_ERR_CUDA" in text
    # the handle helpers are shared by every node of a library (guarded), the gemm call is the node's
    assert "#ifndef FFG_CU_DOT_CUBLAS" in text and "ffg_cu_t_cublas(" in text
    # column-major cuBLAS computes out^T = B^T A^T: N and M swap, B comes first
    assert "(int)N, (int)M, (int)K, &one, b, (int)ldb, a, (int)lda, &zero, out, (int)N);" in text
    # the tiled kernel stays for layouts cuBLAS cannot read
    assert "ffg_cu_t_tiled<<<" in text and "__shared__" in text
    assert node.op.c_libraries() == ["cublas"] and node.op.c_lib_dirs() == ["/opt/cuda/lib64"]
    assert "Python.h" not in text


@pytest.mark.parametrize("dx,dy", [("int32", "int32"), ("bool", "bool"), ("float32", "float64"),
                                   ("int32", "float64")])
def test_cublas_only_for_one_float_dtype(dx, dy, with_cublas):
    node = dot_node("mm", dx, dy)
    assert not node.op.uses_cublas(node)
    assert "cublas" not in source(node)


def test_cache_version_follows_cublas(monkeypatch):
    monkeypatch.setattr(toolchain, "cublas_available", lambda nvcc=None: False)
    without = GpuDot().c_code_cache_version()
    monkeypatch.setattr(toolchain, "cublas_available", lambda nvcc=None: True)
    assert GpuDot().c_code_cache_version() != without


def test_make_node_errors():
    with pytest.raises(TypeError, match="1-d and 2-d"):
        GpuDot().make_node(gpu_var("float32", 3, "x"), gpu_var("float32", 1, "y"))
    with pytest.raises(TypeError, match="1-d and 2-d"):
        GpuDot().make_node(gpu_var("float32", 0, "x"), gpu_var("float32", 1, "y"))
    with pytest.raises(TypeError, match="not on the GPU"):
        GpuDot().make_node(T.matrix(dtype="float32"), gpu_var("float32", 2, "y"))
    with pytest.raises(TypeError, match="not on the GPU"):
        GpuDot().make_node(gpu_var("float32", 2, "x"), T.vector(dtype="float32"))
    with pytest.raises(TypeError, match="complex64"):
        GpuDot().make_node(gpu_var("complex64", 2, "x"), gpu_var("complex64", 2, "y"))
    with pytest.raises(ValueError):   # static inner lengths that differ (the CPU Dot's rule)
        GpuDot().make_node(gpu_var("float32", 2, "x", (3, 4)), gpu_var("float32", 1, "y", (5,)))


def test_gpu_dot_supported():
    def node(dx, dy):
        return Dot().make_node(T.matrix(dtype=dx), T.vector(dtype=dy))

    assert gpu_dot_supported(node("float32", "float32"))
    assert gpu_dot_supported(node("int64", "bool"))
    assert gpu_dot_supported(node("uint8", "int8"))
    assert not gpu_dot_supported(node("complex128", "float64"))
    assert not gpu_dot_supported(node("float32", "complex64"))


# ================================================================== nvcc: compiled, called without a GPU


def _symbol(case, dx, dy):
    return "ffg_cu_dot_%s_%s_%s" % (case, dx, dy)


@pytest.fixture(scope="module")
def compiled():
    """Every tiled launcher (4 cases x DTYPES, and the mixed pairs) in one library: one nvcc run."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(toolchain, "cublas_available", lambda nvcc=None: False)
        launchers = {}
        for case in sorted(CASES):
            for dx, dy in [(d, d) for d in DTYPES] + list(MIXED):
                launchers[_symbol(case, dx, dy)] = source(dot_node(case, dx, dy), _symbol(case, dx, dy))
        return build_launchers(launchers, tag="dot")


def launcher(compiled, case, dx, dy=None):
    return getattr(compiled[0], _symbol(case, dx, dy or dx))


def good_slots(case, dtype, k=5, m=3, n=4, dy=None):
    xnd, ynd = CASES[case]
    s = Slots(2, 1)
    s.set(0, (m, k) if xnd == 2 else (k,), *dtype_code(dtype))
    s.set(1, (k, n) if ynd == 2 else (k,), *dtype_code(dy or dtype), data=0x2000)
    return s


def assert_no_gpu_error(s, got):
    rc, reserved, message = got
    assert rc == FFG_ERR_CUDA and s.err.code == rc, got
    assert reserved in NO_GPU_CUDA_ERRORS, got
    assert NO_GPU_CUDA_ERRORS[reserved] in message and "CUDA error %d" % reserved in message, got


@needs_nvcc
def test_library_is_sm90_and_python_free(compiled):
    lib, path = compiled
    assert cubin_archs(path) == {90}
    assert undefined_python_symbols(path) == []


@needs_no_gpu
@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_good_inputs_reach_cuda_without_gpu(compiled, case, dtype):
    s = good_slots(case, dtype)
    assert_no_gpu_error(s, s.call(launcher(compiled, case, dtype)))
    assert s.owned[0] == ffi.NULL


@needs_no_gpu
@needs_nvcc
@pytest.mark.parametrize("dx,dy", MIXED)
def test_good_mixed_inputs_reach_cuda_without_gpu(compiled, dx, dy):
    s = good_slots("mv", dx, dy=dy)
    assert_no_gpu_error(s, s.call(launcher(compiled, "mv", dx, dy)))


@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_inputs_are_refused(compiled, case):
    fn = launcher(compiled, case, "float32")
    xnd, ynd = CASES[case]
    f32, f64 = dtype_code("float32"), dtype_code("float64")

    s = good_slots(case, "float32")
    s.set(0, (3, 5) if xnd == 2 else (5,), *f32, device_type=1)           # on the CPU
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_TYPE == s.err.code and "input 0" in msg and "CPU" in msg, msg

    s = good_slots(case, "float32")
    s.set(1, (5, 4) if ynd == 2 else (5,), *f64, data=0x2000)               # wrong dtype
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_TYPE == s.err.code and "input 1" in msg and "bits 64" in msg, msg

    s = good_slots(case, "float32")
    s.set(0, (3, 5, 2), *f32)                                               # wrong ndim
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_TYPE == s.err.code and "3 dimensions, expected %d" % xnd in msg, msg

    s = good_slots(case, "float32")
    s.set(1, (5, 4) if ynd == 2 else (5,), *f32, data=0)                     # NULL data, 20 elements
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_ABI == s.err.code and "NULL data" in msg, msg

    s = good_slots(case, "float32", k=7)
    s.set(1, (9, 4) if ynd == 2 else (9,), *f32, data=0x2000)               # 7 columns, 9 rows
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_VALUE == s.err.code and "7" in msg and "9" in msg and "aligned" in msg, msg

    s = good_slots(case, "float32")
    s.set(0, (-3, 5) if xnd == 2 else (-5,), *f32)                          # negative length
    rc, _, msg = s.call(fn)
    assert rc == FFG_ERR_VALUE == s.err.code and "negative" in msg, msg


@needs_nvcc
def test_abi_misuse_is_refused(compiled):
    fn = launcher(compiled, "mm", "float64")
    s = good_slots("mm", "float64")
    s.err.code = 0
    rc = fn(ffi.NULL, 2, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, s.err)
    assert rc == FFG_ERR_ABI == s.err.code and "inputs array is NULL" in ffi.string(s.err.message).decode()
    s.err.code = 0
    rc = fn(s.inputs, 1, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, s.err)
    assert rc == FFG_ERR_ABI == s.err.code and "expected 2 inputs" in ffi.string(s.err.message).decode()
    s.err.code = 0
    rc = fn(s.inputs, 2, ffi.NULL, s.owned, 1, ffi.NULL, ffi.NULL, s.err)
    assert rc == FFG_ERR_ABI == s.err.code
    assert fn(s.inputs, 2, s.outputs, s.owned, 1, ffi.NULL, ffi.NULL, ffi.NULL) == FFG_ERR_ABI


@needs_no_gpu
@needs_nvcc
@pytest.mark.parametrize("m,k,n", [(0, 5, 4), (3, 0, 4), (3, 5, 0), (0, 0, 0)])
def test_empty_and_k0_with_no_allocator_reach_cudamalloc_without_gpu(compiled, m, k, n):
    # NULL data is fine for empty inputs; the result's cudaMalloc is the first CUDA call (the values of
    # empty and K == 0 products on a device: test_gpu_k0_and_empty)
    s = Slots(2, 1)
    s.set(0, (m, k), *dtype_code("int32"), data=0x1000 if m * k else 0)
    s.set(1, (k, n), *dtype_code("int32"), data=0x2000 if k * n else 0)
    assert_no_gpu_error(s, s.call(launcher(compiled, "mm", "int32")))


class FakeDeviceAllocator:
    """An FfgAllocator handing out host blocks, counting them: it lets a launcher get past its
    allocation on a machine without a GPU (the blocks are never given to a kernel)."""

    def __init__(self):
        self.live = {}
        self.calls = []

        @ffi.callback("void *(void *, size_t)")
        def alloc(ctx, nbytes):
            block = ffi.new("char[]", nbytes)
            self.live[int(ffi.cast("uintptr_t", block))] = block
            self.calls.append(("alloc", nbytes))
            return block

        @ffi.callback("void (void *, void *)")
        def release(ctx, ptr):
            self.calls.append(("release", nbytes_of(ptr)))
            del self.live[int(ffi.cast("uintptr_t", ptr))]

        def nbytes_of(ptr):
            return ffi.sizeof(self.live[int(ffi.cast("uintptr_t", ptr))])

        self._keep = (alloc, release)
        self.struct = ffi.new("FfgAllocator *")
        self.struct.alloc, self.struct.release, self.struct.ctx = alloc, release, ffi.NULL


def call_with(fn, s, allocator):
    s.err.code = 0
    s.err.detail = 0
    rc = fn(s.inputs, 2, s.outputs, s.owned, 1, ffi.NULL, allocator.struct, s.err)
    return rc, s.err.detail, ffi.string(s.err.message).decode()


@needs_nvcc
@pytest.mark.parametrize("case", ["mm", "mv", "vm"])   # a vector . vector result is never empty
def test_empty_result_launches_nothing(compiled, case):
    # an empty M or N: the (device allocator's) block is the whole result, no CUDA work at all
    xnd, ynd = CASES[case]
    al = FakeDeviceAllocator()
    s = Slots(2, 1)
    s.set(0, (0, 5) if xnd == 2 else (5,), *dtype_code("float64"))
    s.set(1, (5, 0) if ynd == 2 else (5,), *dtype_code("float64"), data=0x2000)
    rc, _, msg = call_with(launcher(compiled, case, "float64"), s, al)
    assert rc == 0 == s.err.code, msg
    out = s.outputs[0]
    assert out.ndim == xnd + ynd - 2 and list(out.shape[0:out.ndim]) == [0] * out.ndim
    assert (out.dtype.code, out.dtype.bits, out.device.device_type) == (2, 64, CUDA)
    assert out.data == s.owned[0] != ffi.NULL and len(al.live) == 1
    assert al.calls == [("alloc", 1)]   # an empty block is still a distinct releasable one


@needs_no_gpu
@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_failed_call_releases_its_result_without_gpu(compiled, case):
    # K == 0 fills zeros with cudaMemsetAsync, which has no driver here: the result block goes back
    xnd, ynd = CASES[case]
    al = FakeDeviceAllocator()
    s = Slots(2, 1)
    s.set(0, (3, 0) if xnd == 2 else (0,), *dtype_code("uint8"), data=0)
    s.set(1, (0, 4) if ynd == 2 else (0,), *dtype_code("uint8"), data=0)
    got = call_with(launcher(compiled, case, "uint8"), s, al)
    assert_no_gpu_error(s, got)
    assert "cudaMemsetAsync" in got[2]
    size = (3 if xnd == 2 else 1) * (4 if ynd == 2 else 1)
    assert al.calls == [("alloc", size), ("release", size)] and not al.live
    assert s.owned[0] == ffi.NULL


# ================================================================== gpu: results on a device


def _api():
    from ffigraph.cuda import DeviceArray, gpu_from_host, host_from_gpu

    return DeviceArray, gpu_from_host, host_from_gpu


def _tol(dtype, k):
    if dtype == "float32":
        return dict(rtol=1e-4, atol=1e-5 * max(k, 1) * 9)
    if dtype == "float64":
        return dict(rtol=1e-10, atol=1e-13 * max(k, 1) * 9)
    return {}


def _sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.6
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0 if dtype.startswith("u") else -5, 6, size=shape).astype(dtype)
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def _shapes(case, m, k, n):
    xnd, ynd = CASES[case]
    return ((m, k) if xnd == 2 else (k,)), ((k, n) if ynd == 2 else (k,))


def _gpu_dot_function(dx, dy, xnd, ynd):
    import ffigraph

    _, gpu_from_host, host_from_gpu = _api()
    x, y = T.tensor(dx, (None,) * xnd), T.tensor(dy, (None,) * ynd)
    return ffigraph.function([x, y], host_from_gpu(GpuDot()(gpu_from_host(x), gpu_from_host(y))))


def _check(got, a, b):
    want = np.dot(a, b)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    k = a.shape[-1]
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, **_tol(want.dtype.name, k))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", DTYPES + ("int8", "uint16"))
def test_gpu_matches_numpy(case, dtype):
    f = _gpu_dot_function(dtype, dtype, *CASES[case])
    for m, k, n in ((3, 5, 4), (1, 1, 1), (17, 33, 19), (40, 100, 70)):
        xs, ys = _shapes(case, m, k, n)
        a, b = _sample(dtype, xs, 1), _sample(dtype, ys, 2)
        _check(f(a, b), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dx,dy", MIXED + (("float32", "float64"), ("int64", "uint8")))
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_mixed_dtypes(dx, dy, case):
    f = _gpu_dot_function(dx, dy, *CASES[case])
    xs, ys = _shapes(case, 6, 21, 5)
    a, b = _sample(dx, xs, 3), _sample(dy, ys, 4)
    _check(f(a, b), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_gpu_k0_and_empty(case, dtype):
    f = _gpu_dot_function(dtype, dtype, *CASES[case])
    for m, k, n in ((3, 0, 4), (0, 5, 4), (3, 5, 0), (0, 0, 0)):
        xs, ys = _shapes(case, m, k, n)
        a, b = _sample(dtype, xs), _sample(dtype, ys)
        _check(f(a, b), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "int8", "int64", "uint32"])
def test_gpu_integer_overflow_wraps(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    a = rng.integers(info.max // 2, info.max, size=(5, 37), dtype=dtype)
    b = rng.integers(info.max // 2, info.max, size=(37, 6), dtype=dtype)
    _check(_gpu_dot_function(dtype, dtype, 2, 2)(a, b), a, b)
    _check(_gpu_dot_function(dtype, dtype, 1, 1)(a[0], b[:, 0]), a[0], b[:, 0])


@pytest.mark.gpu
def test_gpu_bool_is_or_of_ands():
    a = np.array([[True, False, False], [False, False, False], [True, True, True]])
    b = np.array([[False, True], [True, False], [False, False]])
    got = np.asarray(_gpu_dot_function("bool", "bool", 2, 2)(a, b))
    np.testing.assert_array_equal(got, [[False, True], [False, False], [True, True]])


def _layouts(arr):
    """The same values in many memory layouts (strided, transposed, reversed, broadcast)."""
    out = [arr, arr.copy()]
    if arr.ndim == 1:
        big = np.zeros(3 * arr.shape[0], arr.dtype)
        big[::3] = arr
        out += [big[::3], arr[::-1].copy()[::-1]]
        return out
    rows, cols = arr.shape
    out.append(np.asfortranarray(arr))                                  # strides (1, rows)
    big = np.zeros((rows + 3, cols + 5), arr.dtype)
    big[1:rows + 1, 2:cols + 2] = arr
    out.append(big[1:rows + 1, 2:cols + 2])                             # leading dimension > cols
    out.append(np.asfortranarray(big)[1:rows + 1, 2:cols + 2])          # leading dimension > rows
    out.append(np.ascontiguousarray(arr[::-1])[::-1])                   # negative row stride
    out.append(np.ascontiguousarray(arr[:, ::-1])[:, ::-1])             # negative column stride
    wide = np.zeros((rows, 2 * cols), arr.dtype)
    wide[:, ::2] = arr
    out.append(wide[:, ::2])                                            # non-unit column stride
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_gpu_strided_host_inputs(case, dtype):
    # host views of every layout, moved by gpu_from_host inside the graph
    f = _gpu_dot_function(dtype, dtype, *CASES[case])
    xs, ys = _shapes(case, 19, 23, 18)
    for a in _layouts(_sample(dtype, xs, 6)):
        for b in _layouts(_sample(dtype, ys, 7))[:3]:
            _check(f(a, b), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_gpu_strided_device_inputs(case, dtype):
    # device arrays (from host views of every layout) given straight to a graph on GPU inputs
    import ffigraph

    DeviceArray, _, host_from_gpu = _api()
    xnd, ynd = CASES[case]
    x, y = gpu_var(dtype, xnd, "x"), gpu_var(dtype, ynd, "y")
    f = ffigraph.function([x, y], host_from_gpu(GpuDot()(x, y)))
    xs, ys = _shapes(case, 21, 35, 17)
    for a in _layouts(_sample(dtype, xs, 8)):
        for b in _layouts(_sample(dtype, ys, 9)):
            da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
            np.testing.assert_array_equal(da.get(), a)
            _check(f(da, db), a, b)


@pytest.mark.gpu
def test_gpu_transposed_views_in_graph():
    # transposes expressed on the host side, before the transfer
    import ffigraph

    _, gpu_from_host, host_from_gpu = _api()
    x, y = T.matrix(dtype="float64"), T.matrix(dtype="float64")
    f = ffigraph.function([x, y], host_from_gpu(GpuDot()(gpu_from_host(x.T), gpu_from_host(y.T))))
    a, b = _sample("float64", (23, 9), 10), _sample("float64", (31, 23), 11)
    _check(f(a, b), a.T, b.T)


# ---- launchers called by hand on device memory: any element strides, zero and negative included


class _Cudart:
    """cudaMalloc/cudaMemcpy/cudaFree from the runtime library, for the by-hand launcher tests."""

    def __init__(self):
        import os

        import cffi

        self.ffi = cffi.FFI()
        self.ffi.cdef("int cudaMalloc(void **p, size_t n); int cudaFree(void *p);"
                      "int cudaMemcpy(void *dst, const void *src, size_t n, int kind);"
                      "int cudaDeviceSynchronize(void);")
        self.lib = self.ffi.dlopen(os.path.join(toolchain.runtime_lib_dir(), "libcudart.so"))

    def to_device(self, arr):
        arr = np.ascontiguousarray(arr)
        p = self.ffi.new("void **")
        assert self.lib.cudaMalloc(p, max(arr.nbytes, 1)) == 0
        assert self.lib.cudaMemcpy(p[0], self.ffi.from_buffer(arr), arr.nbytes, 1) == 0
        return int(self.ffi.cast("uintptr_t", p[0]))

    def to_host(self, ptr, shape, dtype):
        out = np.empty(shape, dtype)
        assert self.lib.cudaMemcpy(self.ffi.from_buffer(out), self.ffi.cast("void *", ptr), out.nbytes, 2) == 0
        return out

    def free(self, ptr):
        self.lib.cudaFree(self.ffi.cast("void *", ptr))


def _strided_cases(dtype):
    """(x, y) numpy views with arbitrary element strides over small bases, with their strides."""
    base_x, base_y = _sample(dtype, (400,), 12), _sample(dtype, (400,), 13)
    item = np.dtype(dtype).itemsize
    view = np.lib.stride_tricks.as_strided
    # (x offset, x shape, x strides, y offset, y shape, y strides), in elements
    specs = [
        (0, (7, 9), (9, 1), 0, (9, 5), (5, 1)),          # C order
        (0, (7, 9), (1, 7), 0, (9, 5), (1, 9)),          # Fortran order (transposes)
        (100, (7, 9), (-11, 2), 200, (9, 5), (3, -20)),  # negative and non-unit strides
        (50, (7, 9), (0, 1), 60, (9, 5), (1, 0)),        # zero strides (broadcast rows / columns)
        (300, (9,), (-3,), 10, (9, 5), (7, 1)),          # reversed vector . matrix
        (0, (7, 9), (13, 1), 399, (9,), (-17,)),         # matrix . reversed vector
        (5, (33,), (0,), 5, (33,), (11,)),               # vector . vector, a zero stride
    ]
    for xo, xs, xst, yo, ys, yst in specs:
        yield (view(base_x[xo:], xs, [s * item for s in xst]), xo, xs, xst,
               view(base_y[yo:], ys, [s * item for s in yst]), yo, ys, yst, base_x, base_y)


def _run_strided(lib_fn, dtype, cudart):
    for a, xo, xs, xst, b, yo, ys, yst, base_x, base_y in _strided_cases(dtype):
        px, py = cudart.to_device(base_x), cudart.to_device(base_y)
        item = np.dtype(dtype).itemsize
        try:
            s = Slots(2, 1)
            s.set(0, xs, *dtype_code(dtype), data=px + xo * item, strides=xst)
            s.set(1, ys, *dtype_code(dtype), data=py + yo * item, strides=yst)
            fn = lib_fn(len(xs), len(ys))
            rc, reserved, msg = s.call(fn)
            assert rc == 0, msg
            out = s.outputs[0]
            got = cudart.to_host(int(ffi.cast("uintptr_t", out.data)), tuple(out.shape[0:out.ndim]), dtype)
            cudart.free(int(ffi.cast("uintptr_t", s.owned[0])))
            _check(got, a, b)
        finally:
            cudart.free(px)
            cudart.free(py)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool"])
def test_gpu_launcher_any_strides(compiled, dtype):
    names = {v: k for k, v in CASES.items()}
    _run_strided(lambda xnd, ynd: launcher(compiled, names[(xnd, ynd)], dtype), dtype, _Cudart())


@pytest.mark.gpu
@pytest.mark.skipif(not toolchain.cublas_available(), reason="the CUDA toolkit has no cuBLAS")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gpu_cublas_launcher_any_strides(dtype, tmp_path):
    # the cuBLAS variant, linked with -lcublas by hand (build_launchers links only the runtime)
    import os
    import subprocess

    from cuda_helpers import NVCC
    from ffigraph.abi import HEADER_PATH
    from ffigraph.cuda.prelude import CUDA_PRELUDE

    texts = {}
    for case in sorted(CASES):
        node = dot_node(case, dtype)
        assert node.op.uses_cublas(node)
        symbol = "ffg_cu_blas_%s_%s" % (case, dtype)
        texts[CASES[case]] = (symbol, source(node, symbol))
    cu, so = str(tmp_path / "k.cu"), str(tmp_path / "libk.so")
    with open(cu, "w") as fh:
        fh.write(CUDA_PRELUDE + "\n".join(t for _, t in texts.values()))
    subprocess.run([NVCC, "-shared", "-std=c++14", "-Xcompiler", "-fPIC", "-DFFG_CU_EXPORT_LAUNCHERS",
                    "-I" + os.path.dirname(HEADER_PATH)] + toolchain.arch_flags()
                   + ["-o", so, cu, "-L" + toolchain.runtime_lib_dir(), "-lcublas"], check=True)
    lib = Functions(so, {sym: None for sym, _ in texts.values()})
    _run_strided(lambda xnd, ynd: getattr(lib, texts[(xnd, ynd)][0]), dtype, _Cudart())

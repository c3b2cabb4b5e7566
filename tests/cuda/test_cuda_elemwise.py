"""GpuElemwise and GpuReduce: generated CUDA (always), compiled and called without a GPU (nvcc), results (gpu).

The nvcc tier compiles everything in ONE nvcc call (a module fixture): every scalar op on every
dtype as the outputs of one Composite per dtype, a few single-op and multi-output launchers,
and the reductions; each kernel costs nvcc ~0.1 s, so the matrix is covered by Composites
rather than by one launcher per (op, dtype).

The gpu tier compares with numpy: the references and the expected output dtypes are those of the
CPU op tests (tests/tensor/test_elemwise.py, test_build_ops.py, test_reductions.py), spelled out
there from the documented rules, never ffigraph's own ``compute``/``perform`` or its nodes' dtypes.
"""
import re

import numpy as np
import pytest

from ffigraph.scalar import special_c

import ffigraph.tensor as T
from ffigraph.abi import ffi
from ffigraph.cuda.elemwise import (GpuElemwise, device_support_code, gpu_elemwise_supported, has_gpu_code,
                                    launcher_text)
from ffigraph.cuda.reduce import KINDS, GpuReduce, gpu_reduce_supported
from ffigraph.cuda.type import GpuArrayType
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.scalar.basic import SCALAR_OPS, Cast
from ffigraph.scalar.composite import Composite, const_ref
from ffigraph.tensor.fused import FusedElemwise
from ffigraph.tensor.fused_c import step_expression
from ffigraph.tensor.math import ArgReduce, Reduce
from cuda_helpers import GPU_PRESENT, SCALAR_TESTS, needs_no_gpu, NO_GPU_CUDA_ERRORS, Slots, build_launchers, cpu_op_tests, \
    cubin_archs, needs_nvcc, undefined_python_symbols
from helpers import assert_matches

# numpy's answers and the output dtypes of the documented rules, as the CPU op tests spell them out
cpu_elemwise = cpu_op_tests("test_elemwise")
cpu_build = cpu_op_tests("test_build_ops")
cpu_reductions = cpu_op_tests("test_reductions")
cpu_breadth = cpu_op_tests("test_elemwise_breadth")   # PyTensor's further functions (arcsin, psi, ...)
cpu_special = cpu_op_tests("test_special_functions", SCALAR_TESTS)   # gamma, Bessel, erfcx, betaln, ...

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
AXES = [(), (0,), (1,), (0, 2), (1, 2), (0, 1, 2)]
# c_table's helpers, and the special functions' (special_c.py)
HOST_HELPER = re.compile(r"\bffg_(divmod|floordiv|mod|ipow|sigmoid|softplus|psi|trigamma|erfinv|%s)_"
                         % "|".join(special_c.HELPER_BASES))


def gvar(dtype, shape=(None, None)):
    return GpuArrayType(dtype, shape)()


def op_node(sop, dtype, nd=2):
    """GpuElemwise(sop) over ``dtype`` inputs (a bool condition for switch); None when sop refuses dtype."""
    ins = [gvar(dtype, (None,) * nd) for _ in range(sop.nin)]
    if sop.name == "switch":
        ins[0] = gvar("bool", (None,) * nd)
    try:
        return GpuElemwise(sop).make_node(*ins)
    except TypeError:
        return None


def all_ops_composite(dtype):
    """One Composite computing every scalar op (and every cast) that accepts ``dtype``, one output each.
    Every step reads the one input (x + x, switch(x, x, x)): an output reading fewer inputs than
    the node would get a kernel of its own (for an empty loop), and compiling costs per kernel."""
    steps = []
    for name, sop in sorted(SCALAR_OPS.items()):
        try:
            out = sop.output_dtype([dtype] * sop.nin)
        except TypeError:
            continue
        steps.append((sop, [("in", 0)] * sop.nin, out))
    steps += [(Cast(d), [("in", 0)], d) for d in DTYPES]
    return Composite([dtype], steps, range(len(steps)))


def special_composites():
    """Several outputs, constants (NaN, inf, -0.0, the int64 minimum), outputs reading only some inputs."""
    f32, i64 = "float32", "int64"
    add, mul, maximum = SCALAR_OPS["add"], SCALAR_OPS["mul"], SCALAR_OPS["maximum"]
    a = Composite([f32, f32], [(add, [("in", 0), ("in", 1)], f32),
                               (maximum, [("step", 0), const_ref(np.float32("nan"))], f32),
                               (mul, [("in", 0), const_ref(np.float32("inf"))], f32),
                               (SCALAR_OPS["sigmoid"], [("step", 2)], f32)], [1, 2, 3])
    b = Composite([i64, "bool"], [(SCALAR_OPS["mod"], [("in", 0), const_ref(np.int64(-2 ** 63))], i64),
                                  (SCALAR_OPS["pow"], [("in", 0), ("step", 0)], i64),
                                  (SCALAR_OPS["switch"], [("in", 1), const_ref(np.float64(-0.0)),
                                                          const_ref(np.float64("-inf"))], "float64")],
                  [0, 1, 2])
    c = Composite([f32], [(SCALAR_OPS["exp"], [const_ref(np.float32(1.5))], f32)], [0])   # constants only
    return [a, b, c]


# ------------------------------------------------------------------ always: generated source


def _check_source(text, symbol):
    assert "FFG_CU_LAUNCHER int32_t %s(" % symbol in text
    assert "__global__" in text and "<<<" in text
    assert "Python.h" not in text and "numpy" not in text.lower()
    assert HOST_HELPER.search(text) is None   # device code calls the ffg_dev_ twins only
    assert text.count("{") == text.count("}")
    for needed in ("ffg_cu_check_call", "ffg_cu_alloc", "ffg_cu_set_output", "ffg_cu_launched",
                   "> 0) {   /* an empty"):
        assert needed in text, needed


@pytest.mark.parametrize("name", sorted(SCALAR_OPS))
def test_every_op_and_dtype_has_a_launcher(name):
    sop, seen = SCALAR_OPS[name], 0
    for dt in DTYPES:
        node = op_node(sop, dt)
        if node is None:
            continue
        seen += 1
        text = launcher_text(node.op, node, "ffg_cu_k")
        _check_source(text, "ffg_cu_k")
        assert "/* GpuElemwise{%s}: " % name in text and "ffg_cu_check_tensor" in text
        ins = [v.type.dtype for v in node.inputs]
        expr, check = step_expression(sop, ins, node.outputs[0].type.dtype, ["i%d" % k for k in range(sop.nin)])
        assert HOST_HELPER.sub(r"ffg_dev_\1_", expr) in text
        assert ("*a.flag = 1" in text) == (check is not None)
        assert has_gpu_code(sop, ins)
    assert seen >= 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_and_all_ops_composite(dtype):
    for target in DTYPES:
        node = GpuElemwise(Cast(target)).make_node(gvar(dtype))
        assert node.outputs[0].type.dtype == target
        _check_source(launcher_text(node.op, node, "ffg_cu_c"), "ffg_cu_c")
    comp = all_ops_composite(dtype)
    node = GpuElemwise(comp).make_node(gvar(dtype, (None,)))
    assert len(node.outputs) == comp.nout > 20
    text = launcher_text(node.op, node, "ffg_cu_all")
    _check_source(text, "ffg_cu_all")
    assert "a.out%d[w%d] = t%d;" % (comp.nout - 1, comp.nout - 1, comp.nout - 1) in text


def test_special_composites():
    a, b, c = special_composites()
    node = GpuElemwise(a).make_node(gvar("float32", (None, 3)), gvar("float32", (1, 3)))
    text = launcher_text(node.op, node, "ffg_cu_a")
    _check_source(text, "ffg_cu_a")
    assert "((float)NAN)" in text and "((float)INFINITY)" in text
    assert "ffg_cu_a_out1_kernel" in text   # output 1 reads input 0 only: its own loop when input 1 is empty
    assert [v.type.shape for v in node.outputs] == [(None, 3), (None, 3), (None, 3)]
    node = GpuElemwise(b).make_node(gvar("int64"), gvar("bool"))
    text = launcher_text(node.op, node, "ffg_cu_b")
    assert "-9223372036854775807LL - 1" in text and "ffg_dev_ipow_i64" in text
    assert "Integers to negative integer powers are not allowed" in text   # the read-back check
    node = GpuElemwise(c).make_node(gvar("float32"))
    assert node.outputs[0].type.shape == (1, 1)
    _check_source(launcher_text(node.op, node, "ffg_cu_c"), "ffg_cu_c")


def test_device_helpers_are_device_functions():
    for dt in DTYPES:
        text = device_support_code(dt)
        defs = re.findall(r"(?m)^static .*\(", text)
        assert defs and all("__device__" in d for d in defs), text
        assert HOST_HELPER.search(text) is None and "copysign(0, " not in text


def test_zero_dimensional_and_broadcast_static_shapes():
    node = GpuElemwise(SCALAR_OPS["add"]).make_node(gvar("float64", ()), gvar("float64", ()))
    assert node.outputs[0].type.shape == ()
    _check_source(launcher_text(node.op, node, "ffg_cu_z"), "ffg_cu_z")
    node = GpuElemwise(SCALAR_OPS["mul"]).make_node(gvar("float32", (1, 4)), gvar("float32", (3, 1)))
    assert node.outputs[0].type.shape == (3, 4)
    shapes = node.op.infer_shape(None, node, [(T.constant(1), T.constant(4)), (T.constant(3), T.constant(1))])
    assert len(shapes) == 1 and len(shapes[0]) == 2


def test_make_node_type_errors():
    add = GpuElemwise(SCALAR_OPS["add"])
    with pytest.raises(TypeError, match="input 1 .* not a GPU array"):
        add(gvar("float32"), T.tensor("float32", (None, None), "hostx"))
    with pytest.raises(TypeError, match="input 1 .* 1 dimensions, input 0 has 2"):
        add(gvar("float32"), gvar("float32", (None,)))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        add(gvar("float32"))
    with pytest.raises(TypeError):
        GpuElemwise(SCALAR_OPS["invert"])(gvar("float32"))   # the op refuses floats, as on the CPU
    with pytest.raises(ValueError, match="cannot be broadcast"):
        add(gvar("float32", (2, 3)), gvar("float32", (4, 3)))
    comp = special_composites()[0]
    with pytest.raises(TypeError, match="input 1 .* dtype float64, expected float32"):
        GpuElemwise(comp)(gvar("float32"), gvar("float64"))
    with pytest.raises(TypeError, match="not a GPU array"):
        GpuReduce("sum", (0,))(T.tensor("float32", (None,), "h"))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        GpuReduce("sum", (2,))(gvar("float32"))
    with pytest.raises(ValueError, match="unknown reduction"):
        GpuReduce("argmax", (0,))


def test_complex_and_limits_are_refused():
    node = GpuElemwise(SCALAR_OPS["add"]).make_node(gvar("complex64"), gvar("complex64"))
    with pytest.raises(MethodNotDefined, match="complex is not supported on the GPU"):
        launcher_text(node.op, node, "ffg_cu_x")
    assert not has_gpu_code(SCALAR_OPS["add"], ["complex128", "complex128"])
    assert not has_gpu_code(object(), ["float32"])
    node = GpuReduce("sum", (0,)).make_node(gvar("complex128"))
    with pytest.raises(MethodNotDefined, match="complex is not supported on the GPU"):
        node.op.cuda_launcher(node, "ffg_cu_x")
    many = Composite(["float32"] * 20, [(SCALAR_OPS["add"], [("in", k), ("in", k + 1)], "float32")
                                        for k in range(19)], [18])
    node = GpuElemwise(many).make_node(*[gvar("float32", (None,) * 32) for _ in range(20)])
    with pytest.raises(MethodNotDefined, match="kernel parameter block"):
        launcher_text(node.op, node, "ffg_cu_x")


def test_supported_predicates_on_cpu_nodes():
    x, y = T.tensor("float32", (None, None), "x"), T.tensor("int16", (None,), "y")
    assert gpu_elemwise_supported((x + y).owner)
    assert gpu_elemwise_supported(T.exp(x).owner)
    z = T.tensor("complex64", (None,), "z")
    assert not gpu_elemwise_supported((z * z).owner)
    comp = special_composites()[0]
    assert gpu_elemwise_supported(FusedElemwise(comp).make_node(x, x))
    assert not gpu_elemwise_supported(Reduce("sum", (0,)).make_node(x))
    for kind in KINDS:
        assert gpu_reduce_supported(Reduce(kind, (1,)).make_node(x)), kind
    assert not gpu_reduce_supported(Reduce("sum", (0,)).make_node(z))
    # a mean's dtype is its sum's (PyTensor's mean): an int32 sum over a float64 count is float64,
    # which the GPU computes (this was "a mean into int32", which it did not)
    mean_node = Reduce("mean", (0,), "int32").make_node(x)
    assert mean_node.outputs[0].type.dtype == "float64" and gpu_reduce_supported(mean_node)
    assert not gpu_reduce_supported(ArgReduce("argmax", (0,)).make_node(x))
    assert not gpu_reduce_supported((x + x).owner)
    assert GpuReduce.from_cpu(Reduce("prod", (1, 0), "float64")) == GpuReduce("prod", (0, 1), "float64")


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_sources(kind):
    for dt in DTYPES:
        for axis in AXES:
            node = GpuReduce(kind, axis).make_node(gvar(dt, (None, None, None)))
            assert node.outputs[0].type.ndim == 3 - len(axis)
            assert node.outputs[0].type.dtype == cpu_reductions.expected_dtype(kind, dt), (kind, dt)
            text = node.op.cuda_launcher(node, "ffg_cu_r")
            _check_source(text, "ffg_cu_r")
            assert ("empty axis" in text) == (kind in ("max", "min") and bool(axis))
            assert ("no reduced axis" in text) == (not axis)
            assert ("a.nred" in text) and (("count" in text) == (kind == "mean"))


# ------------------------------------------------------------------ nvcc: one library, called without a GPU


def _nvcc_nodes():
    """{symbol: node} for everything the nvcc tier compiles."""
    nodes = {}
    for dt in DTYPES:
        nodes["ffg_cu_all_%s" % dt] = GpuElemwise(all_ops_composite(dt)).make_node(gvar(dt, (None,)))
    nodes["ffg_cu_add"] = op_node(SCALAR_OPS["add"], "float32")
    nodes["ffg_cu_pow_i32"] = op_node(SCALAR_OPS["pow"], "int32")
    nodes["ffg_cu_switch"] = op_node(SCALAR_OPS["switch"], "float64", nd=3)
    nodes["ffg_cu_add0d"] = op_node(SCALAR_OPS["add"], "int8", nd=0)
    nodes["ffg_cu_cast"] = GpuElemwise(Cast("uint8")).make_node(gvar("float64"))
    a, b, c = special_composites()
    nodes["ffg_cu_spa"] = GpuElemwise(a).make_node(gvar("float32"), gvar("float32"))
    nodes["ffg_cu_spb"] = GpuElemwise(b).make_node(gvar("int64"), gvar("bool"))
    nodes["ffg_cu_spc"] = GpuElemwise(c).make_node(gvar("float32"))
    for k, kind in enumerate(KINDS):
        for j, dt in enumerate(["bool", "int8", "uint64", "float32", "float64"]):
            axis = AXES[(k + j) % len(AXES)]
            nodes["ffg_cu_r_%s_%s" % (kind, dt)] = GpuReduce(kind, axis).make_node(gvar(dt, (None,) * 3))
    nodes["ffg_cu_rmax_empty"] = GpuReduce("max", (1,)).make_node(gvar("float32"))
    return nodes


@pytest.fixture(scope="module")
def built():
    nodes = _nvcc_nodes()
    lib, path = build_launchers({s: n.op.cuda_launcher(n, s) for s, n in nodes.items()}, tag="elemwise")
    return lib, path, nodes


def _fill(slots, node, shapes=None, device=2):
    for i, v in enumerate(node.inputs):
        shape = shapes[i] if shapes else [3] * v.type.ndim
        slots.set(i, shape, *_code(v.type.dtype), device_type=device)


def _code(dtype):
    from ffigraph.abi import dtype_code

    return dtype_code(dtype)


def _call(lib, symbol, node, shapes=None, **kw):
    slots = Slots(len(node.inputs), len(node.outputs))
    _fill(slots, node, shapes, **kw)
    rc, reserved, msg = slots.call(getattr(lib, symbol))
    assert slots.err.code == rc
    if rc:
        assert all(slots.owned[k] == ffi.NULL for k in range(len(node.outputs)))
    return rc, reserved, msg, slots


def _assert_no_gpu(rc, reserved, msg):
    assert rc == 7, msg
    assert reserved in NO_GPU_CUDA_ERRORS, msg
    assert NO_GPU_CUDA_ERRORS[reserved] in msg


@needs_nvcc
def test_library_is_sm90_without_python(built):
    lib, path, nodes = built
    assert cubin_archs(path) == {90}
    assert undefined_python_symbols(path) == []


@needs_no_gpu
@needs_nvcc
def test_every_launcher_fails_with_cudas_own_error_without_gpu(built):
    """Every launcher, on good (fake) device inputs, gets as far as CUDA and reports its "no driver"
    error through the record: this shows the error is reported, not that a kernel computes."""
    lib, path, nodes = built
    for symbol, node in nodes.items():
        _assert_no_gpu(*_call(lib, symbol, node)[:3])


@needs_nvcc
def test_bad_inputs_give_ffigraph_codes(built):
    lib, _, nodes = built
    node = nodes["ffg_cu_add"]
    assert _call(lib, "ffg_cu_add", node, device=1)[0] == 1              # a CPU tensor
    slots = Slots(2, 1)
    slots.set(0, [3, 3], 2, 32)
    slots.set(1, [3, 3], 2, 64)                                          # float64, not float32
    assert slots.call(lib.ffg_cu_add)[0] == 1
    slots.set(1, [3], 2, 32)                                             # one dimension, not two
    assert slots.call(lib.ffg_cu_add)[0] == 1
    slots.set(1, [3, 3], 2, 32, data=0)                                  # NULL data, 9 elements
    rc, _, msg = slots.call(lib.ffg_cu_add)
    assert rc == 5 and slots.err.code == 5 and "NULL data" in msg   # FFG_ERR_ABI since ABI 2.1
    err = ffi.new("FfgError *")
    assert lib.ffg_cu_add(ffi.NULL, 2, slots.outputs, slots.owned, 1, ffi.NULL, ffi.NULL, err) == 5
    assert err.code == 5
    rc, _, msg, _ = _call(lib, "ffg_cu_add", node, shapes=[[3, 4], [5, 4]])
    assert rc == 2 and "axis 0 has length 3 in input 0 but 5 in input 1" in msg
    if not GPU_PRESENT:   # broadcasts, so it reaches CUDA (with a GPU the fake pointers would be read)
        rc, reserved, msg, _ = _call(lib, "ffg_cu_add", node, shapes=[[3, 1], [1, 4]])
        _assert_no_gpu(rc, reserved, msg)
    rc, _, msg, _ = _call(lib, "ffg_cu_rmax_empty", nodes["ffg_cu_rmax_empty"], shapes=[[4, 0]])
    assert rc == 2 and "cannot take the max over an empty axis" in msg


@needs_no_gpu
@needs_nvcc
def test_empty_arrays_reach_cuda_or_succeed_without_gpu(built):
    """Empty inputs without a device allocator: nothing to compute, but the result's cudaMalloc may
    be the first CUDA call, so either success or CUDA's "no driver" error (the values of empty
    results are checked on a device by test_gpu_special_composites_and_shapes and the reductions)."""
    lib, _, nodes = built
    for symbol, shapes in [("ffg_cu_add", [[0, 4], [1, 4]]), ("ffg_cu_spa", [[1, 3], [0, 3]]),
                           ("ffg_cu_r_sum_float32", [[0, 2, 0]])]:
        rc, reserved, msg, _ = _call(lib, symbol, nodes[symbol], shapes=shapes)
        assert rc == 0 or (rc == 7 and reserved in NO_GPU_CUDA_ERRORS), msg


class _Allocator:
    """A device allocator handing out host memory: the launcher gets as far as the launch itself."""

    def __init__(self):
        self.live = {}
        self.calls = 0
        self._alloc = ffi.callback("void *(void *, size_t)", self.alloc)
        self._release = ffi.callback("void (void *, void *)", self.release)
        self.struct = ffi.new("FfgAllocator *", {"alloc": self._alloc, "release": self._release})

    def alloc(self, ctx, nbytes):
        buf = ffi.new("char[]", max(nbytes, 8))
        p = ffi.cast("void *", buf)
        self.live[int(ffi.cast("uintptr_t", p))] = buf
        self.calls += 1
        return p

    def release(self, ctx, p):
        del self.live[int(ffi.cast("uintptr_t", p))]


@needs_no_gpu
@needs_nvcc
@pytest.mark.parametrize("symbol,shapes,launches", [
    ("ffg_cu_add", [[2, 3], [1, 3]], True),
    ("ffg_cu_add", [[0, 3], [1, 3]], False),          # empty: no launch, so it succeeds here
    ("ffg_cu_spa", [[1, 3], [0, 3]], True),           # loop empty, output 1 alone is not
    ("ffg_cu_add0d", [[], []], True),
    ("ffg_cu_r_sum_float32", [[2, 0, 3]], None),
])
def test_launch_path_with_a_host_memory_allocator_without_gpu(built, symbol, shapes, launches):
    """A device allocator handing out host memory gets each launcher past its allocations: an empty
    loop succeeds with outputs owned by the caller; a launch reports CUDA's "no driver" error and
    everything allocated is released. (The host's allocator on a device: test_gpu_host_device_allocator
    in test_cuda.py.)"""
    lib, _, nodes = built
    node = nodes[symbol]
    al = _Allocator()
    slots = Slots(len(node.inputs), len(node.outputs))
    _fill(slots, node, shapes)
    err = slots.err
    rc = getattr(lib, symbol)(slots.inputs, len(node.inputs), slots.outputs, slots.owned, len(node.outputs),
                              ffi.NULL, al.struct, err)
    msg = ffi.string(err.message).decode()
    assert rc == err.code
    if rc == 0:   # nothing launched: the outputs are described and owned by the caller
        assert launches is not True
        assert len(al.live) == len(node.outputs) and all(slots.owned[k] != ffi.NULL for k in range(len(node.outputs)))
        assert slots.outputs[0].device.device_type == 2
    else:         # the launch (or the flag's cudaMemset) failed: everything allocated was released
        assert launches is not False, msg
        _assert_no_gpu(rc, err.detail, msg)
        assert al.live == {} and al.calls >= len(node.outputs)


# ------------------------------------------------------------------ gpu: results against numpy


def _gpu_function(out_of, inputs):
    """(function, outputs): host inputs like ``inputs`` moved to the device, ``out_of`` of them, and
    every output moved back; the outputs are the symbolic host results (their types are checked)."""
    from ffigraph import function
    from ffigraph.cuda import gpu_from_host, host_from_gpu

    xs = [T.tensor(a.dtype.name, (None,) * a.ndim, "x%d" % k) for k, a in enumerate(inputs)]
    out = out_of(*[gpu_from_host(x) for x in xs])
    outs = [host_from_gpu(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    return function(xs, outs), outs


def _sample(dtype, shape, rng):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -9), min(info.max, 9) + 1, size=shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype) * 3
    x.flat[:3] = [np.nan, np.inf, -0.0][:x.size]
    return x


def _tolerance(dtype, rtol32=1e-5, rtol64=1e-12):
    """(rtol, atol) for results of ``dtype`` (the atol is the CPU tests' own: values near 0)."""
    return {"float32": (rtol32, 1e-6), "float64": (rtol64, 1e-12)}.get(np.dtype(dtype).name, (0, 0))


# scalar op names whose CPU test tables name them otherwise
CPU_NAME = {"and": "and_", "or": "or_", "sign": "sgn"}


def numpy_reference(name, dtype):
    """(numpy's function of the inputs, the output dtype spelled out by the CPU op tests, the dtype
    kinds the op accepts) for scalar op ``name`` on ``dtype`` inputs (a bool condition for switch)."""
    cpu = CPU_NAME.get(name, name)
    if cpu in cpu_elemwise.UNARY:
        ref, out = cpu_elemwise.unary_ref(cpu, dtype)
        return ref, out, cpu_elemwise.UNARY[cpu][2]
    if cpu in cpu_elemwise.BINARY:
        ref, out = cpu_elemwise.binary_ref(cpu, dtype, dtype)
        return ref, out, cpu_elemwise.BINARY[cpu][2]
    if name in cpu_breadth.UNARY:
        ref, out = cpu_breadth.unary_ref(name, dtype)
        return ref, out, cpu_breadth.UNARY[name][2]
    if name in cpu_breadth.BINARY:
        ref, out = cpu_breadth.binary_ref(name, dtype, dtype)
        return ref, out, cpu_breadth.BINARY[name][2]
    if name in cpu_special.SPECIAL_NAMES:
        ref, out = cpu_special.numpy_reference(name, dtype)
        # (polygamma's order is an integer: with both inputs of one dtype, integers only)
        return ref, out, "biu" if name == "polygamma" else "biuf"
    if name == "switch":   # the condition's dtype takes no part: the branches' dtype
        return cpu_build._switch_ref(dtype), dtype, "biufc"
    if name == "clip":
        return cpu_build._clip_ref(dtype), dtype, "biuf"
    raise AssertionError("scalar op %s has no numpy reference here: add one" % name)


LAYOUTS = [lambda a: a, lambda a: a[::-1, ::-1], lambda a: a[:, ::2]]   # contiguous, reversed, strided
GPU_DTYPES = ["bool", "int8", "int32", "uint16", "uint64", "float32", "float64"]
REDUCE_DTYPES = ["bool", "int8", "uint64", "float32", "float64"]


def _accepted(name, sop, dtype):
    """(numpy's reference, the spelled-out output dtype, the GPU node or None): the GPU op accepts
    ``dtype`` exactly when the CPU tables give it a reference."""
    ref, out_dtype, kinds = numpy_reference(name, dtype)
    node = op_node(sop, dtype)
    assert (node is not None) == (np.dtype(dtype).kind in kinds), "%s on %s: accepted?" % (name, dtype)
    return ref, out_dtype, node


def _valid_inputs(name, dtype, ins):
    """Inputs the op is defined on: a bool condition for switch; no negative integer powers (an
    error, as on the CPU)."""
    if name == "switch":
        ins[0] = ins[0] != 0
    if name == "pow" and np.dtype(dtype).kind == "i":
        ins[1] = np.abs(ins[1])
    return ins


def test_gpu_tier_oracles_cover_every_op_and_reduction():
    """(always) The gpu tier's oracle answers for every scalar op on every dtype of GPU_DTYPES and for
    every reduction: the ops accept exactly the kinds the CPU tables give, a GPU node's output dtype
    is the spelled-out one, and each reference runs. A renamed or missing table fails here, not only
    on a machine with a GPU."""
    rng = np.random.default_rng(0)
    for name, sop in sorted(SCALAR_OPS.items()):
        for dtype in GPU_DTYPES:
            ref, out_dtype, node = _accepted(name, sop, dtype)
            if node is None:
                continue
            assert node.outputs[0].type.dtype == out_dtype, (name, dtype)
            ins = _valid_inputs(name, dtype, [_sample(dtype, (2, 3), rng) for _ in range(sop.nin)])
            try:
                with np.errstate(all="ignore"):
                    assert np.asarray(ref(*ins)).shape == (2, 3), (name, dtype)
            except pytest.skip.Exception:   # a scipy-only reference without scipy (PyPy): the rest still runs
                continue
    for kind in KINDS:
        for dtype in REDUCE_DTYPES:
            node = GpuReduce(kind, (0, 2)).make_node(gvar(dtype, (None,) * 3))
            assert node.outputs[0].type.dtype == cpu_reductions.expected_dtype(kind, dtype), (kind, dtype)
            assert cpu_reductions.np_reduce(kind, _sample(dtype, (2, 3, 4), rng), (0, 2), False).shape == (3,)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(SCALAR_OPS))
def test_gpu_elemwise_matches_numpy(name):
    """GpuElemwise(op) on every dtype of GPU_DTYPES it accepts, broadcast (5, 8) (1, 8) (5, 1) inputs in
    three layouts, NaN/inf/-0.0 and integer zeros among them: numpy's answer, in the dtype the
    documented rules give (tests/tensor/test_elemwise.py's tables)."""
    sop, rng = SCALAR_OPS[name], np.random.default_rng(0)
    for dtype in GPU_DTYPES:
        ref, out_dtype, node = _accepted(name, sop, dtype)
        if node is None:
            continue
        f = outs = None
        for layout in LAYOUTS:
            ins = _valid_inputs(name, dtype, [layout(_sample(dtype, (s[0], s[1] * 2), rng))[:, :s[1]]
                                              for s in [(5, 8), (1, 8), (5, 1)][:sop.nin]])
            if f is None:
                f, outs = _gpu_function(lambda *xs: GpuElemwise(sop)(*xs), ins)
            with np.errstate(all="ignore"):
                want = ref(*ins)
            rtol, atol = _tolerance(out_dtype)
            try:
                assert_matches(f(*ins)[0], want, outs[0].type, rtol, atol, dtype=out_dtype)
            except AssertionError as err:
                raise AssertionError("%s on %s: %s" % (name, dtype, err)) from None


@pytest.mark.gpu
@pytest.mark.parametrize("shapes", [[(), ()], [(0, 3), (1, 3)], [(4, 1, 3), (1, 5, 1)]])
def test_gpu_special_composites_and_shapes(shapes):
    """special_composites()[0] (maximum with a NaN constant, times an inf constant, then sigmoid;
    two outputs read input 0 only) on a device: numpy's values of each output's expression, float32,
    and numpy's shape for it (the broadcast shape of the inputs that output reads, as on the CPU)."""
    rng = np.random.default_rng(1)
    a = special_composites()[0]
    ins = [_sample("float32", s, rng) for s in shapes]
    f, outs = _gpu_function(lambda *xs: GpuElemwise(a)(*xs), ins)
    x0, x1 = ins
    sigmoid = cpu_elemwise.UNARY["sigmoid"][1]
    with np.errstate(all="ignore"):
        scaled = x0 * np.float32(np.inf)
        want = [np.maximum(x0 + x1, np.float32(np.nan)), scaled, sigmoid(scaled)]
    assert want[0].shape == np.broadcast(x0, x1).shape and want[1].shape == want[2].shape == x0.shape
    got = f(*ins)
    assert len(got) == 3
    for k, (g, w, out) in enumerate(zip(got, want, outs)):
        try:
            assert_matches(g, w, out.type, 1e-6, 1e-6, dtype="float32")
        except AssertionError as err:
            raise AssertionError("output %d: %s" % (k, err)) from None


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_reduce_matches_numpy(kind):
    """GpuReduce(kind) over every axis set of a reversed (3, 4, 5) input (and an empty (3, 0, 5) one,
    but for max and min): numpy's answer (tests/tensor/test_reductions.py's np_reduce), in the dtype
    the documented rules give (its expected_dtype)."""
    import warnings

    rng = np.random.default_rng(2)
    for dtype in REDUCE_DTYPES:
        out_dtype = cpu_reductions.expected_dtype(kind, dtype)
        rtol, atol = _tolerance(out_dtype, rtol32=1e-4)
        for axis in AXES:
            f = outs = None
            for shape in [(3, 4, 5), (3, 0, 5)] if kind not in ("max", "min") else [(3, 4, 5)]:
                x = _sample(dtype, shape, rng)[:, ::-1]
                if f is None:
                    f, outs = _gpu_function(lambda g: GpuReduce(kind, axis)(g), [x])
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)   # the mean of nothing is NaN
                    want = cpu_reductions.np_reduce(kind, x, axis, False)
                try:
                    assert_matches(f(x)[0], want, outs[0].type, rtol, atol, dtype=out_dtype)
                except AssertionError as err:
                    raise AssertionError("%s %s %s: %s" % (dtype, axis, shape, err)) from None

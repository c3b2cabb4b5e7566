"""The plain-C backend: ABI, generated-source hygiene, marshaling, errors, leaks, user C ops."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, Out, function
from ffigraph.abi import ABI_VERSION, ENTRY_POINTS, HEADER_PATH, LIBRARY_API_SYMBOL, cdef_text, expected_layout, ffi
from ffigraph.graph import Apply
from ffigraph.graph.op import Op
from ffigraph.linkers.c import COp, CompileError
from ffigraph.linkers.c.load import AbiMismatchError, LoadedLibrary, built_libraries
from ffigraph.linkers.c import cache
from ffigraph.linkers.c.build import build_library
from helpers import REPO_ROOT, PythonOnly, rss_bytes, rss_check_skip

C_LINKERS = ["c", "c|py"]


@pytest.fixture(params=C_LINKERS)
def cmode(request):
    return Mode(linker=request.param, optimizer=None)


# ------------------------------------------------------------------ the ABI header


def test_cdef_comes_from_the_header():
    text = cdef_text()
    assert "typedef struct FfgTensor" in text and "ffg_run_fn" in text
    with open(HEADER_PATH) as fh:
        assert text.strip().splitlines()[2].strip() in fh.read()


@pytest.mark.parametrize("compiler,flag", [("gcc", "-std=c99"), ("gcc", "-std=c11"), ("g++", "-std=c++11")])
def test_header_compiles_as_c_and_cpp(tmp_path, compiler, flag):
    if shutil.which(compiler) is None:
        pytest.skip("%s is not installed" % compiler)
    src = tmp_path / ("t.cpp" if compiler == "g++" else "t.c")
    src.write_text('#include "ffigraph_abi.h"\nint main(void) { FfgTensor t; (void)t; return 0; }\n')
    subprocess.run([compiler, flag, "-Wall", "-Werror", "-fsyntax-only", "-I", os.path.dirname(HEADER_PATH),
                    str(src)], check=True)


def test_layout_matches_dlpack_dltensor():
    # DLTensor on LP64: data, device{int32,int32}, ndim int32, dtype{u8,u8,u16}, shape*, strides*, byte_offset u64
    assert ffi.sizeof("FfgTensor") == 48
    assert [ffi.offsetof("FfgTensor", f) for f in ("data", "device", "ndim", "dtype", "shape", "strides",
                                                    "byte_offset")] == [0, 8, 16, 20, 24, 32, 40]
    assert expected_layout()[0] == 48


def test_version_and_layout_mismatch_are_refused():
    x = T.dvector("x")
    f = function([x], x + 1, mode=Mode(linker="c", optimizer=None))
    src = f.maker.linker.compiled.source
    bad = src.source.replace("return FFG_ABI_VERSION;", "return FFG_ABI_VERSION + 1;")
    prefix = src.prefix[:-1] + ("x" if src.prefix[-1] != "x" else "y")
    path = build_library(bad.replace(src.prefix, prefix), prefix, src.requirements)
    with pytest.raises(AbiMismatchError, match="ABI version %d" % (ABI_VERSION + 1)):
        LoadedLibrary(path, prefix)
    bad = src.source.replace("static const int64_t ffg_layout[] = {FFG_LAYOUT_ENTRIES};",
                             "static const int64_t ffg_layout[] = {FFG_LAYOUT_ENTRIES, 7};")
    prefix = src.prefix[:-2] + "zz"
    path = build_library(bad.replace(src.prefix, prefix), prefix, src.requirements)
    with pytest.raises(AbiMismatchError, match="layout"):
        LoadedLibrary(path, prefix)


def test_library_describes_its_slots():
    x, y = T.dmatrix("x"), T.tensor("int32", (3,), "y")
    f = function([x, y], [x * y, (x + y).sum()], mode=Mode(linker="c", optimizer=None))
    ins, outs = f.maker.linker.compiled.library.slots()
    assert ins == [("x", 0, 2, 2, 64), ("y", 0, 1, 0, 32)]
    assert [o[1:] for o in outs] == [(2, 2, 2, 64), (2, 0, 2, 64)]


# ------------------------------------------------------------------ no CPython API anywhere


FORBIDDEN_IN_C = re.compile(r"Python\.h|numpy/|\bPyObject\b|\bPy[A-Z_]\w*\(")


def test_generated_code_has_no_python_api_and_links_no_libpython(cmode):
    """The libraries of a graph with elementwise, reduction, dot, view, join and shape nodes:
    no Python in their source, no Python symbol undefined, only the entry points exported."""
    x, y = T.dmatrix("x"), T.dvector("y")
    out = T.exp(x) * y + T.tanh(x) - 1.5 * y
    f = function([x, y], [out, out.T, x.shape, T.dot(x, y).sum(), T.concatenate([x, x])[::-1], x.max(axis=0)],
                 mode=cmode)
    f(np.ones((2, 3)), np.ones(3))
    linker = f.maker.linker
    compiled = [linker.compiled] if cmode.linker_spec == "c" else list(linker.compiled_nodes.values())
    assert len(compiled) == 1 if cmode.linker_spec == "c" else len(compiled) >= 6
    libs = [(c.library.path, c.library.source_path) for c in compiled]
    assert set(libs) <= set(built_libraries())
    nm = shutil.which("nm")
    ldd = shutil.which("ldd")
    for lib, source_path in libs:
        with open(source_path) as fh:
            source = fh.read()
        assert not FORBIDDEN_IN_C.search(source), lib
        includes = re.findall(r"#include\s*[<\"]([^>\"]+)", source)
        assert all(not i.lower().startswith(("python", "numpy")) for i in includes), includes
        if nm:
            undefined = subprocess.run([nm, "-D", "--undefined-only", lib], stdout=subprocess.PIPE,
                                       universal_newlines=True, check=True).stdout
            assert not re.search(r"\bPy\w*|_Py\w*", undefined), undefined
            exported = subprocess.run([nm, "-D", "--defined-only", lib], stdout=subprocess.PIPE,
                                      universal_newlines=True, check=True).stdout
            names = {ln.split()[-1] for ln in exported.splitlines() if " T " in ln}
            prefix = re.search(r"ffg_[0-9a-f]{24}", source).group(0)
            assert names == {prefix + "_" + e for e in ENTRY_POINTS} | {LIBRARY_API_SYMBOL}
        if ldd:
            linked = subprocess.run([ldd, lib], stdout=subprocess.PIPE, universal_newlines=True).stdout
            assert "libpython" not in linked and "libpypy" not in linked


def test_no_source_in_the_compile_cache_uses_python():
    """Every library this test run has compiled so far (the suite's whole compile cache: every op,
    dtype and linker that ran before this test in any worker), read as text."""
    x = T.dvector("x")
    function([x], x * 2.0 + 1.0, mode=Mode(linker="c"))   # at least one, when this test runs alone
    root = cache.root()
    sources = [os.path.join(d, name) for d, _, names in os.walk(root) for name in names if name == cache.SOURCE_NAME]
    assert sources, "nothing compiled under %s" % root
    for path in sources:
        with open(path) as fh:
            text = fh.read()
        assert not FORBIDDEN_IN_C.search(text), path
        assert "#include <Python" not in text and "#include <numpy" not in text, path


def test_opwise_node_library_is_the_whole_graph_library_of_that_node():
    """Why the op matrices run ``c`` and not also ``c|py``: for a node alone, c|py builds (and
    loads) exactly the library that c builds; in a larger graph it builds each node as the library
    of that node alone, its inputs as slots. Either way the op's C code is the same."""
    x, z, y = T.dmatrix("x"), T.dmatrix("z"), T.dvector("y")
    c = T.tensor("bool", (None, None), name="c")
    values = {x: np.arange(6.0).reshape(2, 3) - 2, z: np.ones((2, 3)), y: np.arange(3.0), c: np.eye(2, 3) > 0}
    for inputs, out in (([x, z], T.mul(x, z)), ([x], T.sum(x, axis=0)), ([x, y], T.dot(x, y)),
                        ([x, z], T.concatenate([x, z])), ([c, x, z], T.switch(c, x, z)), ([x], T.cast(x, "int32"))):
        whole = function(inputs, out, mode=Mode(linker="c", optimizer=None))
        opwise = function(inputs, out, mode=Mode(linker="c|py", optimizer=None))
        assert len(whole.fgraph.apply_nodes) == 1, out
        (node_library,) = [compiled.library for compiled in opwise.maker.linker.compiled_nodes.values()]
        assert node_library is whole.maker.linker.compiled.library, out
        args = [values[v] for v in inputs]
        np.testing.assert_array_equal(whole(*args), opwise(*args))


def test_generated_source_is_readable():
    x, y = T.dmatrix("x"), T.dvector("y")
    f = function([x, y], T.exp(x) * y, mode=Mode(linker="c", optimizer=None))
    src = f.maker.linker.source()
    assert "/* node #0: Elemwise{exp}(x) */" in src
    assert "/* V0 = input 0: x (dmatrix) */" in src
    assert "\n        for (" in src  # loops are indented


# ------------------------------------------------------------------ marshaling


def test_strides_zero_negative_and_non_element_multiples(cmode):
    x = T.dmatrix("x")
    f = function([x], x * 2, mode=cmode)
    base = np.arange(12.0).reshape(3, 4)
    for arr in (base[::-1, ::-2], np.broadcast_to(np.arange(4.0), (3, 4)), base.T[:, 1:]):
        np.testing.assert_array_equal(f(arr), arr * 2)
    rec = np.zeros(4, dtype=[("a", "f8"), ("b", "i1")])
    rec["a"] = [1, 2, 3, 4]
    field = np.stack([rec["a"], rec["a"]])[:, :]  # contiguous
    packed = rec["a"]  # byte stride 9: not a whole number of elements, so it is copied
    assert packed.strides[0] % 8 != 0
    v = T.dvector("v")
    g = function([v], v + 1, mode=cmode)
    np.testing.assert_array_equal(g(packed), [2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(f(field), field * 2)


def test_python_scalars_and_dlpack_objects(cmode):
    s = T.dscalar("s")
    x = T.dvector("x")
    f = function([s, x], s * x, mode=cmode)
    np.testing.assert_array_equal(f(2, [1.0, 2.0]), [2.0, 4.0])

    class OnlyDLPack:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, *args, **kwargs):
            return self.arr.__dlpack__(*args, **kwargs)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    if not hasattr(np, "from_dlpack"):
        pytest.skip("this numpy has no from_dlpack")
    g = function([x], x * 3, mode=cmode, trust_input=True)
    np.testing.assert_array_equal(g(OnlyDLPack(np.array([1.0, 2.0]))), [3.0, 6.0])


def test_outputs_own_their_memory_and_large_ones_are_not_copied(cmode):
    from ffigraph.linkers.c.marshal import COPY_OWNED_BELOW

    x = T.dvector("x")
    n = COPY_OWNED_BELOW // 8 + 1
    big = function([x], T.exp(x), mode=cmode)(np.zeros(n))   # a first call: the library's own block
    assert big.flags.owndata is False and big.base is not None   # wrapped, no copy
    small = function([x], T.exp(x), mode=cmode)(np.zeros(3))
    assert small.flags.owndata   # a small block is copied into an ndarray, then freed
    for out in (big, small):
        out[0] = 5.0  # writable
        assert out[0] == 5.0 and np.all(out[1:] == 1.0)


def test_borrowed_view_of_input_keeps_input_alive():
    x = T.dvector("x")
    f = function([In(x, borrow=True)], Out(x[1:], borrow=True), mode=Mode(linker="c|py", optimizer=None))
    v = np.arange(4.0)
    out = f(v)
    assert np.shares_memory(out, v)   # a view (both lent and borrowed), not a copy
    del v
    import gc

    gc.collect()
    assert out.tolist() == [1.0, 2.0, 3.0]


# ------------------------------------------------------------------ errors from C


@pytest.mark.parametrize("bad,exc,pattern", [
    (np.ones(3, dtype="float32"), TypeError, "x.*dtype"),
    (np.ones((3, 1)), TypeError, "x.*expected 1 dimensions, got 2"),
])
def test_trusted_bad_input_is_caught_in_c(cmode, bad, exc, pattern):
    x = T.dvector("x")
    f = function([x], x + 1, mode=cmode, trust_input=True)
    with pytest.raises(exc, match=pattern):
        f(bad)
    np.testing.assert_array_equal(f(np.ones(3)), [2.0, 2.0, 2.0])


def test_trusted_static_shape_is_checked_in_c(cmode):
    x = T.tensor("float64", (3,), "x")
    f = function([x], x + 1, mode=cmode, trust_input=True)
    with pytest.raises(ValueError, match="x: shape \\(4,\\) does not fit"):
        f(np.ones(4))
    assert f(np.ones(3)).tolist() == [2.0, 2.0, 2.0]


class FailsOnNegative(COp, Op):
    """A user op with C code that fails (through sub['fail']) on a negative element."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        if (inputs[0] < 0).any():
            raise ValueError("negative input")
        out[0][0] = np.sqrt(inputs[0])

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (z,) = inputs, outputs
        return """
        int64_t i, n = %(x)s.shape[0];
        if (ffg_alloc_array(&%(z)s, 1, &n, sizeof(double), %(allocator)s, %(err)s))
            %(fail)s
        for (i = 0; i < n; ++i) {
            double v = ((double *)%(x)s.data)[i * %(x)s.strides[0]];
            if (v < 0) {
                ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "negative input at index %%lld", (long long)i);
                %(fail)s
            }
            ((double *)%(z)s.data)[i] = sqrt(v);
        }
        """ % dict(sub, x=x, z=z)

    def c_code_cache_version(self):
        return (1,)


def test_user_op_failure_names_node_and_input(cmode):
    x = T.dvector("x")
    f = function([x], FailsOnNegative()(x * 2) + 1, mode=cmode)
    with pytest.raises(ValueError, match="negative input at index 1") as info:
        f(np.array([1.0, -1.0]))
    text = str(info.value)
    assert "FailsOnNegative" in text and "x (position 0)" in text
    np.testing.assert_allclose(f(np.array([2.0, 8.0])), [3.0, 5.0])


def test_compile_error_carries_message_and_source_path():
    class Broken(COp, Op):
        __props__ = ()

        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def c_code(self, node, name, inputs, outputs, sub):
            return "this is not C;"

    x = T.dvector("x")
    with pytest.raises(CompileError) as info:
        function([x], Broken()(x), mode=Mode(linker="c", optimizer=None))
    assert "error" in info.value.compiler_output
    assert os.path.exists(info.value.source_path)


def test_default_mode_falls_back_per_node_and_says_so():
    x = T.dvector("x")
    f = function([x], PythonOnly()(T.exp(x)) + 1)
    np.testing.assert_allclose(f(np.zeros(2)), [11.0, 11.0])
    info = f.info()
    assert "linker cvm" in info
    assert re.search(r"PythonOnly.*python \(perform\)", info)
    # FAST_RUN fuses the lone exp into a vectorised loop; either way it runs in C
    assert re.search(r"(Elemwise\{exp\}|Composite\{exp\(i0\)\}).*C \(own library\)", info)
    g = function([x], T.exp(x) + 1)
    assert "C (whole-graph library)" in g.info()
    with pytest.raises(NotImplementedError, match="PythonOnly"):
        function([x], PythonOnly()(x), mode=Mode(linker="c", optimizer=None))


# ------------------------------------------------------------------ leaks


@rss_check_skip()
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to read RSS")
def test_no_leak_over_many_calls_and_failures(cmode):
    import gc

    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], [x + y, (x * y).sum()], mode=cmode)
    g = function([x], FailsOnNegative()(x + 1), mode=cmode)
    a, b, bad = np.ones(4), np.ones(4), -np.ones(4)
    for _ in range(2000):  # warm up allocator pools
        f(a, b)

    def block():
        for i in range(100000):
            f(a, b)
            if i % 10000 == 0:
                gc.collect()
        for _ in range(1000):
            with pytest.raises(ValueError):
                g(bad * 3)
        gc.collect()
        gc.collect()

    if hasattr(sys, "pypy_version_info"):
        # PyPy's GC arenas and the JIT's traces for the error path settle over a few full
        # blocks; a leak keeps growing after that
        for _ in range(3):
            block()
    before = rss_bytes()
    block()
    grown_mb = (rss_bytes() - before) / 2.0 ** 20
    assert grown_mb < 5, "RSS grew by %.1f MB" % grown_mb


def test_seed_double_under_clinker():
    from double_op import add, double, mul

    x, y, z = double("x"), double("y"), double("z")
    f = function([x, y, z], mul(add(x, y), z), mode=Mode(linker="c", optimizer=None))
    assert f(1.0, 2.0, 3.0) == 9.0
    src = f.maker.linker.source()
    assert re.search(r"V\d+ = V0 \+ V1;", src) and re.search(r"V\d+ = V\d+ \* V2;", src)


def test_example_script_runs():
    here = REPO_ROOT
    out = subprocess.run([sys.executable, os.path.join(here, "examples", "double_op.py")],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.split() == ["py", "linker:", "9.0", "c", "linker:", "9.0"]


def test_large_graph_compiles_and_runs():
    from ffigraph.linkers.c.codegen import LARGE_GRAPH

    x = T.dvector("x")
    y = x
    for i in range(60):
        y = T.tanh(y) * 0.5 + x if i % 3 else y + 1
    f = function([x], y, mode=Mode(linker="c", optimizer=None))
    assert len(f.fgraph.apply_nodes) > 2 * LARGE_GRAPH, "big enough for the large-graph code path"
    assert "noinline" in f.c_source()
    g = function([x], y, mode=Mode(linker="py", optimizer=None))
    v = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(f(v), g(v), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint64"])
def test_integer_overflow_wraps_as_numpy_does(dtype):
    """Generated C is built with -fwrapv: signed overflow wraps instead of being undefined."""
    info = np.iinfo(dtype)
    x, y = T.vector(dtype=dtype, name="x"), T.vector(dtype=dtype, name="y")
    f = function([x, y], [x + y, x * y, x - y, -x], mode=Mode(linker="c"))
    a = np.array([info.max, info.min, info.max, 0, info.min], dtype=dtype)
    b = np.array([1, -1 if info.min < 0 else 1, info.max, info.min, 2], dtype=dtype)
    with np.errstate(over="ignore"):
        expected = [a + b, a * b, a - b, -a]
    for got, want in zip(f(a, b), expected):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)

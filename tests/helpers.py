"""Test helpers: run a graph on several memory layouts and compare with a numpy oracle."""
import os

import numpy as np

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.graph import Apply
from ffigraph.graph.op import Op

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_HOSTS = os.path.join(REPO_ROOT, "tests", "export", "c")   # C programs that use compiled graphs, no Python

LAYOUTS = ("contiguous", "strided", "reversed")
FLOAT_DTYPES = ("float64", "float32")
INT_DTYPES = ("int64", "int32")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)


def relayout(arr, layout):
    """Same values as ``arr`` in another memory layout: contiguous, strided (every other
    element of a bigger buffer) or reversed (negative strides on every axis)."""
    arr = np.asarray(arr)
    if layout == "contiguous" or arr.ndim == 0:
        return np.array(arr, copy=True)  # (ascontiguousarray would make a 0-d array 1-d)
    if layout == "strided":
        buf = np.zeros(tuple(2 * s + 1 for s in arr.shape), dtype=arr.dtype)
        view = buf[tuple(slice(1, None, 2) for _ in arr.shape)]
        view[...] = arr
        assert arr.size < 2 or not view.flags.c_contiguous
        return view
    if layout == "reversed":
        rev = tuple(slice(None, None, -1) for _ in arr.shape)
        out = np.ascontiguousarray(arr[rev])[rev]
        assert all(s <= 0 for s in out.strides) or arr.size < 2
        return out
    raise ValueError(layout)


def tolerance(dtype):
    return {"float32": (2e-5, 1e-6), "float64": (1e-9, 1e-12)}.get(np.dtype(dtype).name, (0, 0))


def assert_matches(got, expected, vtype, rtol=None, atol=None):
    """``got`` has ``vtype``'s dtype and ndim, ``expected``'s shape, and equal values (NaN == NaN)."""
    assert isinstance(got, np.ndarray), "expected an ndarray, got %r" % (got,)
    assert got.dtype == np.dtype(vtype.dtype), "dtype %s != %s" % (got.dtype, vtype.dtype)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, "shape %s != %s" % (got.shape, expected.shape)
    for want, size in zip(vtype.shape, got.shape):
        assert want is None or want == size, "static shape %s violated by %s" % (vtype.shape, got.shape)
    r, a = tolerance(got.dtype)
    rtol = r if rtol is None else rtol
    atol = a if atol is None else atol
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def symbolic_like(values, prefix="in"):
    return [T.tensor(dtype=np.asarray(v).dtype, shape=(None,) * np.ndim(v), name="%s%d" % (prefix, i))
            for i, v in enumerate(values)]


def check(build, ref, values, mode, rtol=None, atol=None, layouts=LAYOUTS, check_shape=True):
    """Compile ``build(*symbols)`` for inputs like ``values`` and compare with ``ref(*values)``
    on every layout; also check that the op's ``infer_shape`` agrees with the result."""
    values = [np.asarray(v) for v in values]
    syms = symbolic_like(values)
    out = build(*syms)
    f = function(syms, out, mode=mode, on_unused_input="ignore")
    with np.errstate(all="ignore"):
        expected = ref(*values)
    for layout in layouts:
        got = f(*[relayout(v, layout) for v in values])
        assert_matches(got, expected, out.type, rtol, atol)
    if check_shape:
        # infer_shape is graph logic, the same whatever the linker: check it in Python
        shape_f = function(syms, list(T.inferred_shape(out)) or [T.constant(0)], mode="FAST_COMPILE",
                           on_unused_input="ignore")
        inferred = shape_f(*values)
        if out.ndim:
            assert tuple(int(s) for s in inferred) == np.shape(expected), \
                "infer_shape says %s, result has %s" % (inferred, np.shape(expected))
    return f


def sample(dtype, shape, rng=None, low=-3, high=3, special=False):
    """Random values of ``dtype``; with ``special``, float arrays get NaN, +inf and -inf too."""
    rng = np.random.default_rng(0) if rng is None else rng
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(low, high + 1, size=shape).astype(dtype)
    arr = rng.uniform(low, high, size=shape).astype(dtype)
    if special and arr.size >= 3:
        flat = arr.reshape(-1)
        flat[:3] = [np.nan, np.inf, -np.inf]
    return arr


def skip_without_c_code(mode, *dtypes):
    """Complex values have no C code yet (they run in Python under 'c|py' and 'cvm'); the
    whole-graph C linker, which needs C for every node, cannot run them."""
    import pytest

    if getattr(mode.linker, "name", "") == "c" and any(np.dtype(d).kind == "c" for d in dtypes):
        pytest.skip("no C code for complex dtypes yet: the strict whole-graph C linker cannot run this graph")


def _asan_in_process():
    from ffigraph.linkers.c.sanitize import asan_runtime_loaded

    return asan_runtime_loaded()


def rss_check_skip():
    """A skipif marker for tests that measure the resident size: under AddressSanitizer that says
    nothing, as its quarantine keeps freed blocks (the sanitizer phase leaves leaks to valgrind)."""
    import pytest

    return pytest.mark.skipif(_asan_in_process(), reason="resident size says nothing under AddressSanitizer "
                                                          "(its quarantine keeps freed blocks)")


class PythonOnly(Op):
    """An op with a ``perform`` and no C code: C linkers run it in Python."""
    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] * 10


class TwoOut(Op):
    """Perform only (no C code), two outputs of the input's type: the input plus and minus one."""

    def make_node(self, a):
        a = T.as_tensor_variable(a)
        return Apply(self, [a], [a.type(), a.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] + 1
        out[1][0] = inputs[0] - 1


def rss_bytes():
    """This process's resident size in bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

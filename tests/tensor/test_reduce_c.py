"""The plain-C code of the reductions (ffigraph.tensor.reduce_c) under the C linkers, against numpy.

Each test compiles one function for all its cases (``helpers.check_cases``: every dtype, shape, axis
and keepdims of one reduction kind in one library), and tests are parametrised by the kind at most.
The op tests run under the whole-graph C linker "c" only: "c|py" builds the very same node libraries
(tests/linkers/test_c_backend.py checks it), so it appears only where something specific to it is
checked (the Python fallback of complex values, the error message, the node libraries of a
reduction with keepdims).
"""
import functools

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph.fg import FunctionGraph
from ffigraph.linkers.c.codegen import generate, node_has_c_code
from ffigraph.graph.c_interface import MethodNotDefined
from ffigraph.tensor.math import ArgReduce, Reduce
from helpers import ACC_DTYPE, Case, caller, check_cases, np_accumulate, relayout, sample

KINDS = ("sum", "prod", "max", "min", "mean", "all", "any")
ARG_KINDS = ("argmax", "argmin")
DTYPES = ("float64", "float32", "int64", "int32", "bool")
NP = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
      "all": np.all, "any": np.any}

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture(params=["c"])
def c_mode(request):
    return Mode(linker=request.param, optimizer=None)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim for a in axis))


def np_ref(kind, a, axis, keepdims=False, dtype=None):
    """numpy's answer; argmax/argmin over several axes count in C order over them; sum, prod and mean
    under PyTensor's accumulation rule (``helpers.np_accumulate``: float32 sums in float64, ints in
    int64, and the result converted to ``dtype`` once)."""
    a = np.asarray(a)
    if kind in ARG_KINDS:
        axes = _axes(axis, a.ndim)
        kept = [d for d in range(a.ndim) if d not in axes]
        moved = np.transpose(a, kept + list(axes))
        flat = moved.reshape(moved.shape[:len(kept)] + (int(np.prod([a.shape[d] for d in axes])),))
        out = np.asarray((np.argmax if kind == "argmax" else np.argmin)(flat, axis=-1))
        if keepdims:
            out = out.reshape(tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
        return out
    if kind in ("sum", "prod", "mean"):
        return np_accumulate(kind, a, axis, keepdims, dtype=dtype)
    return np.asarray(NP[kind](a, axis=axis, keepdims=keepdims))


def order_tolerance(kind, a, axis, dtype):
    """(rtol, atol) for comparing a reduction of ``a`` to numpy's when the two add or multiply in
    different orders, with a ``dtype`` result: exact (0, 0) for integers and for max, min, all,
    any; otherwise the rounding bound of any order in the accumulator (n terms: n * eps of the
    accumulator dtype, times the sum of the finite magnitudes for sum and mean, relative for
    prod) plus a few roundings of the result. A float32 result so gets about 2.4e-7 relative, a
    float64 one about 4.4e-16 relative and (n * 2.2e-16) * sum|a| absolute."""
    out = np.dtype(dtype)
    if out.kind != "f" or kind not in ("sum", "prod", "mean"):
        return 0, 0
    a = np.asarray(a)
    acc_eps = np.finfo(np.dtype(ACC_DTYPE.get(a.dtype.name, a.dtype.name)) if a.dtype.kind == "f"
                       else np.float64).eps
    n = max(1, a.size // max(1, np.asarray(np_ref("sum", a, axis)).size))
    rtol = 2 * np.finfo(out).eps
    if kind == "prod":
        return rtol + n * acc_eps, np.finfo(out).tiny
    magnitudes = np.where(np.isfinite(a), np.abs(a.astype("float64")), 0.0)
    scale = float(np.max(np.sum(magnitudes, axis=axis), initial=0.0))
    return rtol, n * acc_eps * scale / (n if kind == "mean" else 1)


def out_dtype(kind, dtype):
    """PyTensor's output dtype for reduction ``kind`` of a ``dtype`` input, spelled out here: sum and
    prod of bools and signed ints accumulate in int64 (unsigned in uint64), mean of bools and ints is
    float64, all/any are bool, argmax/argmin int64, the others keep the dtype."""
    d = np.dtype(dtype)
    if kind in ("sum", "prod"):
        return {"b": "int64", "i": "int64", "u": "uint64"}.get(d.kind, d.name)
    if kind == "mean":
        return "float64" if d.kind in "biu" else d.name
    if kind in ("all", "any"):
        return "bool"
    if kind in ARG_KINDS:
        return "int64"
    return d.name  # max, min


def values(kind, dtype, shape, special=True):
    v = sample(dtype, shape, special=special)
    if kind == "prod" and np.dtype(dtype).kind in "iu":
        v = np.where(v == 0, np.asarray(2, dtype=dtype), v).astype(dtype)
    return v


@functools.lru_cache(maxsize=None)
def build(kind, axis, keepdims=False, dtype=None):
    """The graph of a case (one object per arguments, so that cases of the same graph share a node)."""
    kw = {} if dtype is None else {"dtype": dtype}
    return lambda x: getattr(T, kind)(x, axis=axis, keepdims=keepdims, **kw)


def ref(kind, axis, keepdims=False, dtype=None):
    return lambda a: np_ref(kind, a, axis, keepdims=keepdims, dtype=dtype)


def assert_ran_in_c(f):
    """Every node of ``f`` ran as C (the op-wise linker silently falls back to Python otherwise)."""
    linker = f.maker.linker
    for node, how in linker.describe_nodes():
        assert how.startswith("C"), "%s: %s" % (node, how)


def c_source(outputs, inputs):
    fg = FunctionGraph(inputs, outputs, clone=True)
    return generate(fg).source


def _label(*parts):
    return ",".join(p if isinstance(p, str) else repr(p) for p in parts)


# ------------------------------------------------------------------ the grid


AXES = (None, 0, 1, -1, (0, 2), ())


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_grid_3d(kind, c_mode):
    """Every dtype of DTYPES and axis of AXES on a (2, 3, 4) input, in one compiled function."""
    cases = [Case(_label(dtype, axis), build(kind, axis), ref(kind, axis), [values(kind, dtype, (2, 3, 4))],
                  dtype=out_dtype(kind, dtype))
             for dtype in DTYPES for axis in AXES]
    assert_ran_in_c(check_cases(cases, c_mode))


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_keepdims(kind, c_mode):
    cases = [Case(_label(dtype, axis), build(kind, axis, keepdims=True), ref(kind, axis, keepdims=True),
                  [values(kind, dtype, (3, 2, 4))], dtype=out_dtype(kind, dtype))
             for dtype in ("float64", "int32") for axis in (None, 1, (0, 2), -1)]
    check_cases(cases, c_mode)


def test_keepdims_under_the_opwise_linker():
    """Under "c|py" a reduction with keepdims is three nodes, each its own library and each run in C:
    the reduction, the DimShuffle that puts the reduced axes back (its library returns a view of
    its input slot) and the copy of the output."""
    cases = [Case(_label(kind, dtype, axis), build(kind, axis, keepdims=True), ref(kind, axis, keepdims=True),
                  [values(kind, dtype, (3, 2, 4))], dtype=out_dtype(kind, dtype))
             for kind, dtype, axis in (("sum", "float64", 1), ("argmax", "int32", (0, 2)))]
    f = check_cases(cases, Mode(linker="c|py", optimizer=None))
    assert_ran_in_c(f)
    ops = sorted(type(node.op).__name__ for node, _ in f.maker.linker.describe_nodes())
    assert ops == ["ArgReduce", "DeepCopyOp", "DeepCopyOp", "DimShuffle", "DimShuffle", "Reduce"], ops


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_0d_input(kind, c_mode):
    cases = [Case(_label(dtype, axis), build(kind, axis), ref(kind, axis),
                  [np.asarray(values(kind, dtype, (5,))[3])], dtype=out_dtype(kind, dtype))
             for dtype in DTYPES for axis in (None, ())]
    assert_ran_in_c(check_cases(cases, c_mode))


@pytest.mark.parametrize("kind", KINDS)
def test_4d_and_layouts_that_do_not_merge(kind, c_mode):
    # transposed views: the reduced axes are not one run of memory, so the nested loops run
    x = values(kind, "float64", (3, 4, 2, 5), special=False)
    axes = ((1, 2), (0, 1, 2), (2, 3), (0, 3), (1, 2, 3))
    cases = [Case(_label(axis), build(kind, axis), ref(kind, axis), [x], dtype=out_dtype(kind, "float64"))
             for axis in axes]
    f = check_cases(cases, c_mode)
    for perm in ((3, 2, 1, 0), (0, 2, 1, 3), (1, 0, 3, 2)):
        view = x.transpose(perm)
        for arg in (np.ascontiguousarray(view), view):
            got = caller(f, cases).many({case.label: [arg] for case in cases})
            for axis, case in zip(axes, cases):
                np.testing.assert_allclose(got[case.label], np_ref(kind, view, axis), rtol=1e-12)


def test_zero_strides_broadcast_input(c_mode):
    x = T.dmatrix()
    f = function([x], [T.sum(x, axis=0), T.max(x, axis=1), T.argmin(x), T.mean(x)], mode=c_mode)
    v = np.broadcast_to(np.arange(4.0), (3, 4))     # stride 0 along axis 0
    got = f(v)
    np.testing.assert_allclose(got[0], v.sum(axis=0))
    np.testing.assert_allclose(got[1], v.max(axis=1))
    assert got[2] == 0
    np.testing.assert_allclose(got[3], v.mean())


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_other_integer_dtypes(kind, c_mode):
    cases = [Case(_label(dtype, axis), build(kind, axis), ref(kind, axis),
                  [values(kind, dtype, (3, 4), special=False)], dtype=out_dtype(kind, dtype))
             for dtype in ("int8", "int16", "uint8", "uint16", "uint32", "uint64") for axis in (None, 1)]
    assert_ran_in_c(check_cases(cases, c_mode))


EXPLICIT_DTYPES = (("float64", "float32"), ("int32", "float32"), ("int64", "float64"), ("float32", "float64"),
                   ("int32", "int32"), ("bool", "int32"), ("float64", "int64"), ("int64", "int8"),
                   ("int32", "bool"))


@pytest.mark.parametrize("kind", ("sum", "prod", "mean"))
def test_explicit_dtype(kind, c_mode):
    cases = [Case(_label(in_dtype, out_dtype, axis), build(kind, axis, dtype=out_dtype),
                  ref(kind, axis, dtype=out_dtype), [values(kind, in_dtype, (3, 5), special=False)],
                  dtype=out_dtype)
             for in_dtype, out_dtype in EXPLICIT_DTYPES if not (kind == "mean" and np.dtype(out_dtype).kind != "f")
             for axis in (1, None)]
    assert_ran_in_c(check_cases(cases, c_mode))


# ------------------------------------------------------------------ arithmetic details


def test_integer_overflow_wraps(c_mode):
    x, y, u = T.tensor("int64", (None,)), T.tensor("int32", (None,)), T.tensor("uint8", (None,))
    f = function([x, y, u], [T.sum(x), T.prod(x), T.sum(y, dtype="int32"), T.prod(u, dtype="uint8")],
                 mode=c_mode)
    v = np.array([2**62, 2**62, 2**62, 3], dtype="int64")
    w = np.full(5, 2**30, dtype="int32")
    b = np.array([200, 3, 7], dtype="uint8")
    with np.errstate(all="ignore"):
        want = [np.sum(v), np.prod(v)]
    got = f(v, w, b)
    assert got[0] == want[0] and got[1] == want[1]
    assert got[2] == np.sum(w, dtype="int32")
    assert got[3] == np.prod(b, dtype="uint8")


def test_bool_sum_counts(c_mode):
    x = T.tensor("bool", (None, None))
    f = function([x], [T.sum(x), T.sum(x, axis=0), T.mean(x)], mode=c_mode)
    v = sample("bool", (50, 7))
    got = f(v)
    assert got[0].dtype == np.int64 and got[0] == v.sum()
    np.testing.assert_array_equal(got[1], v.sum(axis=0))
    assert got[2].dtype == np.float64   # as PyTensor (and numpy): the int64 count over a float64 one
    np.testing.assert_allclose(got[2], v.mean(), rtol=1e-12)


def test_float32_sums_are_accurate(c_mode):
    """float32 sums, means and products accumulate in float64 (PyTensor's acc_dtype) and are rounded
    to float32 once. (Before, ffigraph accumulated float32 in float32 to match numpy's own float32
    sums bit for bit; this test then compared with ``np.sum(v)`` on float32.)"""
    rng = np.random.default_rng(5)
    v = rng.uniform(0, 1, size=(1000003,)).astype("float32")
    exact = v.astype("float64").sum()
    q = v[:50] + np.float32(0.5)
    # the matrix of the bit-for-bit row sums below, in the same function (the next draw of rng)
    mat = rng.standard_normal((37, 201)).astype("float32")
    x, y, z = T.tensor("float32", (None,)), T.tensor("float32", (None,)), T.tensor("float32", (None, None))
    f = function([x, y, z], [T.sum(x), T.mean(x), T.prod(y), T.sum(z, axis=1), T.sum(z), T.mean(z, axis=1)],
                 mode=c_mode)
    s, m, p = f(v, q, mat)[:3]
    assert s.dtype == np.float32 and m.dtype == np.float32 and p.dtype == np.float32
    assert abs(float(s) - exact) <= 1e-6 * exact
    assert abs(float(m) - exact / v.size) <= 1e-6 * exact / v.size
    for layout in ("strided", "reversed"):
        s2 = f(relayout(v, layout), q, mat)[0]
        assert abs(float(s2) - exact) <= 1e-6 * exact
    # numpy's pairwise summation, in float64, rounded once: bit for bit (numpy 1.x sums long arrays
    # in blocks of 8192, its buffer size, so compare on shorter ones)
    short = v[:8000]
    got = f(short, q, mat)
    s3, m3 = got[:2]
    d = short.astype("float64")
    assert s3.tobytes() == np.float32(d.sum()).tobytes()
    assert m3.tobytes() == (np.float32(d.sum()) / np.float32(short.size)).tobytes()
    assert p.tobytes() == np.float32(np.prod(q.astype("float64"))).tobytes()
    m64 = mat.astype("float64")
    for g, want in zip(got[3:], (m64.sum(axis=1).astype("float32"), np.float32(m64.sum()),
                                 m64.sum(axis=1).astype("float32") / np.float32(201))):
        assert g.tobytes() == np.asarray(want, dtype="float32").tobytes()
    # one rounding at the end: the correctly rounded float32 of the double sum
    w = rng.standard_normal(7).astype("float32")
    assert f(w, q, mat)[0] == np.float32(w.astype("float64").sum())


def test_float64_pairwise_sum_is_accurate(c_mode):
    rng = np.random.default_rng(6)
    v = rng.standard_normal((2000, 513)) * 1e6 + 1.0
    x = T.dmatrix()
    f = function([x], [T.sum(x), T.sum(x, axis=1), T.sum(x, axis=0), T.mean(x)], mode=c_mode)
    got = f(v)
    import math

    exact = math.fsum(v.reshape(-1))
    assert abs(got[0] - exact) <= 1e-12 * np.abs(v).sum()
    np.testing.assert_allclose(got[1], v.sum(axis=1), rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(got[2], v.sum(axis=0), rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(got[3], exact / v.size, rtol=1e-10)


def test_nan_and_inf(c_mode):
    """Every kind over None, 0 and 1 of a matrix of NaN and infinities, float64 and float32, in one
    compiled function; then explicit expectations on some of its outputs."""
    cases = []
    for dtype in ("float64", "float32"):
        x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, -np.inf, 0.0], [np.inf, -np.inf, 2.0, 1.0],
                      [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=dtype)
        cases += [Case(_label(dtype, kind, axis), build(kind, axis), ref(kind, axis), [x],
                       dtype=out_dtype(kind, dtype))
                  for kind in KINDS + ARG_KINDS for axis in (None, 0, 1)]
    got = caller(check_cases(cases, c_mode), cases).many()
    for dtype in ("float64", "float32"):
        amax, amin, mx, mn, flat_max, flat_min, s = [
            got[_label(dtype, kind, axis)] for kind, axis in (("argmax", 1), ("argmin", 1), ("max", 1), ("min", 1),
                                                              ("argmax", None), ("argmin", None), ("sum", 1))]
        # the first NaN wins; ties go to the first occurrence
        assert list(amax) == [1, 1, 0, 0] and list(amin) == [1, 2, 1, 0]
        assert flat_max == 1 and flat_min == 1
        assert np.isnan(mx[0]) and mx[1] == 5 and mx[2] == np.inf and mx[3] == -np.inf
        assert np.isnan(mn[0]) and mn[1] == -np.inf
        assert np.isnan(s[0]) and s[1] == -np.inf and np.isnan(s[2])


def test_nan_in_last_position_propagates(c_mode):
    x = T.dvector()
    f = function([x], [T.max(x), T.min(x), T.argmax(x), T.argmin(x)], mode=c_mode)
    got = f(np.array([1.0, 2.0, 3.0, np.nan]))
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 3 and got[3] == 3
    got = f(np.array([np.nan, 2.0, np.nan]))
    assert np.isnan(got[0]) and got[2] == 0 and got[3] == 0


def test_argmax_several_axes_c_order(c_mode):
    rng = np.random.default_rng(3)
    x = rng.permutation(2 * 3 * 4 * 5).astype("float64").reshape(2, 3, 4, 5)
    cases = [Case(_label("x", kind, axis), build(kind, axis), ref(kind, axis), [x], dtype="int64")
             for kind in ARG_KINDS for axis in ((1, 3), (0, 2), (0, 1, 2, 3), (3, 1), (1, 2), (0, 1))]
    # ties: the first occurrence in C order over the reduced axes, also in different runs of a
    # reduction over axes that are not adjacent (nested loops), on every layout
    t = np.zeros((2, 3, 4), dtype="int32")
    t[0, 1, 3] = t[0, 2, 0] = 7
    t[1, 0, 2] = t[1, 2, 1] = -7
    cases += [Case(_label("t", kind, axis), build(kind, axis), ref(kind, axis), [t], dtype="int64")
              for axis in ((1, 2), (0, 2)) for kind in ARG_KINDS]
    u = np.full((3, 20, 40), 5.0)
    u[1, 3, 7] = u[2, 3, 1] = u[0, 3, 39] = 9.0
    u[2, 5, 0] = np.nan
    u[1, 5, 30] = np.nan
    cases += [Case(_label("u", kind, axis), build(kind, axis), ref(kind, axis), [u], dtype="int64")
              for kind, axis in (("argmax", (0, 2)), ("argmin", (0, 2)), ("argmax", (1, 2)))]
    got = caller(check_cases(cases, c_mode), cases).many()
    amax, amin = got[_label("t", "argmax", (1, 2))], got[_label("t", "argmin", (1, 2))]
    assert list(amax) == [1 * 4 + 3, 0] and list(amin) == [0, 0 * 4 + 2]
    hmax = got[_label("u", "argmax", (0, 2))]
    assert hmax[3] == 39 and hmax[5] == 40 + 30


def test_all_any_of_floats(c_mode):
    fv = T.dvector()
    g = function([fv], [T.all(fv), T.any(fv)], mode=c_mode)
    assert [bool(v) for v in g(np.array([np.nan, 2.0]))] == [True, True]
    assert [bool(v) for v in g(np.array([0.0, -0.0]))] == [False, False]
    assert [bool(v) for v in g(np.array([0.0, 3.0]))] == [False, True]
    r = g(np.array([1.0]))
    assert r[0].dtype == np.bool_ and r[1].dtype == np.bool_


# ------------------------------------------------------------------ empty inputs


EMPTY = (((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((3, 0), 0), ((2, 0, 3), (0, 1)), ((0,), None), ((0, 0), 1))


@pytest.mark.parametrize("kind", ("sum", "prod", "mean", "all", "any"))
def test_reduce_of_empty(kind, c_mode):
    """Every dtype of DTYPES on every (shape, axis) of EMPTY, in one compiled function (cases of one
    graph share its node)."""
    cases = [Case(_label(dtype, shape, axis), build(kind, axis), ref(kind, axis), [values(kind, dtype, shape)],
                  dtype=out_dtype(kind, dtype))
             for dtype in DTYPES for shape, axis in EMPTY]
    f = check_cases(cases, c_mode)
    # explicit expectations, independently of numpy: the axis-0 graph of each dtype on a (0, 2) input
    zeros = {_label(dtype, (0, 3), 0): [np.zeros((0, 2), dtype=dtype)] for dtype in DTYPES}
    got = caller(f, cases).many(zeros)
    want = {"sum": 0, "prod": 1, "mean": np.nan, "all": True, "any": False}[kind]
    for label in zeros:
        np.testing.assert_array_equal(got[label], np.full((2,), want, dtype=got[label].dtype))


@pytest.mark.parametrize("kind", ("max", "min", "argmax", "argmin"))
def test_order_reduce_of_empty_axis_raises_then_works(kind, c_mode):
    """Every dtype and axis in one compiled function: an empty reduced axis of one node fails the
    call, and the function still works afterwards."""
    cases = [Case(_label(dtype, axis), build(kind, axis), ref(kind, axis), [values(kind, dtype, (2, 3))],
                  rtol=0, atol=0, dtype=out_dtype(kind, dtype))
             for dtype in ("float64", "int32", "bool", "float32") for axis in (0, None, (0, 1))]
    f = check_cases(cases, c_mode)
    for case in cases:
        dtype = case.values[0].dtype
        with pytest.raises(ValueError) as info:
            caller(f, cases).many({case.label: [np.zeros((0, 3), dtype=dtype)]})
        assert "empty" in str(info.value), case
        assert "(0, 3)" in str(info.value), case
        # the function still works afterwards
        got = caller(f, cases).many()
        for other in cases:
            np.testing.assert_array_equal(got[other.label], other.ref(*other.values))
        with pytest.raises(ValueError):
            caller(f, cases).many({case.label: [np.zeros((0, 0), dtype=dtype)]})


@pytest.mark.parametrize("kind", ("max", "min", "argmax", "argmin"))
def test_order_reduce_of_empty_kept_axes(kind, c_mode):
    cases = [Case(_label(shape, axis), build(kind, axis), ref(kind, axis), [np.ones(shape, dtype="float64")],
                  dtype=out_dtype(kind, "float64"))
             for shape, axis in (((0, 3), 1), ((2, 0), 0), ((0, 2, 3), (1, 2)), ((2, 0, 3), (0, 2)))]
    check_cases(cases, c_mode)


def test_error_message_matches_python():
    x = T.dmatrix()
    v = np.zeros((3, 0))
    messages = []
    for linker in ("py", "c", "c|py"):
        f = function([x], T.max(x, axis=1), mode=Mode(linker=linker, optimizer=None))
        with pytest.raises(ValueError) as info:
            f(v)
        messages.append(str(info.value))
        # the function (of one output) still works afterwards
        np.testing.assert_array_equal(f(np.arange(6.0).reshape(3, 2)), [1.0, 3.0, 5.0])
    expected = "Max{axis=1}: cannot take the max over an empty axis (input shape (3, 0), axes (1,))"
    for m in messages:
        assert expected in m, messages


# ------------------------------------------------------------------ the generated code


def test_generated_code_is_plain_c():
    x = T.tensor("float32", (None, None, None))
    outs = [getattr(T, k)(x, axis=a) for k in KINDS + ARG_KINDS for a in (None, 1, (0, 2), ())]
    src = c_source(outs, [x])
    assert "Python.h" not in src and "numpy" not in src.lower()
    assert "Py_" not in src and "PyObject" not in src
    # readable: the node code is commented and indented
    assert "/* Sum{axis=0,1,2}: sum of" in src
    assert "\n        for (" in src


def test_complex_has_no_c_code():
    for dtype in ("complex128", "complex64"):
        x = T.tensor(dtype, (None, None))
        for out in (T.sum(x, axis=0), T.prod(x), T.mean(x), T.all(x), T.any(x, axis=1)):
            assert not node_has_c_code(out.owner)
            with pytest.raises(MethodNotDefined):
                out.owner.op.c_code(out.owner, "n", ["a"], ["b"], dict(fail="goto f;", err="err",
                                                                       allocator="al"))
        # the op-wise linker runs it in Python
        f = function([x], T.sum(x, axis=1), mode=Mode(linker="c|py", optimizer=None))
        v = (np.arange(6) + 1j * np.arange(6)).reshape(2, 3).astype(dtype)
        np.testing.assert_allclose(f(v), v.sum(axis=1), rtol=1e-6)


def test_ops_have_c_code_and_cache_version():
    x = T.dmatrix()
    for out in (T.sum(x), T.argmax(x, axis=1), T.max(x, axis=0), T.mean(x, axis=(0, 1))):
        assert isinstance(out.owner.op, (Reduce, ArgReduce))
        assert node_has_c_code(out.owner)
        assert out.owner.op.c_code_cache_version() == (1,)
        assert out.owner.op.c_headers() == ["<math.h>"]


def test_reduction_in_a_larger_graph(c_mode):
    x, y = T.dvector(), T.dvector()
    f = function([x, y], [T.sum(T.exp(x) * y), T.max(x - y), T.argmin(x * y)], mode=c_mode)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(1001), rng.standard_normal(1001)
    got = f(a, b)
    np.testing.assert_allclose(got[0], np.sum(np.exp(a) * b), rtol=1e-12)
    assert got[1] == np.max(a - b)
    assert got[2] == np.argmin(a * b)


# ------------------------------------------------------------------ longer runs (the helpers' lanes and blocks)


LONG_DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint16", "bool")
LONG_KINDS = ("max", "min", "argmax", "argmin", "sum", "mean", "prod", "any", "all")


def _long_runs(dtype, n, rng):
    """The vectors of length ``n`` that the reductions of one dtype are checked on."""
    v = sample(dtype, (n,), rng=rng, low=-50, high=50)
    if dtype == "int8":
        v = v.astype("int8")
    cases = [v, v[::-1], np.sort(v), np.sort(v)[::-1]]
    if np.dtype(dtype).kind == "f" and n <= 40:
        for pos in range(n):   # a NaN in every lane and in the tail
            w = v.copy()
            w[pos] = np.nan
            cases.append(w)
        w = v.copy()
        w[n // 2:] = np.nan
        cases.append(w)
    return cases


def _scalar_close(got, want, rtol, atol):
    """numpy.testing's verdict on two 0-d results (NaN equals NaN, an inf only itself, else
    |got - want| <= atol + rtol |want|), without its cost: the test below compares some 180,000
    pairs, and on PyPy a numpy.testing call per pair took most of its 40 s. A pair that fails is
    then reported by numpy.testing."""
    g, w = got.item(), want.item()
    if g == w:
        return True
    if g != g or w != w:
        return g != g and w != w
    if abs(g) == float("inf") or abs(w) == float("inf"):
        return False   # an inf equals only itself (checked above)
    return abs(g - w) <= atol + rtol * abs(w)


def test_long_runs_max_min_sum(c_mode):
    """Every kind of LONG_KINDS on a vector of every dtype of LONG_DTYPES, in one compiled function,
    called on vectors of every length and layout (each dtype with its own generator, as alone)."""
    syms = [T.tensor(dtype, (None,)) for dtype in LONG_DTYPES]
    f = function(syms, [getattr(T, k)(x) for x in syms for k in LONG_KINDS], mode=c_mode)
    rngs = [np.random.default_rng(11) for _ in LONG_DTYPES]
    lengths = list(range(1, 40)) + [127, 128, 129, 1000, 1031]
    nk = len(LONG_KINDS)
    for n in lengths:
        runs = [_long_runs(dtype, n, rng) for dtype, rng in zip(LONG_DTYPES, rngs)]
        for r in range(max(len(ws) for ws in runs)):
            # round r: each dtype takes its r-th vector (or repeats its last, not checked again)
            chosen = [ws[min(r, len(ws) - 1)] for ws in runs]
            for layout in ("contiguous", "strided", "reversed"):
                got = f(*[relayout(w, layout) for w in chosen])
                for i, (dtype, ws, w) in enumerate(zip(LONG_DTYPES, runs, chosen)):
                    if r >= len(ws):
                        continue
                    with np.errstate(all="ignore"):
                        for k, g in zip(LONG_KINDS, got[i * nk:(i + 1) * nk]):
                            want = np_ref(k, w, None)
                            assert g.dtype == out_dtype(k, dtype), (k, dtype, g.dtype)
                            if k in ("sum", "mean", "prod") and np.dtype(g.dtype).kind == "f":
                                rtol, atol = order_tolerance(k, w, None, g.dtype)
                                if not _scalar_close(g, want, rtol, atol):
                                    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol,
                                                               err_msg="%s %s n=%d" % (k, dtype, n))
                            else:
                                want = want.astype(g.dtype)
                                if not _scalar_close(g, want, 0, 0):
                                    np.testing.assert_array_equal(g, want, err_msg="%s %s n=%d" % (k, dtype, n))


@pytest.mark.parametrize("kind", KINDS)
def test_column_reductions_fold_into_the_output(kind, c_mode):
    dtypes = ("float64", "float32", "int32", "bool")
    xs = {dtype: sample(dtype, (37, 5, 19), rng=np.random.default_rng(12), special=True) for dtype in dtypes}
    axes = {_label(dtype, axis): axis for dtype in dtypes for axis in (0, 1, (0, 1))}
    cases = [Case(_label(dtype, axis), build(kind, axis), ref(kind, axis), [xs[dtype]], dtype=out_dtype(kind, dtype))
             for dtype in dtypes for axis in (0, 1, (0, 1))]
    f = check_cases(cases, c_mode)
    # transposed views: the kept last axis is strided
    views = {case.label: [case.values[0].transpose(1, 0, 2)[:, ::2, ::-1]] for case in cases}
    got = caller(f, cases).many(views)
    for case in cases:
        view = views[case.label][0]
        with np.errstate(all="ignore"):
            want = case.ref(view)
        rtol, atol = order_tolerance(kind, view, axes[case.label], case.dtype)
        np.testing.assert_allclose(got[case.label], want, rtol=rtol, atol=atol, equal_nan=True, err_msg=case.label)


def test_column_sum_matches_numpy_bit_for_bit(c_mode):
    """A float32 column sum folds rows into float64 accumulators (a temporary) in numpy's order, then
    rounds once: numpy's float64 column sum rounded to float32, bit for bit; the mean divides that
    by the float32 count. (Before the float64 accumulator, the reference was numpy's float32 sum.)"""
    rng = np.random.default_rng(13)
    m = T.tensor("float32", (None, None))
    f = function([m], [T.sum(m, axis=0), T.mean(m, axis=0)], mode=c_mode)
    a = rng.standard_normal((300, 41)).astype("float32")
    s, mu = f(a)
    col = a.astype("float64").sum(axis=0).astype("float32")
    assert s.tobytes() == col.tobytes()
    assert mu.tobytes() == (col / np.float32(300)).tobytes()

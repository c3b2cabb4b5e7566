"""The plain-C code of the reductions (ffigraph.tensor.reduce_c) under the C linkers, against numpy."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.graph.fg import FunctionGraph
from ffigraph.linkers.c.codegen import generate, node_has_c_code
from ffigraph.linkers.c.interface import MethodNotDefined
from ffigraph.tensor.math import ArgReduce, Reduce
from helpers import check, relayout, sample

KINDS = ("sum", "prod", "max", "min", "mean", "all", "any")
ARG_KINDS = ("argmax", "argmin")
DTYPES = ("float64", "float32", "int64", "int32", "bool")
NP = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
      "all": np.all, "any": np.any}

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture(params=["c", "c|py"])
def c_mode(request):
    return Mode(linker=request.param, optimizer=None)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim for a in axis))


def np_ref(kind, a, axis, keepdims=False, dtype=None):
    """numpy's answer; argmax/argmin over several axes count in C order over them."""
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
    kw = {} if dtype is None else {"dtype": dtype}
    return np.asarray(NP[kind](a, axis=axis, keepdims=keepdims, **kw))


def values(kind, dtype, shape, special=True):
    v = sample(dtype, shape, special=special)
    if kind == "prod" and np.dtype(dtype).kind in "iu":
        v = np.where(v == 0, np.asarray(2, dtype=dtype), v).astype(dtype)
    return v


def build(kind, axis, keepdims=False, **kw):
    return lambda x: getattr(T, kind)(x, axis=axis, keepdims=keepdims, **kw)


def assert_ran_in_c(f):
    """Every node of ``f`` ran as C (the op-wise linker silently falls back to Python otherwise)."""
    linker = f.maker.linker
    for node, how in linker.describe_nodes():
        assert how.startswith("C"), "%s: %s" % (node, how)


def c_source(outputs, inputs):
    fg = FunctionGraph(inputs, outputs, clone=True)
    return generate(fg).source


# ------------------------------------------------------------------ the grid


AXES = (None, 0, 1, -1, (0, 2), ())


@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_grid_3d(kind, dtype, axis, c_mode):
    x = values(kind, dtype, (2, 3, 4))
    f = check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode,
              check_shape=(dtype == "float64"))
    assert_ran_in_c(f)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_keepdims(kind, c_mode):
    for dtype in ("float64", "int32"):
        x = values(kind, dtype, (3, 2, 4))
        for axis in (None, 1, (0, 2), -1):
            check(build(kind, axis, keepdims=True), lambda a: np_ref(kind, a, axis, keepdims=True), [x], c_mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_0d_input(kind, dtype, c_mode):
    s = np.asarray(values(kind, dtype, (5,))[3])
    for axis in (None, ()):
        f = check(build(kind, axis), lambda a: np_ref(kind, a, axis), [s], c_mode)
        assert_ran_in_c(f)


@pytest.mark.parametrize("kind", KINDS)
def test_4d_and_layouts_that_do_not_merge(kind, c_mode):
    # transposed views: the reduced axes are not one run of memory, so the nested loops run
    x = values(kind, "float64", (3, 4, 2, 5), special=False)
    for axis in ((1, 2), (0, 1, 2), (2, 3), (0, 3), (1, 2, 3)):
        f = check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode)
        for perm in ((3, 2, 1, 0), (0, 2, 1, 3), (1, 0, 3, 2)):
            view = x.transpose(perm)
            np.testing.assert_allclose(f(np.ascontiguousarray(view)), np_ref(kind, view, axis), rtol=1e-12)
            np.testing.assert_allclose(f(view), np_ref(kind, view, axis), rtol=1e-12)


def test_zero_strides_broadcast_input(c_mode):
    x = T.dmatrix()
    f = function([x], [T.sum(x, axis=0), T.max(x, axis=1), T.argmin(x), T.mean(x)], mode=c_mode)
    v = np.broadcast_to(np.arange(4.0), (3, 4))     # stride 0 along axis 0
    got = f(v)
    np.testing.assert_allclose(got[0], v.sum(axis=0))
    np.testing.assert_allclose(got[1], v.max(axis=1))
    assert got[2] == 0
    np.testing.assert_allclose(got[3], v.mean())


@pytest.mark.parametrize("dtype", ("int8", "int16", "uint8", "uint16", "uint32", "uint64"))
@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_other_integer_dtypes(kind, dtype, c_mode):
    x = values(kind, dtype, (3, 4), special=False)
    for axis in (None, 1):
        f = check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False,
                  rtol=1e-6)
        assert_ran_in_c(f)


@pytest.mark.parametrize("kind,in_dtype,out_dtype",
                         [(k, i, o) for k in ("sum", "prod", "mean")
                          for i, o in (("float64", "float32"), ("int32", "float32"), ("int64", "float64"),
                                       ("float32", "float64"), ("int32", "int32"), ("bool", "int32"),
                                       ("float64", "int64"), ("int64", "int8"), ("int32", "bool"))
                          if not (k == "mean" and np.dtype(o).kind != "f")])
def test_explicit_dtype(kind, in_dtype, out_dtype, c_mode):
    x = values(kind, in_dtype, (3, 5), special=False)
    for axis in (1, None):
        f = check(build(kind, axis, dtype=out_dtype), lambda a: np_ref(kind, a, axis, dtype=out_dtype), [x],
                  c_mode, check_shape=False)
        assert_ran_in_c(f)


# ------------------------------------------------------------------ arithmetic details


def test_integer_overflow_wraps(c_mode):
    x = T.tensor("int64", (None,))
    f = function([x], [T.sum(x), T.prod(x)], mode=c_mode)
    v = np.array([2**62, 2**62, 2**62, 3], dtype="int64")
    with np.errstate(all="ignore"):
        want = [np.sum(v), np.prod(v)]
    got = f(v)
    assert got[0] == want[0] and got[1] == want[1]
    y = T.tensor("int32", (None,))
    g = function([y], T.sum(y, dtype="int32"), mode=c_mode)
    w = np.full(5, 2**30, dtype="int32")
    assert g(w) == np.sum(w, dtype="int32")
    u = T.tensor("uint8", (None,))
    h = function([u], T.prod(u, dtype="uint8"), mode=c_mode)
    assert h(np.array([200, 3, 7], dtype="uint8")) == np.prod(np.array([200, 3, 7], dtype="uint8"), dtype="uint8")


def test_bool_sum_counts(c_mode):
    x = T.tensor("bool", (None, None))
    f = function([x], [T.sum(x), T.sum(x, axis=0), T.mean(x)], mode=c_mode)
    v = sample("bool", (50, 7))
    got = f(v)
    assert got[0].dtype == np.int64 and got[0] == v.sum()
    np.testing.assert_array_equal(got[1], v.sum(axis=0))
    assert got[2].dtype == np.float32
    np.testing.assert_allclose(got[2], v.mean(), rtol=1e-6)


@pytest.mark.parametrize("accumulator", ["float32", "float64"])
def test_float32_sums_are_accurate(accumulator, c_mode, monkeypatch):
    import ffigraph.tensor.reduce_c as reduce_c

    monkeypatch.setattr(reduce_c, "FLOAT32_ACCUMULATOR", accumulator)
    rng = np.random.default_rng(5)
    v = rng.uniform(0, 1, size=(1000003,)).astype("float32")
    exact = v.astype("float64").sum()
    q = v[:50] + np.float32(0.5)
    x, y = T.tensor("float32", (None,)), T.tensor("float32", (None,))
    f = function([x, y], [T.sum(x), T.mean(x), T.prod(y)], mode=c_mode)
    s, m, p = f(v, q)
    assert s.dtype == np.float32 and m.dtype == np.float32 and p.dtype == np.float32
    assert abs(float(s) - exact) <= 1e-6 * exact
    assert abs(float(m) - exact / v.size) <= 1e-6 * exact / v.size
    for layout in ("strided", "reversed"):
        s2, _, _ = f(relayout(v, layout), q)
        assert abs(float(s2) - exact) <= 1e-6 * exact
    if accumulator == "float32":
        # numpy's pairwise summation in float32, bit for bit (numpy 1.x sums long arrays in
        # blocks of 8192, its buffer size, so compare on shorter ones)
        short = v[:8000]
        s3, m3, _ = f(short, q)
        assert s3.tobytes() == np.sum(short).tobytes() and m3.tobytes() == np.mean(short).tobytes()
        assert p.tobytes() == np.prod(q).tobytes()
        mat = rng.standard_normal((37, 201)).astype("float32")
        z = T.tensor("float32", (None, None))
        g = function([z], [T.sum(z, axis=1), T.sum(z), T.mean(z, axis=1)], mode=c_mode)
        for got, want in zip(g(mat), (mat.sum(axis=1), mat.sum(), mat.mean(axis=1))):
            assert got.tobytes() == want.tobytes()
    else:
        # one rounding at the end: the correctly rounded float32 of the double sum
        w = rng.standard_normal(7).astype("float32")
        assert f(w, q)[0] == np.float32(w.astype("float64").sum())


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


@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_nan_and_inf(dtype, c_mode):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, -np.inf, 0.0], [np.inf, -np.inf, 2.0, 1.0],
                  [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=dtype)
    for kind in KINDS + ARG_KINDS:
        for axis in (None, 0, 1):
            check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False)
    v = T.tensor(dtype, (None, None))
    f = function([v], [T.argmax(v, axis=1), T.argmin(v, axis=1), T.max(v, axis=1), T.min(v, axis=1),
                       T.argmax(v), T.argmin(v), T.sum(v, axis=1)], mode=c_mode)
    amax, amin, mx, mn, flat_max, flat_min, s = f(x)
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
    for kind in ARG_KINDS:
        for axis in ((1, 3), (0, 2), (0, 1, 2, 3), (3, 1), (1, 2), (0, 1)):
            check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False)
    # ties: the first occurrence in C order over the reduced axes
    t = np.zeros((2, 3, 4), dtype="int32")
    t[0, 1, 3] = t[0, 2, 0] = 7
    t[1, 0, 2] = t[1, 2, 1] = -7
    v = T.tensor("int32", (None, None, None))
    f = function([v], [T.argmax(v, axis=(1, 2)), T.argmin(v, axis=(1, 2))], mode=c_mode)
    amax, amin = f(t)
    assert list(amax) == [1 * 4 + 3, 0] and list(amin) == [0, 0 * 4 + 2]
    # ties in different runs of a reduction over axes that are not adjacent (nested loops)
    g = function([v], [T.argmax(v, axis=(0, 2)), T.argmin(v, axis=(0, 2))], mode=c_mode)
    for layout in ("contiguous", "strided", "reversed"):
        amax, amin = g(relayout(t, layout))
        np.testing.assert_array_equal(amax, np_ref("argmax", t, (0, 2)))
        np.testing.assert_array_equal(amin, np_ref("argmin", t, (0, 2)))
    u = np.full((3, 20, 40), 5.0)
    u[1, 3, 7] = u[2, 3, 1] = u[0, 3, 39] = 9.0
    u[2, 5, 0] = np.nan
    u[1, 5, 30] = np.nan
    w = T.tensor("float64", (None, None, None))
    h = function([w], [T.argmax(w, axis=(0, 2)), T.argmin(w, axis=(0, 2)), T.argmax(w, axis=(1, 2))], mode=c_mode)
    for layout in ("contiguous", "strided", "reversed"):
        got = h(relayout(u, layout))
        for k, axis, g_ in zip(("argmax", "argmin", "argmax"), ((0, 2), (0, 2), (1, 2)), got):
            np.testing.assert_array_equal(g_, np_ref(k, u, axis))
    assert h(u)[0][3] == 39 and h(u)[0][5] == 40 + 30


def test_all_any_of_floats(c_mode):
    fv = T.dvector()
    g = function([fv], [T.all(fv), T.any(fv)], mode=c_mode)
    assert [bool(v) for v in g(np.array([np.nan, 2.0]))] == [True, True]
    assert [bool(v) for v in g(np.array([0.0, -0.0]))] == [False, False]
    assert [bool(v) for v in g(np.array([0.0, 3.0]))] == [False, True]
    r = g(np.array([1.0]))
    assert r[0].dtype == np.bool_ and r[1].dtype == np.bool_


# ------------------------------------------------------------------ empty inputs


@pytest.mark.parametrize("kind", ("sum", "prod", "mean", "all", "any"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_of_empty(kind, dtype, c_mode):
    for shape, axis in (((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((3, 0), 0), ((2, 0, 3), (0, 1)),
                        ((0,), None), ((0, 0), 1)):
        x = values(kind, dtype, shape)
        check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False)
    f = function([x := T.tensor(dtype, (None, None))], getattr(T, kind)(x, axis=0), mode=c_mode)
    got = f(np.zeros((0, 2), dtype=dtype))
    want = {"sum": 0, "prod": 1, "mean": np.nan, "all": True, "any": False}[kind]
    np.testing.assert_array_equal(got, np.full((2,), want, dtype=got.dtype))


@pytest.mark.parametrize("kind", ("max", "min", "argmax", "argmin"))
@pytest.mark.parametrize("dtype", ("float64", "int32", "bool", "float32"))
def test_order_reduce_of_empty_axis_raises_then_works(kind, dtype, c_mode):
    x = T.tensor(dtype, (None, None))
    for axis in (0, None, (0, 1)):
        f = function([x], getattr(T, kind)(x, axis=axis), mode=c_mode)
        with pytest.raises(ValueError) as info:
            f(np.zeros((0, 3), dtype=dtype))
        assert "empty" in str(info.value)
        assert "(0, 3)" in str(info.value)
        # the function still works afterwards
        v = values(kind, dtype, (2, 3))
        np.testing.assert_array_equal(f(v), np_ref(kind, v, axis))
        with pytest.raises(ValueError):
            f(np.zeros((0, 0), dtype=dtype))


@pytest.mark.parametrize("kind", ("max", "min", "argmax", "argmin"))
def test_order_reduce_of_empty_kept_axes(kind, c_mode):
    for shape, axis in (((0, 3), 1), ((2, 0), 0), ((0, 2, 3), (1, 2)), ((2, 0, 3), (0, 2))):
        x = np.ones(shape, dtype="float64")
        check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False)


def test_error_message_matches_python():
    x = T.dmatrix()
    v = np.zeros((3, 0))
    messages = []
    for linker in ("py", "c", "c|py"):
        f = function([x], T.max(x, axis=1), mode=Mode(linker=linker, optimizer=None))
        with pytest.raises(ValueError) as info:
            f(v)
        messages.append(str(info.value))
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


@pytest.mark.parametrize("dtype", ("float64", "float32", "int64", "int32", "int8", "uint16", "bool"))
def test_long_runs_max_min_sum(dtype, c_mode):
    x = T.tensor(dtype, (None,))
    kinds = ("max", "min", "argmax", "argmin", "sum", "mean", "prod", "any", "all")
    f = function([x], [getattr(T, k)(x) for k in kinds], mode=c_mode)
    rng = np.random.default_rng(11)
    lengths = list(range(1, 40)) + [127, 128, 129, 1000, 1031]
    for n in lengths:
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
        for w in cases:
            for layout in ("contiguous", "strided", "reversed"):
                got = f(relayout(w, layout))
                with np.errstate(all="ignore"):
                    for k, g in zip(kinds, got):
                        want = np_ref(k, w, None)
                        if k == "prod" and np.dtype(dtype).kind == "f":
                            np.testing.assert_allclose(g, want, rtol=1e-5)
                        elif k in ("sum", "mean") and np.dtype(g.dtype).kind == "f":
                            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
                        else:
                            np.testing.assert_array_equal(g, want.astype(g.dtype), err_msg="%s n=%d" % (k, n))


@pytest.mark.parametrize("dtype", ("float64", "float32", "int32", "bool"))
def test_column_reductions_fold_into_the_output(dtype, c_mode):
    rng = np.random.default_rng(12)
    x = sample(dtype, (37, 5, 19), rng=rng, special=True)
    for kind in KINDS:
        for axis in (0, 1, (0, 1)):
            check(build(kind, axis), lambda a: np_ref(kind, a, axis), [x], c_mode, check_shape=False)
            # transposed views: the kept last axis is strided
            view = x.transpose(1, 0, 2)[:, ::2, ::-1]
            f = function([v := T.tensor(dtype, (None, None, None))], getattr(T, kind)(v, axis=axis), mode=c_mode)
            with np.errstate(all="ignore"):
                want = np_ref(kind, view, axis)
            np.testing.assert_allclose(f(view), want, rtol=1e-5, equal_nan=True)


def test_column_sum_matches_numpy_bit_for_bit(c_mode):
    rng = np.random.default_rng(13)
    m = T.tensor("float32", (None, None))
    f = function([m], [T.sum(m, axis=0), T.mean(m, axis=0)], mode=c_mode)
    a = rng.standard_normal((300, 41)).astype("float32")
    s, mu = f(a)
    assert s.tobytes() == a.sum(axis=0).tobytes()
    assert mu.tobytes() == a.mean(axis=0).tobytes()

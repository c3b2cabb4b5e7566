"""Reductions (sum, prod, max, min, mean, all, any, argmax, argmin) and ``dot``, against numpy."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from helpers import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, assert_matches, check, relayout, sample

KINDS = ("sum", "prod", "max", "min", "mean", "all", "any")
ARG_KINDS = ("argmax", "argmin")
NP = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
      "all": np.all, "any": np.any, "argmax": np.argmax, "argmin": np.argmin}

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")

SIGNED = ("bool", "int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float32", "float64")
REAL_DTYPES = SIGNED + UNSIGNED + FLOATS


def expected_dtype(kind, dtype):
    """The output dtype the spec gives for reduction ``kind`` of a ``dtype`` input."""
    if kind in ("sum", "prod"):
        if dtype in SIGNED:
            return "int64"
        if dtype in UNSIGNED:
            return "uint64"
        return dtype
    if kind in ("all", "any"):
        return "bool"
    if kind in ARG_KINDS:
        return "int64"
    if kind == "mean":
        if dtype in ("bool", "int8", "int16", "uint8", "uint16"):
            return "float32"
        if dtype in ("int32", "int64", "uint32", "uint64"):
            return "float64"
        return dtype
    return dtype  # max, min


def values_for(kind, dtype, shape, special=True):
    v = sample(dtype, shape, special=special)
    if kind == "prod" and np.dtype(dtype).kind in "iu":
        v = np.where(v == 0, np.asarray(2, dtype=dtype), v).astype(dtype)  # keep products non-trivial
    return v


def np_reduce(kind, a, axis, keepdims, dtype=None):
    """numpy's answer for ``kind``; argmax/argmin over several axes count in C order over them."""
    a = np.asarray(a)
    if kind in ARG_KINDS:
        return np_arg(kind, a, axis, keepdims)
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    return np.asarray(NP[kind](a, axis=axis, keepdims=keepdims, **kw))


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(a % ndim for a in axis))


def np_arg(kind, a, axis, keepdims):
    axes = _axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, kept + list(axes))
    flat = moved.reshape(moved.shape[:len(kept)] + (int(np.prod([a.shape[d] for d in axes])),))
    out = NP[kind](flat, axis=-1)
    out = np.asarray(out)
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
    return out


def _build(kind, axis, keepdims, dtype_in):
    fn = getattr(T, kind)

    def build(x):
        out = fn(x, axis=axis, keepdims=keepdims)
        assert out.dtype == expected_dtype(kind, dtype_in), (kind, dtype_in, out.dtype)
        return out

    return build


# ------------------------------------------------------------------ the main grid

AXES_3D = (None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, -2), (0, 1, 2), ())


GRID_3D = [(k, a) for k in KINDS + ARG_KINDS for a in AXES_3D if not (k in ARG_KINDS and a == ())]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("kind,axis", GRID_3D, ids=repr)
def test_reduce_3d(kind, dtype, axis, keepdims, mode):
    x = values_for(kind, dtype, (2, 3, 4))
    check(_build(kind, axis, keepdims, dtype), lambda a: np_reduce(kind, a, axis, keepdims), [x], mode)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2, (0, 1), (1, 0)], ids=repr)
@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_2d(kind, axis, mode):
    for dtype in ("float64", "int32"):
        x = values_for(kind, dtype, (5, 3))
        check(_build(kind, axis, False, dtype), lambda a: np_reduce(kind, a, axis, False), [x], mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_1d_and_0d(kind, dtype, mode):
    v = values_for(kind, dtype, (7,))
    for axis in (None, 0, -1, (0,)):
        for keepdims in (False, True):
            check(_build(kind, axis, keepdims, dtype), lambda a: np_reduce(kind, a, axis, keepdims), [v], mode)
    s = np.asarray(v[3])
    for axis in (None, ()):
        if kind in ARG_KINDS and axis == ():
            continue
        check(_build(kind, axis, False, dtype), lambda a: np_reduce(kind, a, axis, False), [s], mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_methods(kind, mode):
    x = values_for(kind, "float64", (3, 4, 2))
    for axis, keepdims in ((None, False), (1, False), (-1, True), ((0, 2), False), ((0, 2), True)):
        check(lambda v: getattr(v, kind)(axis=axis, keepdims=keepdims),
              lambda a: np_reduce(kind, a, axis, keepdims), [x], mode)
    # positional axis as in numpy
    check(lambda v: getattr(v, kind)(1), lambda a: np_reduce(kind, a, 1, False), [x], mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_axis_as_list_and_numpy_ints(kind, mode):
    x = values_for(kind, "float64", (3, 4, 2))
    check(lambda v: getattr(T, kind)(v, axis=[2, 0]), lambda a: np_reduce(kind, a, (0, 2), False), [x], mode)
    check(lambda v: getattr(T, kind)(v, axis=np.int64(-2)), lambda a: np_reduce(kind, a, 1, False), [x], mode)
    check(lambda v: getattr(T, kind)(v, axis=(np.int32(0), 1), keepdims=True),
          lambda a: np_reduce(kind, a, (0, 1), True), [x], mode)


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_4d_many_axes(kind, mode):
    x = values_for(kind, "float64", (2, 3, 2, 3), special=False)
    for axis in ((1, 3), (0, 2, 3), (-4, -1)):
        check(lambda v: getattr(T, kind)(v, axis=axis, keepdims=True),
              lambda a: np_reduce(kind, a, axis, True), [x], mode)


@pytest.mark.parametrize("kind", ARG_KINDS)
def test_argreduce_several_axes_c_order(kind, mode):
    # distinct values, so the index of the extremum is unique and easy to check by hand
    rng = np.random.default_rng(3)
    x = rng.permutation(2 * 3 * 4 * 5).astype("float64").reshape(2, 3, 4, 5)
    for axis in ((1, 3), (0, 2), (0, 1, 2, 3), (3, 1)):
        f = check(lambda v: getattr(T, kind)(v, axis=axis), lambda a: np_arg(kind, a, axis, False), [x], mode)
        got = f(x)
        axes = _axes(axis, 4)
        kept = [d for d in range(4) if d not in axes]
        for pos in np.ndindex(*[x.shape[d] for d in kept]):
            sub = x[tuple(pos[kept.index(d)] if d in kept else slice(None) for d in range(4))]
            target = sub.max() if kind == "argmax" else sub.min()
            assert sub.reshape(-1)[got[pos]] == target
            assert np.unravel_index(got[pos], sub.shape) == tuple(
                int(i[0]) for i in np.nonzero(sub == target))


# ------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("dtype", REAL_DTYPES)
@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_output_dtype(kind, dtype, mode):
    x = T.tensor(dtype, (None, None))
    out = getattr(T, kind)(x, axis=1)
    assert out.dtype == expected_dtype(kind, dtype)
    assert out.ndim == 1
    assert getattr(T, kind)(x).ndim == 0
    v = values_for(kind, dtype, (3, 4), special=False)
    got = function([x], out, mode=mode)(v)
    assert got.dtype == np.dtype(expected_dtype(kind, dtype))
    want = np_reduce(kind, v, 1, False)
    if kind == "mean":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))


DTYPE_ARGS = [("float64", "float32"), ("int32", "float32"), ("int64", "float64"), ("float32", "float64"),
              ("int32", "int32"), ("bool", "int32")]


@pytest.mark.parametrize("kind,in_dtype,out_dtype",
                         [(k, i, o) for k in ("sum", "prod", "mean") for i, o in DTYPE_ARGS
                          if not (k == "mean" and np.dtype(o).kind != "f")])
def test_reduce_explicit_dtype(kind, in_dtype, out_dtype, mode):
    x = values_for(kind, in_dtype, (3, 5), special=False)

    def build(v):
        out = getattr(T, kind)(v, axis=1, dtype=out_dtype)
        assert out.dtype == out_dtype
        return out

    check(build, lambda a: np_reduce(kind, a, 1, False, dtype=out_dtype), [x], mode)
    check(lambda v: getattr(v, kind)(dtype=out_dtype) if kind != "mean" else T.mean(v, dtype=out_dtype),
          lambda a: np_reduce(kind, a, None, False, dtype=out_dtype), [x], mode)


def test_sum_dtype_accumulates_in_that_dtype(mode):
    # int8 values whose sum overflows int8 but not int64: default dtype is int64
    x = np.full((300,), 100, dtype="int8")
    check(lambda v: T.sum(v), lambda a: np.sum(a, dtype="int64"), [x], mode)
    f = function([s := T.tensor("uint8", (None,))], T.sum(s), mode=mode)
    got = f(np.full((10,), 200, dtype="uint8"))
    assert got.dtype == np.uint64 and got == 2000


# ------------------------------------------------------------------ empty and special values


@pytest.mark.parametrize("kind", ["sum", "prod", "mean", "all", "any"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_over_empty(kind, dtype, mode):
    for shape, axis in (((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((3, 0), 0), ((2, 0, 3), (0, 1)),
                        ((0,), None)):
        x = values_for(kind, dtype, shape)
        check(_build(kind, axis, False, dtype), lambda a: np_reduce(kind, a, axis, False), [x], mode)
    # explicit expectations, independently of numpy
    f = function([x := T.tensor(dtype, (None, None))], getattr(T, kind)(x, axis=0), mode=mode)
    got = f(np.zeros((0, 2), dtype=dtype))
    want = {"sum": 0, "prod": 1, "mean": np.nan, "all": True, "any": False}[kind]
    np.testing.assert_array_equal(got, np.full((2,), want, dtype=got.dtype))


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_order_reduce_over_empty_axis_raises(kind, dtype, mode):
    x = T.tensor(dtype, (None, None))
    for axis in (0, None, (0, 1)):
        f = function([x], getattr(T, kind)(x, axis=axis), mode=mode)
        v = np.zeros((0, 3), dtype=dtype)
        with pytest.raises(ValueError):
            NP[kind](v, axis=axis if kind in ("max", "min") or not isinstance(axis, tuple) else None)
        with pytest.raises(ValueError):
            f(v)


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_order_reduce_of_non_empty_axis_of_empty_array(kind, dtype, mode):
    # only the reduced axes must be non-empty: numpy gives an empty result here
    for shape, axis in (((0, 3), 1), ((0, 3), -1), ((2, 0), 0), ((0, 2, 3), (1, 2)), ((2, 0, 3), (0, 2))):
        for keepdims in (False, True):
            x = np.ones(shape, dtype=dtype)
            check(_build(kind, axis, keepdims, dtype), lambda a: np_reduce(kind, a, axis, keepdims), [x], mode)


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin", "sum", "mean", "prod"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_propagates(kind, dtype, mode):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf], [np.inf, np.nan, np.nan]], dtype=dtype)
    for axis in (None, 0, 1):
        check(_build(kind, axis, False, dtype), lambda a: np_reduce(kind, a, axis, False), [x], mode)
    got = function([v := T.tensor(dtype, (None, None))], getattr(T, kind)(v, axis=1), mode=mode)(x)
    if kind in ("argmax", "argmin"):
        assert list(got) == [1, 2 if kind == "argmin" else 1, 1]
    else:
        assert np.isnan(got[0]) and np.isnan(got[2])
        if kind == "max":
            assert got[1] == 5
        if kind == "min":
            assert got[1] == -np.inf


def test_all_any_values(mode):
    x = np.array([[True, True], [True, False], [False, False]])
    a = T.tensor("bool", (None, None))
    f = function([a], [T.all(a, axis=1), T.any(a, axis=1), a.all(), a.any(), T.all(a, axis=0, keepdims=True)],
                 mode=mode)
    r = f(x)
    np.testing.assert_array_equal(r[0], [True, False, False])
    np.testing.assert_array_equal(r[1], [True, True, False])
    assert r[2].shape == () and not r[2] and r[3].shape == () and r[3]
    np.testing.assert_array_equal(r[4], [[False, False]])
    # non-bool inputs: nonzero is true, NaN is true
    fv = T.dvector()
    g = function([fv], [T.all(fv), T.any(fv)], mode=mode)
    assert [bool(v) for v in g(np.array([np.nan, 2.0]))] == [True, True]
    assert [bool(v) for v in g(np.array([0.0, -0.0]))] == [False, False]


def test_mean_of_ints_is_exact_division(mode):
    x = T.tensor("int64", (None, None))
    f = function([x], [T.mean(x, axis=0), T.mean(x)], mode=mode)
    col, total = f(np.array([[1, 2], [2, 4], [4, 5]], dtype="int64"))
    np.testing.assert_allclose(col, [7 / 3, 11 / 3], rtol=1e-15)
    np.testing.assert_allclose(total, 18 / 6)
    assert col.dtype == np.float64


# ------------------------------------------------------------------ graph-building errors


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_bad_axis_raises_when_building(kind):
    x = T.dtensor3()
    for axis in (3, -4, 10, (0, 3), (0, -4)):
        with pytest.raises(ValueError):
            getattr(T, kind)(x, axis=axis)
        with pytest.raises(ValueError):
            getattr(x, kind)(axis=axis)
    for axis in ((0, 0), (1, -2), (2, -1, 0)):
        with pytest.raises(ValueError):
            getattr(T, kind)(x, axis=axis)
    with pytest.raises(ValueError):
        getattr(T, kind)(T.dscalar(), axis=0)


# ------------------------------------------------------------------ dot


def _dot_tol(*dtypes):
    if "float32" in dtypes and np.result_type(*dtypes) == np.float32:
        return dict(rtol=1e-4, atol=1e-4)
    return {}


DOT_SHAPES = [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((1, 1), (1, 1)),
              ((4, 1), (1, 3)), ((1,), (1, 6))]


@pytest.mark.parametrize("xs,ys", DOT_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_dot_same_dtype(xs, ys, dtype, mode):
    a, b = sample(dtype, xs), sample(dtype, ys, rng=np.random.default_rng(1))

    def build(x, y):
        out = T.dot(x, y)
        assert out.dtype == dtype and out.ndim == len(xs) + len(ys) - 2
        return out

    check(build, np.dot, [a, b], mode, **_dot_tol(dtype))


@pytest.mark.parametrize("dx,dy", [("int32", "float32"), ("float32", "int32"), ("int64", "float32"),
                                   ("float32", "float64"), ("int32", "int64"), ("int64", "float64"),
                                   ("bool", "float64"), ("int32", "int32")])
def test_dot_mixed_dtypes(dx, dy, mode):
    for xs, ys in (((3, 4), (4, 2)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2))):
        a, b = sample(dx, xs), sample(dy, ys, rng=np.random.default_rng(2))
        want = np.result_type(a.dtype, b.dtype).name

        def build(x, y):
            out = T.dot(x, y)
            assert out.dtype == want, (dx, dy, out.dtype, want)
            return out

        check(build, np.dot, [a, b], mode, **_dot_tol(dx, dy))


def test_dot_with_special_values(mode):
    a = np.array([[1.0, np.inf], [0.0, 2.0], [np.nan, 1.0]])
    b = np.array([[0.0, 1.0], [3.0, -np.inf]])
    check(T.dot, np.dot, [a, b], mode)


@pytest.mark.parametrize("xs,ys", [((3, 0), (0, 4)), ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 2)),
                                   ((0, 3), (3, 2)), ((2, 3), (3, 0))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
def test_dot_empty(xs, ys, dtype, mode):
    a, b = np.zeros(xs, dtype=dtype), np.zeros(ys, dtype=dtype)
    f = check(T.dot, np.dot, [a, b], mode)
    got = f(a, b)
    assert got.shape == np.dot(a, b).shape
    assert np.all(got == 0)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float32"])
def test_dot_scalar_operand_multiplies(dtype, mode):
    s = np.asarray(2.5 if dtype.startswith("float") else 3, dtype=dtype)
    m = sample(dtype, (3, 4))
    v = sample(dtype, (5,))
    for args in ([s, m], [m, s], [v, s], [s, s]):
        def build(x, y):
            out = T.dot(x, y)
            assert out.dtype == dtype
            return out

        check(build, np.dot, args, mode)


def test_dot_methods_and_matmul(mode):
    a, b, v = sample("float64", (3, 4)), sample("float64", (4, 2)), sample("float64", (4,))
    check(lambda x, y: x.dot(y), np.dot, [a, b], mode)
    check(lambda x, y: x @ y, lambda p, q: p @ q, [a, b], mode)
    check(lambda x, y: x @ y, lambda p, q: p @ q, [a, v], mode)
    check(lambda x, y: y @ x.T, lambda p, q: q @ p.T, [a, v], mode)
    check(lambda x, y: y.dot(y), lambda p, q: q.dot(q), [a, v], mode)
    # a Python list on the left goes through __rmatmul__
    x = T.dmatrix()
    f = function([x], [1.0, 2.0, 3.0] @ x, mode=mode)
    np.testing.assert_allclose(f(a), np.array([1.0, 2.0, 3.0]) @ a)


def test_dot_of_3d_raises_type_error():
    for x, y in ((T.dtensor3(), T.dmatrix()), (T.dmatrix(), T.dtensor3()), (T.dtensor3(), T.dvector()),
                 (T.dtensor4(), T.dtensor4())):
        with pytest.raises(TypeError):
            T.dot(x, y)
        with pytest.raises(TypeError):
            x @ y


def test_dot_static_mismatch_raises_when_building():
    with pytest.raises(ValueError):
        T.dot(T.tensor("float64", (2, 3)), T.tensor("float64", (4, 2)))
    with pytest.raises(ValueError):
        T.dot(T.tensor("float64", (3,)), T.tensor("float64", (4,)))


@pytest.mark.parametrize("xs,ys", [((3, 4), (5, 2)), ((4,), (5,)), ((3, 4), (3,)), ((4,), (3, 4)),
                                   ((3, 0), (1, 2))], ids=str)
def test_dot_mismatched_inner_raises_at_run_time(xs, ys, mode):
    x = T.tensor("float64", (None,) * len(xs))
    y = T.tensor("float64", (None,) * len(ys))
    f = function([x, y], T.dot(x, y), mode=mode)
    with pytest.raises(ValueError):
        f(np.ones(xs), np.ones(ys))
    # and the function still works afterwards
    good = (xs[:-1] + (ys[0],), ys)
    np.testing.assert_allclose(f(np.ones(good[0]), np.ones(good[1])), np.dot(np.ones(good[0]), np.ones(good[1])))


def test_reduction_of_dot_and_layouts(mode):
    # a small composite graph: reductions of a product, on every layout
    a, b = sample("float64", (4, 3), special=False), sample("float64", (3, 5), rng=np.random.default_rng(7))
    check(lambda x, y: T.dot(x, y).sum(axis=0) + T.max(x, axis=1).mean(),
          lambda p, q: np.dot(p, q).sum(axis=0) + np.max(p, axis=1).mean(), [a, b], mode)


def test_reduce_output_does_not_alias_input(mode):
    v = sample("float64", (3, 4))
    for build in (lambda x: T.sum(x, axis=()), lambda x: T.max(x, axis=(), keepdims=True),
                  lambda x: T.prod(x, axis=())):
        x = T.dmatrix()
        f = function([x], build(x), mode=mode)
        for layout in LAYOUTS:
            inp = relayout(v, layout)
            before = inp.copy()
            out = f(inp)
            assert_matches(out, v, build(T.dmatrix()).type)
            assert not np.shares_memory(out, inp)
            out[...] = 123.0
            np.testing.assert_array_equal(inp, before)

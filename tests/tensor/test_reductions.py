"""Reductions (sum, prod, max, min, mean, all, any, argmax, argmin) and ``dot``, against numpy.

Each test compiles one function for all its cases (``helpers.check_cases``: every dtype, shape,
axis and keepdims of one reduction kind in one library), and tests are parametrised by the kind
at most (and the linker, ``mode``).
"""
import functools

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, Case, assert_matches, caller, check, check_cases,
                     np_accumulate, relayout, sample)

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
    """The output dtype PyTensor gives for reduction ``kind`` of a ``dtype`` input."""
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
        # the int64/uint64 sum over a float64 count: float64 for every bool and int (floatX or not)
        if dtype in SIGNED + UNSIGNED:
            return "float64"
        return dtype
    return dtype  # max, min


def values_for(kind, dtype, shape, special=True):
    v = sample(dtype, shape, special=special)
    if kind == "prod" and np.dtype(dtype).kind in "iu":
        v = np.where(v == 0, np.asarray(2, dtype=dtype), v).astype(dtype)  # keep products non-trivial
    return v


def np_reduce(kind, a, axis, keepdims, dtype=None):
    """numpy's answer for ``kind``; argmax/argmin over several axes count in C order over them.

    sum, prod and mean follow PyTensor's accumulation rule (``helpers.np_accumulate``): the input
    converted to the accumulator (float32 to float64, ints to int64), reduced, and converted to the
    output dtype; numpy's own ``np.sum(a, dtype=...)`` converts each element to ``dtype`` instead
    and sums float32 in float32, which is what ffigraph did before it took PyTensor's rule."""
    a = np.asarray(a)
    if kind in ARG_KINDS:
        return np_arg(kind, a, axis, keepdims)
    if kind in ("sum", "prod", "mean"):
        return np_accumulate(kind, a, axis, keepdims, dtype=dtype)
    return np.asarray(NP[kind](a, axis=axis, keepdims=keepdims))


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


@functools.lru_cache(maxsize=None)
def _build(kind, axis, keepdims, dtype_in):
    """The graph of a case, checking its output dtype (one object per arguments, so that cases of
    the same graph share a node)."""
    fn = getattr(T, kind)

    def build(x):
        out = fn(x, axis=axis, keepdims=keepdims)
        assert out.dtype == expected_dtype(kind, dtype_in), (kind, dtype_in, out.dtype)
        return out

    return build


def _ref(kind, axis, keepdims, dtype=None):
    return lambda a: np_reduce(kind, a, axis, keepdims, dtype=dtype)


def _label(*parts):
    return ",".join(p if isinstance(p, str) else repr(p) for p in parts)


def _case(kind, dtype, axis, keepdims, x, *label):
    """The case of ``kind`` over ``axis`` of ``x`` (of ``dtype``), labelled by its parameters."""
    return Case(_label(dtype, axis, keepdims, *label), _build(kind, axis, keepdims, dtype),
                _ref(kind, axis, keepdims), [x], dtype=expected_dtype(kind, dtype))


# ------------------------------------------------------------------ the main grid

AXES_3D = (None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, -2), (0, 1, 2), ())


def _grid_3d(kind, keepdims):
    return [_case(kind, dtype, axis, keepdims, values_for(kind, dtype, (2, 3, 4)))
            for dtype in ALL_DTYPES for axis in AXES_3D if not (kind in ARG_KINDS and axis == ())]


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_3d(kind, mode):
    """Every dtype of ALL_DTYPES and axis of AXES_3D on a (2, 3, 4) input, in one compiled function."""
    check_cases(_grid_3d(kind, False), mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_3d_keepdims(kind, mode):
    """test_reduce_3d with keepdims=True."""
    check_cases(_grid_3d(kind, True), mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_2d(kind, mode):
    cases = [_case(kind, dtype, axis, False, values_for(kind, dtype, (5, 3)))
             for axis in (None, 0, 1, -1, -2, (0, 1), (1, 0)) for dtype in ("float64", "int32")]
    check_cases(cases, mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_1d_and_0d(kind, mode):
    cases = []
    for dtype in ALL_DTYPES:
        v = values_for(kind, dtype, (7,))
        cases += [_case(kind, dtype, axis, keepdims, v, "1d")
                  for axis in (None, 0, -1, (0,)) for keepdims in (False, True)]
        s = np.asarray(v[3])
        cases += [_case(kind, dtype, axis, False, s, "0d")
                  for axis in (None, ()) if not (kind in ARG_KINDS and axis == ())]
    check_cases(cases, mode)


def _method(kind, *args, **kw):
    return lambda v: getattr(v, kind)(*args, **kw)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_methods(kind, mode):
    x = values_for(kind, "float64", (3, 4, 2))
    want = expected_dtype(kind, "float64")
    cases = [Case(_label(axis, keepdims), _method(kind, axis=axis, keepdims=keepdims),
                  _ref(kind, axis, keepdims), [x], dtype=want)
             for axis, keepdims in ((None, False), (1, False), (-1, True), ((0, 2), False), ((0, 2), True))]
    # positional axis as in numpy
    cases.append(Case("positional 1", _method(kind, 1), _ref(kind, 1, False), [x], dtype=want))
    check_cases(cases, mode)


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_axis_as_list_and_numpy_ints(kind, mode):
    x = values_for(kind, "float64", (3, 4, 2))
    fn = getattr(T, kind)
    want = expected_dtype(kind, "float64")
    check_cases([
        Case("[2, 0]", lambda v: fn(v, axis=[2, 0]), _ref(kind, (0, 2), False), [x], dtype=want),
        Case("int64(-2)", lambda v: fn(v, axis=np.int64(-2)), _ref(kind, 1, False), [x], dtype=want),
        Case("(int32(0), 1)", lambda v: fn(v, axis=(np.int32(0), 1), keepdims=True), _ref(kind, (0, 1), True), [x],
             dtype=want),
    ], mode)


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_4d_many_axes(kind, mode):
    x = values_for(kind, "float64", (2, 3, 2, 3), special=False)
    fn = getattr(T, kind)
    check_cases([Case(_label(axis), lambda v, axis=axis: fn(v, axis=axis, keepdims=True), _ref(kind, axis, True), [x],
                      dtype=expected_dtype(kind, "float64"))
                 for axis in ((1, 3), (0, 2, 3), (-4, -1))], mode)


@pytest.mark.parametrize("kind", ARG_KINDS)
def test_argreduce_several_axes_c_order(kind, mode):
    # distinct values, so the index of the extremum is unique and easy to check by hand
    rng = np.random.default_rng(3)
    x = rng.permutation(2 * 3 * 4 * 5).astype("float64").reshape(2, 3, 4, 5)
    fn = getattr(T, kind)
    axes_list = ((1, 3), (0, 2), (0, 1, 2, 3), (3, 1))
    cases = [Case(_label(axis), lambda v, axis=axis: fn(v, axis=axis),
                  lambda a, axis=axis: np_arg(kind, a, axis, False), [x], dtype="int64") for axis in axes_list]
    outputs = caller(check_cases(cases, mode), cases).many()
    for axis, case in zip(axes_list, cases):
        got = outputs[case.label]
        axes = _axes(axis, 4)
        kept = [d for d in range(4) if d not in axes]
        for pos in np.ndindex(*[x.shape[d] for d in kept]):
            sub = x[tuple(pos[kept.index(d)] if d in kept else slice(None) for d in range(4))]
            target = sub.max() if kind == "argmax" else sub.min()
            assert sub.reshape(-1)[got[pos]] == target
            assert np.unravel_index(got[pos], sub.shape) == tuple(
                int(i[0]) for i in np.nonzero(sub == target))


# ------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("kind", KINDS + ARG_KINDS)
def test_reduce_output_dtype(kind, mode):
    """Every dtype of REAL_DTYPES, in one compiled function (one input and output per dtype)."""
    xs, outs, vals = [], [], []
    for dtype in REAL_DTYPES:
        x = T.tensor(dtype, (None, None))
        out = getattr(T, kind)(x, axis=1)
        assert out.dtype == expected_dtype(kind, dtype)
        assert out.ndim == 1
        assert getattr(T, kind)(x).ndim == 0
        xs.append(x)
        outs.append(out)
        vals.append(values_for(kind, dtype, (3, 4), special=False))
    results = function(xs, outs, mode=mode)(*vals)
    for dtype, v, got in zip(REAL_DTYPES, vals, results):
        assert got.dtype == np.dtype(expected_dtype(kind, dtype)), dtype
        want = np_reduce(kind, v, 1, False)
        if kind == "mean":
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=dtype)
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=dtype)


DTYPE_ARGS = [("float64", "float32"), ("int32", "float32"), ("int64", "float64"), ("float32", "float64"),
              ("int32", "int32"), ("bool", "int32")]


def _explicit_dtype_build(kind, out_dtype):
    def build(v):
        out = getattr(T, kind)(v, axis=1, dtype=out_dtype)
        assert out.dtype == out_dtype
        return out

    return build


@pytest.mark.parametrize("kind", ("sum", "prod", "mean"))
def test_reduce_explicit_dtype(kind, mode):
    """Every pair of DTYPE_ARGS (a float one for mean), over axis 1 and (as a method) all axes, in
    one compiled function."""
    cases = []
    for in_dtype, out_dtype in DTYPE_ARGS:
        if kind == "mean" and np.dtype(out_dtype).kind != "f":
            continue
        x = values_for(kind, in_dtype, (3, 5), special=False)
        cases.append(Case(_label(in_dtype, out_dtype, 1), _explicit_dtype_build(kind, out_dtype),
                          _ref(kind, 1, False, dtype=out_dtype), [x], dtype=out_dtype))
        cases.append(Case(_label(in_dtype, out_dtype, None),
                          _method(kind, dtype=out_dtype) if kind != "mean"
                          else lambda v, out_dtype=out_dtype: T.mean(v, dtype=out_dtype),
                          _ref(kind, None, False, dtype=out_dtype), [x], dtype=out_dtype))
    check_cases(cases, mode)


def _sum_uint64(v):
    out = T.sum(v)
    assert out.dtype == "uint64"
    return out


def test_sum_dtype_accumulates_in_that_dtype(mode):
    # int8 values whose sum overflows int8 but not int64: default dtype is int64
    x = np.full((300,), 100, dtype="int8")
    check_cases([Case("int8", lambda v: T.sum(v), lambda a: np.sum(a, dtype="int64"), [x], dtype="int64"),
                 # uint8 sums in uint64: the expectation spelled out, independently of numpy
                 Case("uint8", _sum_uint64, lambda a: np.asarray(2000, dtype="uint64"),
                      [np.full((10,), 200, dtype="uint8")], dtype="uint64")], mode)


# ------------------------------------------------------------------ empty and special values


@pytest.mark.parametrize("kind", ["sum", "prod", "mean", "all", "any"])
def test_reduce_over_empty(kind, mode):
    """Every dtype of ALL_DTYPES on every empty (shape, axis), in one compiled function (cases of one
    graph share its node)."""
    cases = [_case(kind, dtype, axis, False, values_for(kind, dtype, shape), shape)
             for dtype in ALL_DTYPES
             for shape, axis in (((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((3, 0), 0), ((2, 0, 3), (0, 1)),
                                 ((0,), None))]
    f = check_cases(cases, mode)
    # explicit expectations, independently of numpy: the axis-0 graph of each dtype on a (0, 2) input
    zeros = {_label(dtype, 0, False, (0, 3)): [np.zeros((0, 2), dtype=dtype)] for dtype in ALL_DTYPES}
    got = caller(f, cases).many(zeros)
    want = {"sum": 0, "prod": 1, "mean": np.nan, "all": True, "any": False}[kind]
    for label in zeros:
        np.testing.assert_array_equal(got[label], np.full((2,), want, dtype=got[label].dtype))


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
def test_order_reduce_over_empty_axis_raises(kind, mode):
    """Every dtype and axis in one compiled function: an empty reduced axis of any one node fails
    the call."""
    params = [(dtype, axis) for dtype in ("float64", "int32", "bool") for axis in (0, None, (0, 1))]
    xs = [T.tensor(dtype, (None, None)) for dtype, _ in params]
    f = function(xs, [getattr(T, kind)(x, axis=axis) for x, (_, axis) in zip(xs, params)], mode=mode)
    fine = [np.ones((2, 3), dtype=dtype) for dtype, _ in params]
    for i, (dtype, axis) in enumerate(params):
        v = np.zeros((0, 3), dtype=dtype)
        with pytest.raises(ValueError):
            NP[kind](v, axis=axis if kind in ("max", "min") or not isinstance(axis, tuple) else None)
        with pytest.raises(ValueError):
            f(*(fine[:i] + [v] + fine[i + 1:]))


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
def test_order_reduce_of_non_empty_axis_of_empty_array(kind, mode):
    # only the reduced axes must be non-empty: numpy gives an empty result here
    cases = [_case(kind, dtype, axis, keepdims, np.ones(shape, dtype=dtype), shape)
             for dtype in ("float64", "int32", "bool")
             for shape, axis in (((0, 3), 1), ((0, 3), -1), ((2, 0), 0), ((0, 2, 3), (1, 2)), ((2, 0, 3), (0, 2)))
             for keepdims in (False, True)]
    check_cases(cases, mode)


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin", "sum", "mean", "prod"])
def test_nan_propagates(kind, mode):
    cases = []
    for dtype in FLOAT_DTYPES:
        x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf], [np.inf, np.nan, np.nan]], dtype=dtype)
        cases += [_case(kind, dtype, axis, False, x) for axis in (None, 0, 1)]
    outputs = caller(check_cases(cases, mode), cases).many()
    for dtype in FLOAT_DTYPES:
        got = outputs[_label(dtype, 1, False)]
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
    # non-bool inputs: nonzero is true, NaN is true (in the same function)
    fv = T.dvector()
    f = function([a, fv], [T.all(a, axis=1), T.any(a, axis=1), a.all(), a.any(), T.all(a, axis=0, keepdims=True),
                           T.all(fv), T.any(fv)], mode=mode)
    r = f(x, np.array([np.nan, 2.0]))
    np.testing.assert_array_equal(r[0], [True, False, False])
    np.testing.assert_array_equal(r[1], [True, True, False])
    assert r[2].shape == () and not r[2] and r[3].shape == () and r[3]
    np.testing.assert_array_equal(r[4], [[False, False]])
    assert [bool(v) for v in r[5:]] == [True, True]
    assert [bool(v) for v in f(x, np.array([0.0, -0.0]))[5:]] == [False, False]


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


@functools.lru_cache(maxsize=None)
def _dot_build(dtype, ndim):
    """T.dot, checking the output's dtype (and ``ndim`` unless None); one object per arguments, so
    that cases of the same graph share a node."""
    def build(x, y):
        out = T.dot(x, y)
        assert out.dtype == dtype, (x.dtype, y.dtype, out.dtype, dtype)
        assert ndim is None or out.ndim == ndim
        return out

    return build


DOT_SHAPES = [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((1, 1), (1, 1)),
              ((4, 1), (1, 3)), ((1,), (1, 6))]


def test_dot_same_dtype(mode):
    """Every pair of DOT_SHAPES for every float and int dtype, in one compiled function (pairs of the
    same dtype and ndims share a node)."""
    check_cases([Case(_label(dtype, xs, ys), _dot_build(dtype, len(xs) + len(ys) - 2), np.dot,
                      [sample(dtype, xs), sample(dtype, ys, rng=np.random.default_rng(1))], **_dot_tol(dtype),
                      dtype=dtype)
                 for dtype in FLOAT_DTYPES + INT_DTYPES for xs, ys in DOT_SHAPES], mode)


def test_dot_mixed_dtypes(mode):
    """Every pair of dtypes below on four pairs of shapes, in one compiled function."""
    cases = []
    for dx, dy in [("int32", "float32"), ("float32", "int32"), ("int64", "float32"), ("float32", "float64"),
                   ("int32", "int64"), ("int64", "float64"), ("bool", "float64"), ("int32", "int32")]:
        for xs, ys in (((3, 4), (4, 2)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2))):
            a, b = sample(dx, xs), sample(dy, ys, rng=np.random.default_rng(2))
            want = np.result_type(dx, dy).name   # the promoted dtype of the operands, as PyTensor's upcast
            cases.append(Case(_label(dx, dy, xs, ys), _dot_build(want, None), np.dot, [a, b], **_dot_tol(dx, dy),
                              dtype=want))
    check_cases(cases, mode)


def test_dot_with_special_values(mode):
    a = np.array([[1.0, np.inf], [0.0, 2.0], [np.nan, 1.0]])
    b = np.array([[0.0, 1.0], [3.0, -np.inf]])
    check(T.dot, np.dot, [a, b], mode, dtype="float64")


def test_dot_empty(mode):
    """Every empty pair of shapes for three dtypes, in one compiled function (pairs of the same
    dtype and ndims share a node)."""
    cases = [Case(_label(dtype, xs, ys), T.dot, np.dot, [np.zeros(xs, dtype=dtype), np.zeros(ys, dtype=dtype)],
                  dtype=dtype)
             for dtype in ["float64", "int64", "float32"]
             for xs, ys in [((3, 0), (0, 4)), ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 2)), ((0, 3), (3, 2)),
                            ((2, 3), (3, 0))]]
    f = check_cases(cases, mode)
    for case in cases:
        a, b = case.values
        got = caller(f, cases).many({case.label: [a, b]})[case.label]
        assert got.shape == np.dot(a, b).shape, case
        assert np.all(got == 0), case


def test_dot_scalar_operand_multiplies(mode):
    cases = []
    for dtype in ["float64", "int32", "float32"]:
        s = np.asarray(2.5 if dtype.startswith("float") else 3, dtype=dtype)
        m = sample(dtype, (3, 4))
        v = sample(dtype, (5,))
        cases += [Case(_label(dtype, k), _dot_build(dtype, None), np.dot, args, dtype=dtype)
                  for k, args in enumerate(([s, m], [m, s], [v, s], [s, s]))]
    check_cases(cases, mode)


def test_dot_methods_and_matmul(mode):
    a, b, v = sample("float64", (3, 4)), sample("float64", (4, 2)), sample("float64", (4,))
    check_cases([
        Case("x.dot(y)", lambda x, y: x.dot(y), np.dot, [a, b], dtype="float64"),
        Case("x @ y", lambda x, y: x @ y, lambda p, q: p @ q, [a, b], dtype="float64"),
        Case("x @ v", lambda x, y: x @ y, lambda p, q: p @ q, [a, v], dtype="float64"),
        Case("v @ x.T", lambda x, y: y @ x.T, lambda p, q: q @ p.T, [a, v], dtype="float64"),
        Case("v.dot(v)", lambda x, y: y.dot(y), lambda p, q: q.dot(q), [a, v], dtype="float64"),
        # a Python list on the left goes through __rmatmul__
        Case("list @ x", lambda x: [1.0, 2.0, 3.0] @ x, lambda p: np.array([1.0, 2.0, 3.0]) @ p, [a], dtype="float64"),
    ], mode)


def test_dot_of_nd_is_numpy_dot_and_matmul_is_numpy_matmul():
    """dot of N-d operands is numpy.dot's (Theano 1.0's tensordot: values in test_dot_nd.py); ``@`` is
    numpy's matmul (batched: tests/tensor/test_products.py)."""
    for (x, y), ndim, dot_ndim in zip(((T.dtensor3(), T.dmatrix()), (T.dmatrix(), T.dtensor3()),
                                       (T.dtensor3(), T.dvector()), (T.dtensor4(), T.dtensor4())),
                                      (3, 3, 2, 4), (3, 3, 2, 6)):
        assert T.dot(x, y).ndim == dot_ndim
        assert (x @ y).ndim == ndim


def test_dot_static_mismatch_raises_when_building():
    with pytest.raises(ValueError):
        T.dot(T.tensor("float64", (2, 3)), T.tensor("float64", (4, 2)))
    with pytest.raises(ValueError):
        T.dot(T.tensor("float64", (3,)), T.tensor("float64", (4,)))


def test_dot_mismatched_inner_raises_at_run_time(mode):
    """Every mismatched pair below in one compiled function: a mismatch in any one node fails the
    call, and the function still works afterwards."""
    pairs = [((3, 4), (5, 2)), ((4,), (5,)), ((3, 4), (3,)), ((4,), (3, 4)), ((3, 0), (1, 2))]
    syms, outs, good = [], [], []
    for xs, ys in pairs:
        x = T.tensor("float64", (None,) * len(xs))
        y = T.tensor("float64", (None,) * len(ys))
        syms += [x, y]
        outs.append(T.dot(x, y))
        good += [np.ones(xs[:-1] + (ys[0],)), np.ones(ys)]
    f = function(syms, outs, mode=mode)
    for i, (xs, ys) in enumerate(pairs):
        with pytest.raises(ValueError):
            f(*(good[:2 * i] + [np.ones(xs), np.ones(ys)] + good[2 * i + 2:]))
        # and the function still works afterwards
        got = f(*good)
        for j, out in enumerate(got):
            np.testing.assert_allclose(out, np.dot(good[2 * j], good[2 * j + 1]))


def test_reduction_of_dot_and_layouts(mode):
    # a small composite graph: reductions of a product, on every layout
    a, b = sample("float64", (4, 3), special=False), sample("float64", (3, 5), rng=np.random.default_rng(7))
    check(lambda x, y: T.dot(x, y).sum(axis=0) + T.max(x, axis=1).mean(),
          lambda p, q: np.dot(p, q).sum(axis=0) + np.max(p, axis=1).mean(), [a, b], mode, dtype="float64")


def test_reduce_output_does_not_alias_input(mode):
    """Three reductions over no axes (each of its own input) in one compiled function."""
    v = sample("float64", (3, 4))
    builds = (lambda x: T.sum(x, axis=()), lambda x: T.max(x, axis=(), keepdims=True),
              lambda x: T.prod(x, axis=()))
    xs = [T.dmatrix() for _ in builds]
    outs = [build(x) for build, x in zip(builds, xs)]
    f = function(xs, outs, mode=mode)
    for layout in LAYOUTS:
        inps = [relayout(v, layout) for _ in builds]
        befores = [inp.copy() for inp in inps]
        got = f(*inps)
        for out, sym, inp, before in zip(got, outs, inps, befores):
            assert_matches(out, v, sym.type, dtype="float64")
            assert not np.shares_memory(out, inp)
            out[...] = 123.0
            np.testing.assert_array_equal(inp, before)

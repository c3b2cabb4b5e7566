"""Shape ops: transpose/dimshuffle, reshape, flatten, shape/shape_i and basic indexing, against numpy."""
import itertools
import re

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from helpers import ALL_DTYPES, LAYOUTS, assert_matches, check, relayout, sample


def run_layouts(f, value):
    """f(value) on every layout (value must have a static-shape-compatible shape)."""
    return [f(relayout(value, layout)) for layout in LAYOUTS]


# ------------------------------------------------------------------ transpose / dimshuffle


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_transpose(dtype, mode):
    x = sample(dtype, (2, 3, 4), special=True)
    check(lambda v: T.transpose(v), lambda a: a.transpose(), [x], mode)
    check(lambda v: v.T, lambda a: a.T, [x], mode)
    for axes in ((1, 0, 2), (2, 0, 1), (0, 1, 2), (-1, 0, -2), (-3, -1, -2)):
        check(lambda v: T.transpose(v, axes), lambda a: np.transpose(a, axes), [x], mode)
        check(lambda v: v.transpose(axes), lambda a: a.transpose(axes), [x], mode)
        check(lambda v: v.transpose(*axes), lambda a: a.transpose(*axes), [x], mode)
    m = sample(dtype, (3, 5))
    check(lambda v: v.T, lambda a: a.T, [m], mode)
    check(lambda v: v.T.T, lambda a: a, [m], mode)
    check(lambda v: T.transpose(v, (-1, -2)), lambda a: a.T, [m], mode)
    check(lambda v: v.T, lambda a: a.T, [sample(dtype, (6,))], mode)
    check(lambda v: v.T, lambda a: a.T, [np.zeros((0, 3), dtype=dtype)], mode)


def test_transpose_of_0d(mode):
    x = T.dscalar()
    f = function([x], [x.T, T.transpose(x)], mode=mode)
    for got in f(np.asarray(2.5)):
        assert isinstance(got, np.ndarray) and got.shape == () and got == 2.5


def test_transpose_bad_axes_raise():
    x = T.dtensor3()
    for axes in ((0, 1), (0, 1, 1), (0, 1, 3), (0, -1, 2), (0, 1, 2, 3)):
        with pytest.raises(ValueError):
            T.transpose(x, axes)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dimshuffle_insert_and_permute(dtype, mode):
    m = sample(dtype, (3, 4), special=True)
    cases = [
        (("x", 0, 1), lambda a: a[None]),
        ((0, "x", 1), lambda a: a[:, None, :]),
        ((1, 0), lambda a: a.T),
        ((1, "x", 0), lambda a: a.T[:, None, :]),
        (("x", 1, "x", 0, "x"), lambda a: a.T[None, :, None, :, None]),
        ((0, 1, "x"), lambda a: a[..., None]),
    ]
    for pattern, ref in cases:
        check(lambda v: v.dimshuffle(*pattern), ref, [m], mode)
        check(lambda v: v.dimshuffle(pattern), ref, [m], mode)
        out = T.tensor(dtype, (None, None)).dimshuffle(pattern)
        assert out.type.shape == tuple(1 if p == "x" else None for p in pattern)
    v = sample(dtype, (5,))
    check(lambda t: t.dimshuffle("x", 0), lambda a: a[None], [v], mode)
    check(lambda t: t.dimshuffle(0, "x"), lambda a: a[:, None], [v], mode)


def test_dimshuffle_of_0d(mode):
    s = T.dscalar()
    f = function([s], [s.dimshuffle("x"), s.dimshuffle("x", "x"), s.dimshuffle()], mode=mode)
    a, b, c = f(np.asarray(3.0))
    assert a.shape == (1,) and b.shape == (1, 1) and c.shape == () and a[0] == b[0, 0] == c == 3.0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dimshuffle_drop_broadcastable_axis(dtype, mode):
    x = T.tensor(dtype, (1, None))
    value = sample(dtype, (1, 5), special=True)
    for pattern, ref in (((1,), lambda a: a[0]), (("x", 1), lambda a: a), ((1, "x"), lambda a: a.T)):
        out = x.dimshuffle(*pattern)
        assert out.type.shape == tuple(1 if p == "x" else None for p in pattern)
        f = function([x], out, mode=mode)
        for got in run_layouts(f, value):
            assert_matches(got, ref(value), out.type)
        shp = function([x], list(T.inferred_shape(out)), mode=mode)(value)
        assert tuple(int(s) for s in shp) == ref(value).shape
    # 3-d, dropping the middle axis and permuting the rest
    y = T.tensor(dtype, (None, 1, None))
    v3 = sample(dtype, (3, 1, 4))
    out3 = y.dimshuffle(2, 0)
    f = function([y], out3, mode=mode)
    for got in run_layouts(f, v3):
        assert_matches(got, v3[:, 0, :].T, out3.type)


def test_dimshuffle_drop_non_unit_axis_raises(mode):
    # static length known and not 1: when building
    with pytest.raises(ValueError):
        T.tensor("float64", (3, None)).dimshuffle(1)
    # length only known at run time: when running
    x = T.dmatrix()
    f = function([x], x.dimshuffle(1), mode=mode)
    np.testing.assert_array_equal(f(np.arange(4.0).reshape(1, 4)), np.arange(4.0))
    with pytest.raises(ValueError):
        f(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        f(np.zeros((0, 4)))


def test_dimshuffle_bad_patterns_raise():
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x.dimshuffle(0, 2)
    with pytest.raises(ValueError):
        x.dimshuffle(0, 0)
    with pytest.raises(ValueError):
        x.dimshuffle(1, -1)


# ------------------------------------------------------------------ reshape


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reshape_with_ints(dtype, mode):
    x = sample(dtype, (3, 4), special=True)
    for shape in ((12,), (4, 3), (2, 6), (2, 2, 3), (1, 12, 1), (-1,), (2, -1), (-1, 3), (2, -1, 2), (12, 1)):
        check(lambda v: v.reshape(shape), lambda a: a.reshape(shape), [x], mode)
        check(lambda v: v.reshape(*shape), lambda a: a.reshape(shape), [x], mode)
        check(lambda v: T.reshape(v, shape), lambda a: a.reshape(shape), [x], mode)
    check(lambda v: v.reshape(12), lambda a: a.reshape(12), [x], mode)
    check(lambda v: v.reshape(-1), lambda a: a.reshape(-1), [x], mode)
    # static shape of a reshape to constant sizes
    out = T.tensor(dtype, (None, None)).reshape((2, -1, 3))
    assert out.type.shape[0] == 2 and out.type.shape[2] == 3 and out.ndim == 3


def test_reshape_to_and_from_0d(mode):
    check(lambda v: v.reshape(()), lambda a: a.reshape(()), [np.array([[7.5]])], mode)
    s = T.dscalar()
    f = function([s], [s.reshape((1,)), s.reshape((1, -1))], mode=mode)
    a, b = f(np.asarray(4.0))
    assert a.shape == (1,) and b.shape == (1, 1) and a[0] == b[0, 0] == 4.0


def test_reshape_empty(mode):
    for shape, target in (((0, 3), (3, 0)), ((0, 3), (-1,)), ((0, 3), (3, -1)), ((2, 0), (0, 5)),
                          ((0,), (0, 4, 0))):
        check(lambda v: v.reshape(target), lambda a: a.reshape(target), [np.zeros(shape)], mode)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_reshape_with_symbolic_sizes(dtype, mode):
    x = sample(dtype, (4, 6))
    check(lambda v: v.reshape((v.shape[0], -1)), lambda a: a.reshape((a.shape[0], -1)), [x], mode)
    check(lambda v: v.reshape((v.shape[1], v.shape[0])), lambda a: a.reshape((a.shape[1], a.shape[0])), [x], mode)
    check(lambda v: v.reshape((2, v.shape[0] // 2, v.shape[1])), lambda a: a.reshape((2, 2, 6)), [x], mode)
    check(lambda v: v.reshape((-1, v.shape[1] // 3, 3)), lambda a: a.reshape((-1, 2, 3)), [x], mode)
    check(lambda v: T.reshape(v, [v.shape[0] * v.shape[1]]), lambda a: a.reshape(-1), [x], mode)
    check(lambda v: v.reshape(v.shape[::-1], ndim=2), lambda a: a.reshape(a.shape[::-1]), [x], mode)
    # a symbolic scalar given as an input
    m, n = T.lscalar(), T.iscalar()
    xv = T.tensor(dtype, (None, None))
    f = function([xv, m, n], xv.reshape((m, n, -1)), mode=mode)
    for layout in LAYOUTS:
        assert_matches(f(relayout(x, layout), 3, 2), x.reshape(3, 2, -1), xv.reshape((m, n, -1)).type)


def test_reshape_shape_vector_needs_known_length():
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x.reshape(T.lvector())


def test_reshape_size_mismatch_raises(mode):
    x = T.dmatrix()
    f = function([x], x.reshape((5, 2)), mode=mode)
    with pytest.raises(ValueError, match=re.escape("(3, 4)") + ".*" + re.escape("(5, 2)")):
        f(np.zeros((3, 4)))
    g = function([x], x.reshape((5, -1)), mode=mode)
    with pytest.raises(ValueError, match=re.escape("(3, 4)") + ".*" + re.escape("(5, -1)")):
        g(np.zeros((3, 4)))
    # the function still works for a good shape after an error
    np.testing.assert_array_equal(g(np.arange(10.0).reshape(2, 5)), np.arange(10.0).reshape(5, 2))
    n = T.lscalar()
    h = function([x, n], x.reshape((n, -1)), mode=mode)
    with pytest.raises(ValueError):
        h(np.zeros((3, 4)), 5)
    with pytest.raises(ValueError):
        h(np.zeros((3, 4)), 0)
    h2 = function([x, n], x.reshape((n, -1, 2)), mode=mode)
    with pytest.raises(ValueError):
        h2(np.zeros((3, 4)), -1)  # two -1 entries
    with pytest.raises(ValueError):
        h2(np.zeros((3, 4)), -3)  # a negative size other than -1


# ------------------------------------------------------------------ flatten


def _np_flatten(a, ndim):
    lead = a.shape[:ndim - 1]
    return a.reshape(lead + (int(np.prod(a.shape[ndim - 1:])),))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 4), (0, 3, 4), (3, 0, 4), (2, 3, 0), (1, 1, 1)], ids=str)
def test_flatten(shape, dtype, mode):
    x = sample(dtype, shape, special=True)
    for nd in (1, 2, 3):
        def build(v):
            out = T.flatten(v, nd)
            assert out.ndim == nd
            return out

        check(build, lambda a: _np_flatten(a, nd), [x], mode)
        check(lambda v: v.flatten(nd), lambda a: _np_flatten(a, nd), [x], mode)
    check(lambda v: T.flatten(v), lambda a: a.reshape(-1) if a.size else a.reshape(0), [x], mode)


def test_flatten_small_ranks(mode):
    check(lambda v: T.flatten(v), lambda a: a.reshape(-1), [sample("float64", (5,))], mode)
    check(lambda v: T.flatten(v, 2), lambda a: a, [sample("float64", (4, 5))], mode)
    s = T.dscalar()
    got = function([s], T.flatten(s), mode=mode)(np.asarray(1.5))
    assert got.shape == (1,) and got[0] == 1.5


def test_flatten_bad_ndim_raises():
    x = T.dtensor3()
    for nd in (0, 4, -1):
        with pytest.raises(ValueError):
            T.flatten(x, nd)


# ------------------------------------------------------------------ shape, shape_i


@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (1, 2, 3, 4)], ids=str)
def test_shape(shape, mode):
    dtype = "float32"
    x = T.tensor(dtype, (None,) * len(shape))
    value = sample(dtype, shape)
    outs = [x.shape, T.shape(x)] + [x.shape[i] for i in range(len(shape))] + \
        [x.shape[-i - 1] for i in range(len(shape))] + [T.shape_i(x, i) for i in range(len(shape))]
    for o in outs:
        assert o.dtype == "int64"
    assert outs[0].ndim == 1 and all(o.ndim == 0 for o in outs[2:])
    f = function([x], outs, mode=mode)
    for layout in LAYOUTS:
        got = f(relayout(value, layout) if shape else np.array(value))
        assert all(isinstance(g, np.ndarray) and g.dtype == np.int64 for g in got)
        np.testing.assert_array_equal(got[0], shape)
        assert got[0].shape == (len(shape),)
        np.testing.assert_array_equal(got[1], shape)
        n = len(shape)
        assert [int(g) for g in got[2:2 + n]] == list(shape)
        assert [int(g) for g in got[2 + n:2 + 2 * n]] == list(shape[::-1])
        assert [int(g) for g in got[2 + 2 * n:]] == list(shape)


def test_shape_via_check(mode):
    x = sample("int32", (3, 5))
    check(lambda v: v.shape, lambda a: np.asarray(a.shape, dtype=np.int64), [x], mode)
    check(lambda v: v.shape[1], lambda a: np.asarray(a.shape[1]), [x], mode)
    check(lambda v: v.shape[::-1], lambda a: np.asarray(a.shape[::-1]), [x], mode)
    check(lambda v: T.shape_i(v, 0) * T.shape_i(v, 1), lambda a: np.asarray(a.size), [x], mode)
    check(lambda v: v.shape[0] + v.sum(), lambda a: a.shape[0] + a.sum(), [x], mode)
    check(lambda v: v.size, lambda a: np.asarray(a.size, dtype=np.int64), [x], mode)
    check(lambda v: v.size, lambda a: np.asarray(a.size, dtype=np.int64), [np.zeros((3, 0))], mode)


def test_shape_i_static_and_errors(mode):
    x = T.tensor("float64", (3, None))
    assert isinstance(T.shape_i(x, 0), T.TensorConstant) or getattr(T.shape_i(x, 0), "data", None) == 3
    f = function([x], [T.shape_i(x, 0), T.shape_i(x, 1)], mode=mode)
    a, b = f(np.zeros((3, 7)))
    assert int(a) == 3 and int(b) == 7
    with pytest.raises(ValueError):
        T.shape_i(T.dmatrix(), 2)
    m = T.dmatrix()
    with pytest.raises(IndexError):  # the shape vector has length 2: out of bounds when run
        function([m], m.shape[2], mode=mode)(np.zeros((2, 3)))


# ------------------------------------------------------------------ basic indexing

INDICES_3D = [
    0, 2, -1, -3, (1, 2), (-1, -2), (1, 2, 3), (-2, 0, -5),
    slice(None), slice(1, None), slice(None, 2), slice(None, None, -1), slice(None, None, 2),
    slice(None, None, -2), slice(2, 0, -1), slice(-10, 10), slice(10, 20), slice(-20, -10),
    slice(-1, -10, -1), slice(100, None, -1), slice(None, -100, -1), slice(2, 1), slice(1, 2, 5),
    (slice(None), 1), (slice(None), slice(None), -1), (slice(1, None), None, slice(None, None, -2)),
    Ellipsis, (Ellipsis, 1), (1, Ellipsis), (0, Ellipsis, 2), (Ellipsis, None), (None, Ellipsis), None,
    (None, 1, None), (None, None), (Ellipsis, 1, 2, 3), (1, None, Ellipsis, None, -1),
    (slice(None, None, -1), slice(None, None, -1), slice(None, None, -1)), (slice(-2, None), 0, slice(1, -1)),
    (), (Ellipsis, slice(None, None, -3)), (slice(0, 0), 1), (1, slice(3, None)),
]


@pytest.mark.parametrize("index", INDICES_3D, ids=repr)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_basic_indexing(index, dtype, mode):
    x = sample(dtype, (3, 4, 5), special=True)
    check(lambda v: v[index], lambda a: np.asarray(a[index]), [x], mode)


@pytest.mark.parametrize("index", [0, -1, slice(None, None, -1), slice(1, -1), None, Ellipsis,
                                   (None, slice(None, None, 2)), slice(5, None)], ids=repr)
def test_basic_indexing_1d(index, mode):
    x = sample("int64", (6,))
    check(lambda v: v[index], lambda a: np.asarray(a[index]), [x], mode)


def test_indexing_0d_input(mode):
    s = T.dscalar()
    f = function([s], [s[...], s[None], s[()], s[None, ..., None]], mode=mode)
    got = f(np.asarray(2.0))
    assert [g.shape for g in got] == [(), (1,), (), (1, 1)]
    assert all(float(g.reshape(())) == 2.0 for g in got)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_all_integer_index_gives_0d_ndarray(dtype, mode):
    x = T.tensor(dtype, (None, None))
    value = sample(dtype, (3, 4))
    out = x[1, 2]
    assert out.ndim == 0 and out.dtype == dtype
    f = function([x], [out, x[-1, -1], x[0][3]], mode=mode)
    for layout in LAYOUTS:
        got = f(relayout(value, layout))
        for g, want in zip(got, (value[1, 2], value[-1, -1], value[0, 3])):
            assert isinstance(g, np.ndarray), type(g)
            assert g.shape == () and g.dtype == np.dtype(dtype)
            assert g == want


def test_static_shape_of_slices():
    x = T.tensor("float64", (5, None, 4))
    assert x[1:4].type.shape == (3, None, 4)
    assert x[::-2].type.shape == (3, None, 4)
    assert x[10:].type.shape == (0, None, 4)
    assert x[:, 1:].type.shape == (5, None, 4)
    assert x[0].type.shape == (None, 4)
    assert x[:, :, ::3].type.shape == (5, None, 2)
    assert x[None, ..., None].type.shape == (1, 5, None, 4, 1)
    assert x[1, None].type.shape == (1, None, 4)


def test_static_shape_of_constant_slices_sweep(mode):
    bounds = [None] + list(range(-7, 8))
    for n in (0, 1, 5):
        x = T.tensor("float64", (n,))
        for start, stop, step in itertools.product(bounds, bounds, (None, -3, -1, 1, 2)):
            sl = slice(start, stop, step)
            assert x[sl].type.shape == (len(range(n)[sl]),), (n, sl)
    # and the static shape agrees with what runs
    x = T.tensor("float64", (5, 4))
    value = np.arange(20.0).reshape(5, 4)
    outs = [x[1:4], x[::-2], x[-100:100, ::3], x[4:1:-1, -1], x[7:]]
    f = function([x], outs, mode=mode)
    for layout in LAYOUTS:
        for got, o, want in zip(f(relayout(value, layout)), outs,
                                (value[1:4], value[::-2], value[-100:100, ::3], value[4:1:-1, -1], value[7:])):
            assert_matches(got, want, o.type)


def test_numpy_integer_indices(mode):
    x = sample("float64", (4, 5))
    check(lambda v: v[np.int64(1)], lambda a: a[1], [x], mode)
    check(lambda v: v[np.int32(-1):, np.int8(2)], lambda a: a[-1:, 2], [x], mode)
    check(lambda v: v[::np.int64(-2)], lambda a: a[::-2], [x], mode)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_symbolic_indices_via_check(dtype, mode):
    x = sample("float64", (5, 6), special=True)
    cases = [
        (lambda v, i: v[i], lambda a, i: np.asarray(a[int(i)]), (0, 4, -1, -5)),
        (lambda v, i: v[:, i], lambda a, i: np.asarray(a[:, int(i)]), (0, -6, 5)),
        (lambda v, i: v[i:], lambda a, i: a[int(i):], (0, 2, -2, 7, -9)),
        (lambda v, i: v[:i:-1], lambda a, i: a[:int(i):-1], (0, 2, -2, 7, -9)),
        (lambda v, i: v[::i], lambda a, i: a[::int(i)], (1, 2, -1, -3, 7, -9)),
        (lambda v, i: v[1:, None, i::-2], lambda a, i: a[1:, None, int(i)::-2], (0, 3, -1, 10)),
        (lambda v, i: v[i, 1:i], lambda a, i: a[int(i), 1:int(i)], (2, 4, -1)),
    ]
    for build, ref, values in cases:
        for val in values:
            check(build, ref, [x, np.asarray(val, dtype=dtype)], mode)


def test_symbolic_slice_sweep(mode):
    """Every start/stop/step combination on a length-5 and an empty axis: values and infer_shape."""
    x = T.dvector()
    a, b, c = T.lscalar(), T.lscalar(), T.lscalar()
    out = x[a:b:c]
    f = function([x, a, b, c], [out] + list(T.inferred_shape(out)), mode=mode)
    for n in (5, 0):
        value = np.arange(float(n))
        for start, stop, step in itertools.product(range(-7, 8), range(-7, 8), (-3, -2, -1, 1, 2, 4)):
            got, length = f(value, start, stop, step)
            want = value[start:stop:step]
            assert got.shape == want.shape and int(length) == len(want), (n, start, stop, step)
            np.testing.assert_array_equal(got, want)


def test_symbolic_slice_partial_sweep(mode):
    """Some bounds symbolic, others absent or Python ints."""
    x = T.dvector()
    i, j = T.iscalar(), T.lscalar()
    builds = {
        "x[i:]": (lambda: x[i:], lambda v, p, q: v[p:]),
        "x[:i]": (lambda: x[:i], lambda v, p, q: v[:p]),
        "x[::i]": (lambda: x[::i], lambda v, p, q: v[::p]),
        "x[i::-1]": (lambda: x[i::-1], lambda v, p, q: v[p::-1]),
        "x[:i:-2]": (lambda: x[:i:-2], lambda v, p, q: v[:p:-2]),
        "x[i:j]": (lambda: x[i:j], lambda v, p, q: v[p:q]),
        "x[1:i:j]": (lambda: x[1:i:j], lambda v, p, q: v[1:p:q]),
        "x[i::j]": (lambda: x[i::j], lambda v, p, q: v[p::q]),
        "x[-2:i]": (lambda: x[-2:i], lambda v, p, q: v[-2:p]),
    }
    for name, (build, ref) in builds.items():
        out = build()
        f = function([x, i, j], [out] + list(T.inferred_shape(out)), mode=mode, on_unused_input="ignore")
        for n in (6, 1, 0):
            value = np.arange(float(n)) + 1
            for p, q in itertools.product(range(-8, 9), (-3, -1, 1, 2, 5)):
                if "::i" in name and p == 0:
                    continue
                got, length = f(value, p, q)
                want = ref(value, p, q)
                assert got.shape == want.shape and int(length) == len(want), (name, n, p, q)
                np.testing.assert_array_equal(got, want)


def test_symbolic_int_index_out_of_bounds_raises(mode):
    x = T.dmatrix()
    i = T.lscalar()
    f = function([x, i], x[i], mode=mode)
    g = function([x, i], x[1, i], mode=mode)
    v = np.zeros((3, 4))
    for bad in (3, -4, 100):
        with pytest.raises(IndexError):
            f(v, bad)
    for bad in (4, -5):
        with pytest.raises(IndexError):
            g(v, bad)
    assert f(v, -3).shape == (4,)


def test_index_out_of_bounds_raises_at_run_time(mode):
    x = T.dmatrix()
    for build in (lambda v: v[3], lambda v: v[-4], lambda v: v[0, 4], lambda v: v[:, -5], lambda v: v[..., 10]):
        out = build(x)  # building is fine: the length is only known at run time
        f = function([x], out, mode=mode)
        with pytest.raises(IndexError):
            f(np.zeros((3, 4)))
    with pytest.raises(IndexError):
        function([x], x[0], mode=mode)(np.zeros((0, 4)))


def test_too_many_indices_raise_when_building():
    x = T.dmatrix()
    for index in ((0, 0, 0), (slice(None),) * 3, (Ellipsis, 0, 0, 0), (None, 0, None, 0, 0), (0, Ellipsis, 0, 0)):
        with pytest.raises(IndexError):
            x[index]
    with pytest.raises(IndexError):
        T.dscalar()[0]
    with pytest.raises(IndexError):
        x[..., ...]


def test_slice_step_zero_raises(mode):
    x = T.dmatrix()
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(ValueError):
        x[:, 1:3:0]
    i = T.lscalar()
    f = function([x, i], x[::i], mode=mode)
    with pytest.raises(ValueError):
        f(np.zeros((3, 4)), 0)
    np.testing.assert_array_equal(f(np.arange(12.0).reshape(3, 4), -1), np.arange(12.0).reshape(3, 4)[::-1])


def test_advanced_indexing_not_implemented():
    x = T.dmatrix()
    for index in ([0, 1], np.array([0, 1]), (slice(None), [1, 2]), T.lvector(), (0, np.array([True, False]))):
        with pytest.raises(NotImplementedError):
            x[index]


def test_bad_index_types_raise():
    x = T.dmatrix()
    for index in (1.5, "a", T.dscalar(), slice(0.5, None)):
        with pytest.raises(TypeError):
            x[index]


# ------------------------------------------------------------------ no aliasing of inputs (DeepCopyOp)

VIEW_BUILDS = {
    "x.T": lambda x: x.T,
    "x[1:]": lambda x: x[1:],
    "x[::-1]": lambda x: x[::-1],
    "x[...]": lambda x: x[...],
    "x[()]": lambda x: x[()],
    "x[:]": lambda x: x[:],
    "x[1]": lambda x: x[1],
    "x[1, 2]": lambda x: x[1, 2],
    "x[None]": lambda x: x[None],
    "x[:, None]": lambda x: x[:, None],
    "dimshuffle": lambda x: x.dimshuffle(1, "x", 0),
    "transpose id": lambda x: T.transpose(x, (0, 1)),
    "reshape": lambda x: x.reshape((4, 3)),
    "reshape -1": lambda x: x.reshape(-1),
    "flatten": lambda x: T.flatten(x),
    "flatten 2": lambda x: T.flatten(x, 2),
    "identity": lambda x: x,
}


@pytest.mark.parametrize("name", list(VIEW_BUILDS))
def test_outputs_do_not_alias_inputs(name, mode):
    build = VIEW_BUILDS[name]
    x = T.dmatrix()
    out = build(x)
    f = function([x], out, mode=mode)
    value = np.arange(12.0).reshape(3, 4)
    want = np.asarray(build_ref(name, value)).copy()
    for layout in LAYOUTS:
        inp = relayout(value, layout)
        got = f(inp)
        assert_matches(got, want, out.type)
        assert not np.shares_memory(got, inp), name
        got[...] = -1.0
        np.testing.assert_array_equal(inp, value)
        # a second call is not affected by writing into the first result
        np.testing.assert_array_equal(f(inp), want)


def build_ref(name, a):
    return {
        "x.T": lambda: a.T, "x[1:]": lambda: a[1:], "x[::-1]": lambda: a[::-1], "x[...]": lambda: a[...],
        "x[()]": lambda: a[()], "x[:]": lambda: a[:], "x[1]": lambda: a[1], "x[1, 2]": lambda: a[1, 2],
        "x[None]": lambda: a[None], "x[:, None]": lambda: a[:, None],
        "dimshuffle": lambda: a.T[:, None, :], "transpose id": lambda: a, "reshape": lambda: a.reshape(4, 3),
        "reshape -1": lambda: a.reshape(-1), "flatten": lambda: a.reshape(-1), "flatten 2": lambda: a,
        "identity": lambda: a,
    }[name]()


def test_outputs_do_not_alias_each_other_or_earlier_results(mode):
    x = T.dmatrix()
    f = function([x], [x.T, x.T, x[1:], x], mode=mode)
    value = np.arange(6.0).reshape(2, 3)
    r1 = f(value)
    for p, q in itertools.combinations(r1 + [value], 2):
        assert not np.shares_memory(p, q)
    r1[0][...] = 100.0
    np.testing.assert_array_equal(r1[1], value.T)
    r2 = f(value * 2)
    np.testing.assert_array_equal(r1[2], value[1:])
    np.testing.assert_array_equal(r2[2], 2 * value[1:])
    for p, q in itertools.product(r1, r2):
        assert not np.shares_memory(p, q)


def test_constant_outputs_are_not_shared(mode):
    c = T.constant(np.arange(6.0).reshape(2, 3))
    f = function([], [c.T, c[1:]], mode=mode)
    a, b = f()
    a[...] = 0.0
    b[...] = 0.0
    a2, b2 = f()
    np.testing.assert_array_equal(a2, np.arange(6.0).reshape(2, 3).T)
    np.testing.assert_array_equal(b2, np.arange(6.0).reshape(2, 3)[1:])


# ------------------------------------------------------------------ composites


def test_composite_shape_graph(mode):
    x = sample("float64", (4, 6), special=False)
    check(lambda v: v[1:, None, ::-2].dimshuffle(2, 1, 0).reshape((v.shape[1] // 2, -1)).T[::-1],
          lambda a: a[1:, None, ::-2].transpose(2, 1, 0).reshape((a.shape[1] // 2, -1)).T[::-1], [x], mode)
    check(lambda v: T.flatten(v.T[:, 1:3], 1)[::2], lambda a: a.T[:, 1:3].reshape(-1)[::2], [x], mode)

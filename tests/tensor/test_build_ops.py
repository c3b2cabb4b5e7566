"""Ops that build and combine arrays: switch/where, cast, clip, alloc, zeros/ones(_like),
concatenate, stack, and the conversions as_tensor_variable/constant; checked against numpy."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from helpers import ALL_DTYPES, LAYOUTS, assert_matches, check, relayout, sample, symbolic_like, skip_without_c_code

ALL_CAST_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64", "complex64", "complex128")


def _id(v):
    return str(v).replace(" ", "")


def kind(dtype):
    return np.dtype(dtype).kind


def promoted(*dtypes):
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


# ------------------------------------------------------------------ switch / where

SWITCH_SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((), (3, 4), ()), ((2, 3), (), ()),
                 ((4,), (3, 1), (3, 4)), ((0, 4), (4,), ()), ((5,), (5,), (5,)), ((), (), ())]


def _switch_values(cond_dtype, da, db, sc, sa, sb):
    cond = sample(cond_dtype, sc, rng=np.random.default_rng(3))  # ints in [-3, 3]: 0 is false, the rest true
    a = sample(da, sa, rng=np.random.default_rng(4), special=True)
    b = sample(db, sb, rng=np.random.default_rng(5), special=True)
    return cond, a, b


def _switch_ref(out_dtype):
    def ref(c, a, b):
        return np.where(c, a.astype(out_dtype), b.astype(out_dtype))
    return ref


@pytest.mark.parametrize("shapes", SWITCH_SHAPES, ids=_id)
@pytest.mark.parametrize("cond_dtype", ["bool", "int32", "int64"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_switch(dtype, cond_dtype, shapes, mode):
    values = _switch_values(cond_dtype, dtype, dtype, *shapes)
    out = T.switch(*symbolic_like(values))
    assert out.dtype == dtype
    assert out.ndim == max(len(s) for s in shapes)
    check(T.switch, _switch_ref(dtype), values, mode)


@pytest.mark.parametrize("da,db", [("int32", "float32"), ("bool", "int32"), ("float32", "float64"),
                                   ("int64", "int32"), ("bool", "float64"), ("int8", "uint8")])
def test_switch_mixed_branch_dtypes(da, db, mode):
    values = _switch_values("bool", da, db, (3, 1), (4,), (3, 4))
    out_dtype = promoted(da, db)
    assert T.switch(*symbolic_like(values)).dtype == out_dtype
    check(T.switch, _switch_ref(out_dtype), values, mode)


def test_switch_condition_dtype_does_not_promote(mode):
    c = T.lvector("c")
    a, b = T.tensor("int8", (None,)), T.tensor("int8", (None,))
    out = T.where(c, a, b)
    assert out.dtype == "int8"
    assert T.switch(T.dvector(), T.fvector(), T.fvector()).dtype == "float32"
    got = function([c, a, b], out, mode=mode)(np.array([0, -5, 7, 0], dtype="int64"),
                                               np.array([1, 2, 3, 4], dtype="int8"),
                                               np.array([-1, -2, -3, -4], dtype="int8"))
    np.testing.assert_array_equal(got, np.array([-1, 2, 3, -4], dtype="int8"))
    assert got.dtype == "int8"


def test_switch_float_condition_follows_numpy(mode):
    c, a, b = T.dvector(), T.dvector(), T.dvector()
    cond = np.array([0.0, -0.0, 0.5, np.nan, -np.inf])
    got = function([c, a, b], T.switch(c, a, b), mode=mode)(cond, np.ones(5), np.zeros(5))
    np.testing.assert_array_equal(got, np.where(cond, 1.0, 0.0))
    np.testing.assert_array_equal(got, [0.0, 0.0, 1.0, 1.0, 1.0])


def test_switch_with_python_scalar_branches(mode):
    c = T.tensor("bool", (None,))
    x = T.fvector("x")
    i = T.ivector("i")
    outs = [T.switch(c, x, 0), T.switch(c, 1, i), T.where(c, x, -1.5), T.switch(c, i, 0.5)]
    assert [o.dtype for o in outs] == ["float32", "int32", "float32", "float64"]
    cv = np.array([True, False, True, False])
    xv = np.array([1.5, 2.5, np.nan, 4.0], dtype="float32")
    iv = np.array([7, 8, 9, 10], dtype="int32")
    got = function([c, x, i], outs, mode=mode)(cv, xv, iv)
    expected = [np.where(cv, xv, np.float32(0)), np.where(cv, np.int32(1), iv),
                np.where(cv, xv, np.float32(-1.5)), np.where(cv, iv.astype("float64"), 0.5)]
    for g, e, o in zip(got, expected, outs):
        assert_matches(g, e, o.type)


def test_switch_static_broadcast_error():
    with pytest.raises(ValueError):
        T.switch(T.tensor("bool", (3,)), T.tensor("float64", (4,)), 0.0)


def test_switch_requires_three_inputs():
    with pytest.raises(TypeError):
        T.switch(T.tensor("bool", (None,)), T.dvector())


# ------------------------------------------------------------------ cast


def _cast_source(src, dst, shape):
    """Values of ``src`` that ``dst`` can hold (so the cast is defined): non-negative for
    unsigned targets, NaN/inf only where the target is float, complex or bool."""
    special = kind(dst) in "fcb"
    low = 0 if kind(dst) == "u" else -3
    return sample(src, shape, rng=np.random.default_rng(6), low=low, high=5, special=special)


CAST_CASES = [(s, d) for s in ALL_DTYPES for d in ALL_CAST_DTYPES]


@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4)], ids=_id)
@pytest.mark.parametrize("src,dst", CAST_CASES, ids=_id)
def test_cast(src, dst, shape, mode):
    skip_without_c_code(mode, src, dst)
    x = _cast_source(src, dst, shape)
    out = T.cast(T.tensor(src, (None,) * len(shape)), dst)
    assert out.dtype == dst
    assert out.ndim == len(shape)
    check(lambda v: T.cast(v, dst), lambda v: v.astype(dst), [x], mode)


@pytest.mark.parametrize("src", ["float64", "float32"])
@pytest.mark.parametrize("dst", ["int64", "int32", "int16", "int8", "uint8", "uint32"])
def test_cast_float_to_int_truncates_toward_zero(src, dst, mode):
    v = np.array([2.7, 2.2, 0.5, 0.0, 99.9, 1.0, 3.999], dtype=src)
    if kind(dst) == "i":
        v = np.concatenate([v, -v])
    x = T.tensor(src, (None,))
    got = function([x], T.cast(x, dst), mode=mode)(v)
    assert got.dtype == dst
    np.testing.assert_array_equal(got, np.trunc(v).astype(dst))
    np.testing.assert_array_equal(got[:3], [2, 2, 0])


@pytest.mark.parametrize("src", ["float64", "float32", "int32", "int64"])
def test_cast_to_bool_is_nonzero(src, mode):
    v = np.array([0, 1, -2, 3, 0], dtype=src)
    if kind(src) == "f":
        v = np.concatenate([v, np.array([-0.0, np.nan, np.inf, 1e-30], dtype=src)])
    x = T.tensor(src, (None,))
    got = function([x], T.cast(x, "bool"), mode=mode)(v)
    assert got.dtype == "bool"
    np.testing.assert_array_equal(got, v != 0)


def test_cast_same_dtype_and_astype(mode):
    x = T.fvector("x")
    assert T.cast(x, "float32") is x
    assert x.astype("int8").dtype == "int8"
    assert x.astype(np.float64).dtype == "float64"
    assert x.astype("int8").owner.op == T.cast(x, "int8").owner.op
    v = np.array([1.5, -2.5, 3.0], dtype="float32")
    same, narrowed = function([x], [T.cast(x, "float32"), x.astype("int8")], mode=mode)(v)
    np.testing.assert_array_equal(same, v)
    assert not np.shares_memory(same, v)
    np.testing.assert_array_equal(narrowed, np.array([1, -2, 3], dtype="int8"))


@pytest.mark.parametrize("bad", ["str", "float16", "object", "not-a-dtype", "datetime64"])
def test_cast_to_unsupported_dtype_raises(bad):
    with pytest.raises(TypeError):
        T.cast(T.dvector(), bad)


# ------------------------------------------------------------------ clip


def _clip_ref(out_dtype):
    def ref(x, lo, hi):
        x, lo, hi = (np.asarray(v).astype(out_dtype) for v in (x, lo, hi))
        return np.minimum(np.maximum(x, lo), hi)
    return ref


@pytest.mark.parametrize("shape", [(), (0,), (9,), (3, 4)], ids=_id)
@pytest.mark.parametrize("dtype,lo,hi,out_dtype", [
    ("float64", -1.5, 1.5, "float64"), ("float32", -1.5, 1.5, "float32"), ("float32", 0, 2, "float32"),
    ("int64", -1, 2, "int64"), ("int32", -1, 2, "int32"), ("int32", -1.5, 1.5, "float64"),
    ("int64", 0.5, 2.5, "float64"), ("float64", 2.0, 1.0, "float64"),
], ids=_id)
def test_clip_python_scalar_bounds(dtype, lo, hi, out_dtype, shape, mode):
    x = sample(dtype, shape, special=True)
    sym = T.tensor(dtype, (None,) * len(shape))
    assert T.clip(sym, lo, hi).dtype == out_dtype
    assert sym.clip(lo, hi).dtype == out_dtype
    f = function([sym], [T.clip(sym, lo, hi), sym.clip(lo, hi)], mode=mode)
    for layout in LAYOUTS:
        got, by_method = f(relayout(x, layout))
        assert_matches(got, _clip_ref(out_dtype)(x, lo, hi), T.clip(sym, lo, hi).type)
        np.testing.assert_array_equal(got, by_method)


@pytest.mark.parametrize("dx,dlo,dhi", [("float64",) * 3, ("float32",) * 3, ("int64",) * 3, ("int32",) * 3,
                                        ("int32", "float32", "int32"), ("float32", "float64", "float32"),
                                        ("int64", "int32", "int32"), ("bool", "int32", "int32")], ids=_id)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (3, 1), (4,)), ((5,), (), ()),
                                    ((), (2, 3), (3,)), ((0, 3), (3,), ())], ids=_id)
def test_clip_tensor_bounds(dx, dlo, dhi, shapes, mode):
    sx, slo, shi = shapes
    x = sample(dx, sx, rng=np.random.default_rng(7), special=True)
    lo = sample(dlo, slo, rng=np.random.default_rng(8), low=-3, high=0)
    hi = sample(dhi, shi, rng=np.random.default_rng(9), low=0, high=3)
    out_dtype = promoted(dx, dlo, dhi)
    assert T.clip(*symbolic_like([x, lo, hi])).dtype == out_dtype
    check(T.clip, _clip_ref(out_dtype), [x, lo, hi], mode)


def test_clip_nan_and_inverted_bounds(mode):
    x, lo, hi = T.dvector(), T.dvector(), T.dvector()
    f = function([x, lo, hi], T.clip(x, lo, hi), mode=mode)
    got = f(np.array([np.nan, 5.0, -5.0, 0.5, np.inf, -np.inf]), np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
            np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0]))
    np.testing.assert_array_equal(got, [np.nan, 1.0, 0.0, 0.0, 1.0, 0.0])


# ------------------------------------------------------------------ alloc


@pytest.mark.parametrize("shape", [(3, 4), (0, 3), (5,), (), (2, 1, 3)], ids=_id)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_alloc_scalar_value_constant_sizes(dtype, shape, mode):
    value = sample(dtype, (), rng=np.random.default_rng(10))
    s = T.tensor(dtype, ())
    out = T.alloc(s, *shape)
    assert out.dtype == dtype
    assert out.type.shape == shape
    check(lambda v: T.alloc(v, *shape), lambda v: np.full(shape, v, dtype=dtype), [value], mode)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_alloc_symbolic_sizes(dtype, mode):
    # a vector value broadcast over a new leading axis of symbolic length n, and x.shape[0]
    value = sample(dtype, (4,), special=True)
    n = np.int64(3)
    check(lambda v, k: T.alloc(v, k, v.shape[0]), lambda v, k: np.broadcast_to(v, (int(k), v.shape[0])),
              [value, n], mode)
    check(lambda v, k: T.alloc(v, k, 2, v.shape[0]), lambda v, k: np.broadcast_to(v, (int(k), 2, 4)),
              [value, np.int64(0)], mode)
    # an int32 size and a (1, m) value
    row = sample(dtype, (1, 3), special=True)
    check(lambda v, k: T.alloc(v, k, 3), lambda v, k: np.broadcast_to(v, (int(k), 3)),
              [row, np.int32(5)], mode)


def test_alloc_static_shape_and_python_values(mode):
    n = T.lscalar("n")
    x = T.dvector("x")
    assert T.alloc(x, 3, 4).type.shape == (3, 4)
    assert T.alloc(x, n, 4).type.shape == (None, 4)
    assert T.alloc(x, n, x.shape[0]).type.shape == (None, None)
    a, b, c = T.alloc(1.5, 2, 3), T.alloc(7, n), T.alloc(True, n, 2)
    assert (a.dtype, b.dtype, c.dtype) == ("float64", "int64", "bool")
    got = function([n], [a, b, c], mode=mode)(3)
    assert_matches(got[0], np.full((2, 3), 1.5), a.type)
    assert_matches(got[1], np.full(3, 7), b.type)
    assert_matches(got[2], np.ones((3, 2), dtype=bool), c.type)
    assert T.alloc(np.float32(2), n).dtype == "float32"
    assert T.alloc(x, [2, 4]).type.shape == (2, 4)  # the sizes may come as one list


def test_alloc_result_is_a_fresh_array(mode):
    x = T.dvector("x")
    f = function([x], T.alloc(x, 2, 3), mode=mode)
    v = np.array([1.0, 2.0, 3.0])
    out = f(v)
    out[0, 0] = 99.0  # must be writeable and must not write through to ``v``
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out[1], v)
    np.testing.assert_array_equal(f(v), np.broadcast_to(v, (2, 3)))


def test_alloc_errors(mode):
    x = T.dvector("x")
    m = T.dmatrix("m")
    n = T.lscalar("n")
    with pytest.raises(TypeError):
        T.alloc(x, 2.5)
    with pytest.raises(TypeError):
        T.alloc(x, T.dscalar())
    with pytest.raises(TypeError):
        T.alloc(x, T.lvector())
    with pytest.raises(ValueError):
        T.alloc(m, 3)  # the value has more dimensions than sizes
    f = function([x, n], T.alloc(x, n, 3), mode=mode)
    with pytest.raises(ValueError, match="negative"):
        f(np.ones(3), -1)
    with pytest.raises(ValueError, match="broadcast"):
        f(np.ones(2), 2)
    np.testing.assert_array_equal(f(np.arange(3.0), 2), np.broadcast_to(np.arange(3.0), (2, 3)))


# ------------------------------------------------------------------ zeros / ones (_like)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (4,), (3, 4)], ids=_id)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("like_dtype", [None, "int32", "float32", "bool", "float64"])
def test_zeros_like_ones_like(dtype, like_dtype, shape, mode):
    x = sample(dtype, shape, special=True)
    out_dtype = dtype if like_dtype is None else like_dtype
    sym = T.tensor(dtype, (None,) * len(shape))
    assert T.zeros_like(sym, dtype=like_dtype).dtype == out_dtype
    assert T.ones_like(sym).dtype == dtype
    check(lambda v: T.zeros_like(v, dtype=like_dtype), lambda v: np.zeros_like(v, dtype=out_dtype), [x], mode)
    check(lambda v: T.ones_like(v, dtype=like_dtype), lambda v: np.ones_like(v, dtype=out_dtype), [x], mode)
    if like_dtype is None:
        check(T.zeros_like, np.zeros_like, [x], mode)
        check(T.ones_like, np.ones_like, [x], mode)


@pytest.mark.parametrize("dtype", [None, "float64", "float32", "int64", "int32", "bool"])
def test_zeros_ones_constant_shapes(dtype, mode):
    out_dtype = dtype or "float64"
    cases = [((2, 3), (2, 3)), ([4], (4,)), (5, (5,)), ((), ()), ((0, 2), (0, 2))]
    outs, expected = [], []
    for given, shape in cases:
        for maker, np_maker in ((T.zeros, np.zeros), (T.ones, np.ones)):
            out = maker(given, dtype=dtype)
            assert out.dtype == out_dtype
            assert out.type.shape == shape
            outs.append(out)
            expected.append(np_maker(shape, dtype=out_dtype))
    got = function([], outs, mode=mode)()
    for g, e, o in zip(got, expected, outs):
        assert_matches(g, e, o.type)


def test_zeros_ones_default_dtype_follows_floatx(mode):
    with ffigraph.config.change_flags(floatX="float32"):
        z, o = T.zeros((2,)), T.ones(3)
    assert z.dtype == o.dtype == "float32"
    got = function([], [z, o], mode=mode)()
    assert_matches(got[0], np.zeros(2, dtype="float32"), z.type)
    assert_matches(got[1], np.ones(3, dtype="float32"), o.type)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_zeros_ones_symbolic_sizes(dtype, mode):
    n = T.lscalar("n")
    x = T.dmatrix("x")
    outs = [T.zeros((n, 3), dtype=dtype), T.ones([x.shape[1], n], dtype=dtype), T.zeros(n, dtype=dtype)]
    got = function([n, x], outs, mode=mode)(2, np.ones((4, 5)))
    for g, e, o in zip(got, [np.zeros((2, 3)), np.ones((5, 2)), np.zeros(2)], outs):
        assert_matches(g, e.astype(dtype), o.type)
    got = function([n, x], outs, mode=mode)(0, np.ones((4, 0)))
    for g, e, o in zip(got, [np.zeros((0, 3)), np.ones((0, 0)), np.zeros(0)], outs):
        assert_matches(g, e.astype(dtype), o.type)


def test_zeros_ones_from_a_symbolic_shape_vector(mode):
    # Theano's idiom: ``zeros(x.shape)`` takes the shape as one symbolic vector
    x = T.dmatrix("x")
    f = function([x], [T.zeros(x.shape), T.ones(x.shape, dtype="int32")], mode=mode)
    z, o = f(np.ones((2, 3)))
    np.testing.assert_array_equal(z, np.zeros((2, 3)))
    np.testing.assert_array_equal(o, np.ones((2, 3), dtype="int32"))
    assert o.dtype == "int32"


# ------------------------------------------------------------------ concatenate


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis,shapes", [
    (0, [(2, 3), (4, 3)]), (1, [(2, 3), (2, 1), (2, 4)]), (-1, [(3, 2), (3, 5)]), (-2, [(1, 2), (3, 2)]),
    (0, [(3,), (4,), (1,)]), (-1, [(2,), (5,)]), (2, [(2, 3, 1), (2, 3, 2)]),
    (0, [(0, 3), (2, 3)]), (1, [(2, 0), (2, 3), (2, 0)]), (0, [(0,), (0,)]), (1, [(0, 2), (0, 3)]),
], ids=_id)
def test_concatenate(dtype, axis, shapes, mode):
    values = [sample(dtype, s, rng=np.random.default_rng(20 + i), special=True) for i, s in enumerate(shapes)]
    out = T.concatenate(symbolic_like(values), axis=axis)
    assert out.dtype == dtype
    check(lambda *xs: T.concatenate(list(xs), axis=axis), lambda *xs: np.concatenate(xs, axis=axis),
              values, mode)


@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("bool", "int32"), ("int8", "uint8"),
                                    ("float32", "float64"), ("bool", "float32"), ("int64", "int32", "float32"),
                                    ("bool", "bool", "int8")], ids=_id)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_mixed_dtypes_upcast_like_numpy(dtypes, axis, mode):
    shapes = [(2, 3) if axis == 0 else (2, 3 + i) for i in range(len(dtypes))]
    if axis == 0:
        shapes = [(1 + i, 3) for i in range(len(dtypes))]
    values = [sample(d, s, rng=np.random.default_rng(30 + i), low=0 if kind(d) == "u" else -3, special=True)
              for i, (d, s) in enumerate(zip(dtypes, shapes))]
    out = T.concatenate(symbolic_like(values), axis=axis)
    assert out.dtype == np.concatenate(values, axis=axis).dtype
    check(lambda *xs: T.concatenate(list(xs), axis=axis), lambda *xs: np.concatenate(xs, axis=axis),
              values, mode)


def test_concatenate_static_shapes_and_constants(mode):
    a = T.tensor("float64", (2, 3))
    b = T.tensor("float64", (4, 3))
    c = T.tensor("float64", (None, 3))
    assert T.concatenate([a, b]).type.shape == (6, 3)
    assert T.concatenate([a, c]).type.shape == (None, 3)
    assert T.concatenate([a, T.dmatrix()], axis=1).type.shape == (2, None)
    assert T.concatenate([a]) is a
    x = T.dvector("x")
    out = T.concatenate([x, [1, 2], np.array([5], dtype="int32")])
    assert out.dtype == "float64"
    np.testing.assert_array_equal(function([x], out, mode=mode)(np.array([0.5])), [0.5, 1.0, 2.0, 5.0])
    with pytest.raises(ValueError):
        T.concatenate([a, T.tensor("float64", (2, 4))])  # static lengths differ on axis 1


def test_concatenate_build_errors():
    with pytest.raises(ValueError):
        T.concatenate([T.dscalar(), T.dscalar()])  # 0-d: use stack
    with pytest.raises(ValueError):
        T.concatenate([T.dvector(), T.dmatrix()])
    with pytest.raises(ValueError):
        T.concatenate([T.dvector(), T.dvector()], axis=1)
    with pytest.raises(ValueError):
        T.concatenate([])
    with pytest.raises(TypeError):
        T.concatenate([T.dvector(), T.dvector()], axis=0.5)


def test_concatenate_mismatch_at_run_time(mode):
    a, b = T.dmatrix("a"), T.dmatrix("b")
    f = function([a, b], T.concatenate([a, b], axis=1), mode=mode)
    with pytest.raises(ValueError, match="concatenate") as info:
        f(np.zeros((2, 2)), np.zeros((3, 2)))
    assert "(2, 2)" in str(info.value) and "(3, 2)" in str(info.value)
    good = f(np.arange(4.0).reshape(2, 2), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(good, np.concatenate([np.arange(4.0).reshape(2, 2),
                                                        np.arange(6.0).reshape(2, 3)], axis=1))


# ------------------------------------------------------------------ stack


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis,shape,count", [
    (0, (4,), 3), (1, (4,), 2), (-1, (4,), 3), (0, (2, 3), 2), (1, (2, 3), 3), (2, (2, 3), 2),
    (-1, (2, 3), 2), (-2, (2, 3), 3), (0, (), 3), (-1, (), 2), (0, (0,), 2), (1, (3, 0), 2), (0, (4,), 1),
], ids=_id)
def test_stack(dtype, axis, shape, count, mode):
    values = [sample(dtype, shape, rng=np.random.default_rng(40 + i), special=True) for i in range(count)]
    out = T.stack(symbolic_like(values), axis=axis)
    assert out.dtype == dtype
    assert out.ndim == len(shape) + 1
    check(lambda *xs: T.stack(list(xs), axis=axis), lambda *xs: np.stack(xs, axis=axis), values, mode)


def test_stack_scalars_makes_a_vector(mode):
    s, t = T.dscalar("s"), T.fscalar("t")
    out = T.stack([s, t, s * 2, 1.5])
    assert out.ndim == 1 and out.dtype == "float64"
    assert out.type.shape == (4,)
    got = function([s, t], out, mode=mode)(2.0, np.float32(0.25))
    assert_matches(got, np.array([2.0, 0.25, 4.0, 1.5]), out.type)
    i = T.iscalar("i")
    ints = T.stack([i, i + 1, i * 3])
    assert ints.dtype == "int32"
    np.testing.assert_array_equal(function([i], ints, mode=mode)(5), np.array([5, 6, 15], dtype="int32"))


@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("bool", "int64"), ("float32", "float64")], ids=_id)
def test_stack_mixed_dtypes(dtypes, mode):
    values = [sample(d, (3,), rng=np.random.default_rng(50 + i), special=True) for i, d in enumerate(dtypes)]
    out = T.stack(symbolic_like(values), axis=1)
    assert out.dtype == np.stack(values).dtype
    check(lambda *xs: T.stack(list(xs), axis=1), lambda *xs: np.stack(xs, axis=1), values, mode)


def test_stack_errors(mode):
    with pytest.raises(ValueError):
        T.stack([T.dvector(), T.dmatrix()])
    with pytest.raises(ValueError):
        T.stack([T.dvector(), T.dvector()], axis=2)
    with pytest.raises(ValueError):
        T.stack([])
    with pytest.raises(ValueError):
        T.stack([T.tensor("float64", (2,)), T.tensor("float64", (3,))])
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], T.stack([x, y], axis=-1), mode=mode)
    with pytest.raises(ValueError):
        f(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(f(np.arange(2.0), np.ones(2)), [[0.0, 1.0], [1.0, 1.0]])


# ------------------------------------------------------------------ as_tensor_variable / constant


@pytest.mark.parametrize("value,dtype,shape", [
    ([[1, 2], [3, 4]], "int64", (2, 2)), ([1, 2.5], "float64", (2,)), ([True, False, True], "bool", (3,)),
    ([], "float64", (0,)), ([[]], "float64", (1, 0)), ((1, 2, 3), "int64", (3,)), ([1 + 2j], "complex128", (1,)),
    (3, "int64", ()), (1.5, "float64", ()), (True, "bool", ()), (2 ** 63, "uint64", ()),
    (np.float32(1.5), "float32", ()), (np.int8(-3), "int8", ()), (np.arange(6, dtype="int16").reshape(2, 3),
                                                                   "int16", (2, 3)),
    (np.array([1.5, np.nan], dtype="float32"), "float32", (2,)), (np.array(True), "bool", ()),
    (np.zeros((0, 3), dtype="uint8"), "uint8", (0, 3)),
], ids=_id)
@pytest.mark.parametrize("convert", [T.as_tensor_variable, T.constant], ids=["as_tensor_variable", "constant"])
def test_constants_from_values(convert, value, dtype, shape, mode):
    skip_without_c_code(mode, dtype)
    c = convert(value)
    assert isinstance(c, T.TensorConstant)
    assert c.dtype == dtype
    assert c.type.shape == shape
    expected = np.asarray(value)
    np.testing.assert_array_equal(c.data, expected)
    assert not c.data.flags.writeable
    direct, computed = function([], [c, c + T.zeros_like(c)], mode=mode)()
    assert_matches(direct, expected, c.type)
    assert_matches(computed, expected, c.type)
    assert direct.flags.writeable


def test_constant_weakness_and_dtype_argument():
    assert T.constant(3).weak and T.constant(1.5).weak and T.constant(True).weak
    assert not T.constant(np.float32(1.5)).weak
    assert not T.constant(3, dtype="int64").weak
    assert not T.constant([1, 2]).weak
    assert T.constant(3, dtype="int8").dtype == "int8"
    assert T.constant([1, 2], dtype="float32").dtype == "float32"
    assert T.as_tensor_variable([1, 2], dtype="int16").dtype == "int16"
    assert T.constant([1, 2], ndim=3).type.shape == (1, 1, 2)
    with pytest.raises(ValueError):
        T.constant([[1, 2]], ndim=1)
    assert (T.fvector() + T.constant(2.5, dtype="float64")).dtype == "float64"
    assert (T.fvector() + T.constant(2.5)).dtype == "float32"


def test_constant_owns_its_data(mode):
    src = np.array([1.0, 2.0, 3.0])
    c = T.constant(src)
    src[0] = 100.0
    np.testing.assert_array_equal(c.data, [1.0, 2.0, 3.0])
    f = function([], c, mode=mode)
    first = f()
    np.testing.assert_array_equal(first, [1.0, 2.0, 3.0])
    first[1] = -7.0  # the caller's copy, not the constant
    np.testing.assert_array_equal(f(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(c.data, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad", ["abc", b"ab", None, {}, object(), np.array(["a", "b"]), [["a"]]],
                         ids=["str", "bytes", "None", "dict", "object", "str-array", "str-list"])
def test_non_numeric_values_raise_type_error(bad):
    with pytest.raises(TypeError):
        T.as_tensor_variable(bad)
    with pytest.raises(TypeError):
        T.constant(bad)
    with pytest.raises(TypeError):
        T.dvector() + bad


def test_as_tensor_variable_of_variables(mode):
    x = T.dvector("x")
    s = T.dscalar("s")
    assert T.as_tensor_variable(x) is x
    y = x * 2
    assert T.as_tensor_variable(y.owner) is y
    assert T.as_tensor_variable(x, ndim=1) is x
    with pytest.raises(ValueError):
        T.as_tensor_variable(x, ndim=2)
    assert T.as_tensor_variable(x, dtype="float32").dtype == "float32"
    packed = T.as_tensor_variable([s, 2.0, s * 3])
    assert packed.ndim == 1 and packed.dtype == "float64"
    np.testing.assert_array_equal(function([s], packed, mode=mode)(1.5), [1.5, 2.0, 4.5])
    nested = T.as_tensor_variable([[s, 1.0], [2.0, s]])
    assert nested.ndim == 2
    np.testing.assert_array_equal(function([s], nested, mode=mode)(-1.0), [[-1.0, 1.0], [2.0, -1.0]])


# ------------------------------------------------------------------ recovery after errors


def _recovery_cases():
    """(label, inputs, output, bad arguments, exception, good arguments, numpy reference)."""
    cases = []
    c, a, b = T.tensor("bool", (None,)), T.dvector("a"), T.dvector("b")
    cases.append(("switch", [c, a, b], T.switch(c, a, b), (np.ones(2, bool), np.ones(3), np.ones(3)), ValueError,
                  (np.array([True, False, True]), np.arange(3.0), -np.arange(3.0)),
                  lambda c, a, b: np.where(c, a, b)))
    x = T.fmatrix("x")
    cases.append(("cast", [x], T.cast(x, "int32"), (np.ones(3, "float32"),), TypeError,
                  (np.array([[1.5, -2.5]], "float32"),), lambda x: x.astype("int32")))
    lo = T.dvector("lo")
    cases.append(("clip", [a, lo], T.clip(a, lo, 1.0), (np.ones(3), np.zeros(2)), ValueError,
                  (np.array([-1.0, 0.5, 3.0]), np.zeros(3)), lambda a, lo: np.clip(a, lo, 1.0)))
    n = T.lscalar("n")
    cases.append(("alloc-negative", [a, n], T.alloc(a, n, a.shape[0]), (np.ones(2), -3), ValueError,
                  (np.arange(2.0), 3), lambda a, n: np.broadcast_to(a, (n, 2))))
    cases.append(("alloc-value", [a], T.alloc(a, 2, 3), (np.ones(2),), ValueError,
                  (np.arange(3.0),), lambda a: np.broadcast_to(a, (2, 3))))
    cases.append(("zeros", [n], T.zeros((n, 2), dtype="int32"), (-1,), ValueError,
                  (2,), lambda n: np.zeros((n, 2), dtype="int32")))
    cases.append(("ones_like", [x], T.ones_like(x, dtype="bool"), ("text",), TypeError,
                  (np.ones((2, 1), "float32"),), lambda x: np.ones_like(x, dtype=bool)))
    m1, m2 = T.dmatrix("m1"), T.imatrix("m2")
    cases.append(("concatenate", [m1, m2], T.concatenate([m1, m2], axis=0), (np.ones((1, 2)), np.ones((1, 3), "int32")),
                  ValueError, (np.ones((1, 2)), np.full((2, 2), 3, "int32")), lambda p, q: np.concatenate([p, q])))
    cases.append(("stack", [a, b], T.stack([a, b]), (np.ones(2), np.ones(4)), ValueError,
                  (np.arange(2.0), np.ones(2)), lambda a, b: np.stack([a, b])))
    return cases


RECOVERY = _recovery_cases()


@pytest.mark.parametrize("case", RECOVERY, ids=[c[0] for c in RECOVERY])
def test_functions_keep_working_after_an_error(case, mode):
    label, inputs, out, bad, exc, good, ref = case
    f = function(inputs, out, mode=mode)
    expected = ref(*good)
    for _ in range(2):
        with pytest.raises(exc):
            f(*bad)
        got = f(*good)
        assert_matches(got, expected, out.type)

"""Ops that build and combine arrays: switch/where, cast, clip, alloc, zeros/ones(_like),
concatenate, stack, and the conversions as_tensor_variable/constant; checked against numpy.

The op matrices are batched (``helpers.check_cases``): one test per op (or per dtype where one
function would hold too many nodes) compiles every dtype, shape and layout of it into one function."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.graph import Constant
from helpers import (ALL_DTYPES, LAYOUTS, Case, assert_matches, check_cases, relayout, sample, symbolic_like,
                     skip_without_c_code)

ALL_CAST_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64", "complex64", "complex128")


def _id(v):
    return str(v).replace(" ", "")


def kind(dtype):
    return np.dtype(dtype).kind


def promoted(*dtypes):
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


def no_c_code(mode, dtype):
    """What ``skip_without_c_code`` skips, for one case of a batch: a complex dtype under the 'c' linker."""
    return getattr(mode.linker, "name", "") == "c" and kind(dtype) == "c"


def same_graph(a, b):
    """``a`` and ``b`` are the same computation: equal ops applied to the same graphs, down to the
    same input variables and equal constants (so cases built either way may share one node)."""
    if a is b:
        return True
    if a.type != b.type:
        return False
    if isinstance(a, Constant) or isinstance(b, Constant):
        return isinstance(a, Constant) and a.equals(b)
    if a.owner is None or b.owner is None or a.index != b.index or a.owner.op != b.owner.op:
        return False
    return (len(a.owner.inputs) == len(b.owner.inputs)
            and all(same_graph(x, y) for x, y in zip(a.owner.inputs, b.owner.inputs)))


def case_groups(cases):
    """The groups of ``cases`` that ``check_cases`` makes, in the order of its function's outputs."""
    groups = {}
    for case in cases:
        groups.setdefault(case.key, []).append(case)
    return list(groups.values())


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


@pytest.mark.parametrize("kind", ALL_DTYPES)
def test_switch(kind, mode):
    """Branches of dtype ``kind`` with every condition dtype and every shape triple of SWITCH_SHAPES,
    in one compiled function."""
    cases = []
    for cond_dtype in ("bool", "int32", "int64"):
        for shapes in SWITCH_SHAPES:
            values = _switch_values(cond_dtype, kind, kind, *shapes)
            out = T.switch(*symbolic_like(values))
            assert out.dtype == kind, (cond_dtype, shapes)
            assert out.ndim == max(len(s) for s in shapes), (cond_dtype, shapes)
            cases.append(Case("%s,%s" % (cond_dtype, _id(shapes)), T.switch, _switch_ref(kind), values, dtype=kind))
    check_cases(cases, mode)


SWITCH_MIXED = [("int32", "float32"), ("bool", "int32"), ("float32", "float64"), ("int64", "int32"),
                ("bool", "float64"), ("int8", "uint8")]


def test_switch_mixed_dtypes_conditions_and_python_scalars(mode):
    """Branches of mixed dtypes (the result takes their promoted dtype, not the condition's), an int64
    and a float condition (numpy's truth: nonzero, NaN is true), and Python scalar branches, in one
    compiled function."""
    cases = []
    for da, db in SWITCH_MIXED:
        values = _switch_values("bool", da, db, (3, 1), (4,), (3, 4))
        out_dtype = promoted(da, db)
        assert T.switch(*symbolic_like(values)).dtype == out_dtype
        cases.append(Case("%s,%s" % (da, db), T.switch, _switch_ref(out_dtype), values, dtype=out_dtype))
    # the condition's dtype does not promote
    c = T.lvector("c")
    a, b = T.tensor("int8", (None,)), T.tensor("int8", (None,))
    assert T.where(c, a, b).dtype == "int8"
    assert T.switch(T.dvector(), T.fvector(), T.fvector()).dtype == "float32"
    cases.append(Case("int64-condition,int8", T.where, lambda c, a, b: np.array([-1, 2, 3, -4], dtype="int8"),
                      [np.array([0, -5, 7, 0], dtype="int64"), np.array([1, 2, 3, 4], dtype="int8"),
                       np.array([-1, -2, -3, -4], dtype="int8")], dtype="int8"))
    # a float condition follows numpy
    cond = np.array([0.0, -0.0, 0.5, np.nan, -np.inf])
    np.testing.assert_array_equal(np.where(cond, 1.0, 0.0), [0.0, 0.0, 1.0, 1.0, 1.0])
    cases.append(Case("float-condition", T.switch, lambda c, a, b: np.array([0.0, 0.0, 1.0, 1.0, 1.0]),
                      [cond, np.ones(5), np.zeros(5)], rtol=0, atol=0, dtype="float64"))
    # Python scalar branches
    c = T.tensor("bool", (None,))
    x = T.fvector("x")
    i = T.ivector("i")
    outs = [T.switch(c, x, 0), T.switch(c, 1, i), T.where(c, x, -1.5), T.switch(c, i, 0.5)]
    assert [o.dtype for o in outs] == ["float32", "int32", "float32", "float64"]
    cv = np.array([True, False, True, False])
    xv = np.array([1.5, 2.5, np.nan, 4.0], dtype="float32")
    iv = np.array([7, 8, 9, 10], dtype="int32")
    cases += [Case("switch(c,x,0)", lambda c, x: T.switch(c, x, 0), lambda c, x: np.where(c, x, np.float32(0)),
                   [cv, xv], dtype="float32"),
              Case("switch(c,1,i)", lambda c, i: T.switch(c, 1, i), lambda c, i: np.where(c, np.int32(1), i),
                   [cv, iv], dtype="int32"),
              Case("where(c,x,-1.5)", lambda c, x: T.where(c, x, -1.5),
                   lambda c, x: np.where(c, x, np.float32(-1.5)), [cv, xv], dtype="float32"),
              Case("switch(c,i,0.5)", lambda c, i: T.switch(c, i, 0.5),
                   lambda c, i: np.where(c, i.astype("float64"), 0.5), [cv, iv], dtype="float64")]
    check_cases(cases, mode)


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


CAST_SHAPES = [(), (0,), (7,), (3, 4)]


@pytest.mark.parametrize("kind", ALL_CAST_DTYPES)
def test_cast(kind, mode):
    """Every source dtype of ALL_DTYPES on every shape of CAST_SHAPES cast to ``kind``, in one function."""
    dst = kind
    skip_without_c_code(mode, dst)

    def to_dst(v):
        return T.cast(v, dst)

    cases = []
    for src in ALL_DTYPES:
        for shape in CAST_SHAPES:
            out = T.cast(T.tensor(src, (None,) * len(shape)), dst)
            assert out.dtype == dst, (src, shape)
            assert out.ndim == len(shape), (src, shape)
            cases.append(Case("%s,%s" % (src, _id(shape)), to_dst, lambda v: v.astype(dst),
                              [_cast_source(src, dst, shape)], dtype=dst))
    check_cases(cases, mode)


def test_cast_float_to_int_truncates_toward_zero(mode):
    """float64 and float32 to every integer dtype below, in one function."""
    syms, outs, values = [], [], []
    for src in ("float64", "float32"):
        for dst in ("int64", "int32", "int16", "int8", "uint8", "uint32"):
            v = np.array([2.7, 2.2, 0.5, 0.0, 99.9, 1.0, 3.999], dtype=src)
            if kind(dst) == "i":
                v = np.concatenate([v, -v])
            x = T.tensor(src, (None,))
            syms.append(x)
            outs.append(T.cast(x, dst))
            values.append(v)
    for got, v, out in zip(function(syms, outs, mode=mode)(*values), values, outs):
        assert got.dtype == out.dtype
        np.testing.assert_array_equal(got, np.trunc(v).astype(out.dtype))
        np.testing.assert_array_equal(got[:3], [2, 2, 0])


def test_cast_to_bool_is_nonzero(mode):
    syms, outs, values = [], [], []
    for src in ("float64", "float32", "int32", "int64"):
        v = np.array([0, 1, -2, 3, 0], dtype=src)
        if kind(src) == "f":
            v = np.concatenate([v, np.array([-0.0, np.nan, np.inf, 1e-30], dtype=src)])
        x = T.tensor(src, (None,))
        syms.append(x)
        outs.append(T.cast(x, "bool"))
        values.append(v)
    for got, v in zip(function(syms, outs, mode=mode)(*values), values):
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


CLIP_SCALAR_BOUNDS = [
    ("float64", -1.5, 1.5, "float64"), ("float32", -1.5, 1.5, "float32"), ("float32", 0, 2, "float32"),
    ("int64", -1, 2, "int64"), ("int32", -1, 2, "int32"), ("int32", -1.5, 1.5, "float64"),
    ("int64", 0.5, 2.5, "float64"), ("float64", 2.0, 1.0, "float64"),
]


def test_clip_python_scalar_bounds(mode):
    """Every (dtype, bounds) of CLIP_SCALAR_BOUNDS on every shape, by ``T.clip`` and by the ``.clip``
    method (which must agree exactly), in one compiled function."""
    cases = []
    for dtype, lo, hi, out_dtype in CLIP_SCALAR_BOUNDS:
        def by_function(v, lo=lo, hi=hi):
            return T.clip(v, lo, hi)

        def by_method(v, lo=lo, hi=hi):
            return v.clip(lo, hi)

        for shape in [(), (0,), (9,), (3, 4)]:
            sym = T.tensor(dtype, (None,) * len(shape))
            assert T.clip(sym, lo, hi).dtype == out_dtype
            assert sym.clip(lo, hi).dtype == out_dtype
            x = sample(dtype, shape, special=True)
            label = "%s,%s,%s,%s" % (dtype, lo, hi, _id(shape))
            cases.append(Case(label, by_function, lambda v, lo=lo, hi=hi, d=out_dtype: _clip_ref(d)(v, lo, hi), [x],
                              dtype=out_dtype))
            cases.append(Case(label + ",method", by_method,
                              lambda v, lo=lo, hi=hi, d=out_dtype: _clip_ref(d)(v, lo, hi), [x], dtype=out_dtype))
    f = check_cases(cases, mode)
    # each function group is followed by its method group, with the same cases: the outputs agree exactly
    groups = case_groups(cases)
    assert all(groups[k + 1][0].label == groups[k][0].label + ",method" for k in range(0, len(groups), 2))
    for r in range(max(len(members) for members in groups)):
        values = [v for members in groups for v in members[min(r, len(members) - 1)].values]
        for layout in LAYOUTS:
            got = f(*[relayout(v, layout) for v in values])
            for k in range(0, len(got), 2):
                np.testing.assert_array_equal(got[k], got[k + 1])


CLIP_TENSOR_DTYPES = [("float64",) * 3, ("float32",) * 3, ("int64",) * 3, ("int32",) * 3,
                      ("int32", "float32", "int32"), ("float32", "float64", "float32"),
                      ("int64", "int32", "int32"), ("bool", "int32", "int32")]
CLIP_TENSOR_SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 4), (3, 1), (4,)), ((5,), (), ()), ((), (2, 3), (3,)),
                      ((0, 3), (3,), ())]


def test_clip_tensor_bounds(mode):
    """Every dtype triple of CLIP_TENSOR_DTYPES on every shape triple of CLIP_TENSOR_SHAPES, and NaN
    and inverted bounds, in one compiled function."""
    cases = []
    for dx, dlo, dhi in CLIP_TENSOR_DTYPES:
        for sx, slo, shi in CLIP_TENSOR_SHAPES:
            x = sample(dx, sx, rng=np.random.default_rng(7), special=True)
            lo = sample(dlo, slo, rng=np.random.default_rng(8), low=-3, high=0)
            hi = sample(dhi, shi, rng=np.random.default_rng(9), low=0, high=3)
            out_dtype = promoted(dx, dlo, dhi)
            assert T.clip(*symbolic_like([x, lo, hi])).dtype == out_dtype
            cases.append(Case("%s,%s" % (_id((dx, dlo, dhi)), _id((sx, slo, shi))), T.clip, _clip_ref(out_dtype),
                              [x, lo, hi], dtype=out_dtype))
    # NaN stays NaN; with lo > hi the result is hi
    cases.append(Case("nan-and-inverted-bounds", T.clip,
                      lambda x, lo, hi: np.array([np.nan, 1.0, 0.0, 0.0, 1.0, 0.0]),
                      [np.array([np.nan, 5.0, -5.0, 0.5, np.inf, -np.inf]), np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
                       np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])], rtol=0, atol=0, dtype="float64"))
    check_cases(cases, mode)


# ------------------------------------------------------------------ alloc

ALLOC_SHAPES = [(3, 4), (0, 3), (5,), (), (2, 1, 3)]


def test_alloc_scalar_value_constant_sizes(mode):
    """A 0-d value of every dtype filled into every shape of ALLOC_SHAPES, in one compiled function."""
    builds = {shape: (lambda v, shape=shape: T.alloc(v, *shape)) for shape in ALLOC_SHAPES}
    cases = []
    for dtype in ALL_DTYPES:
        for shape in ALLOC_SHAPES:
            value = sample(dtype, (), rng=np.random.default_rng(10))
            out = T.alloc(T.tensor(dtype, ()), *shape)
            assert out.dtype == dtype
            assert out.type.shape == shape
            cases.append(Case("%s,%s" % (dtype, _id(shape)), builds[shape],
                              lambda v, shape=shape, dtype=dtype: np.full(shape, v, dtype=dtype), [value],
                              dtype=dtype))
    check_cases(cases, mode)


def _alloc_lead(v, k):
    return T.alloc(v, k, v.shape[0])


def _alloc_lead_and_2(v, k):
    return T.alloc(v, k, 2, v.shape[0])


def _alloc_rows(v, k):
    return T.alloc(v, k, 3)


def test_alloc_symbolic_sizes(mode):
    """For every dtype: a vector value broadcast over a new leading axis of symbolic length n (and
    x.shape[0]), also with n = 0, and a (1, m) value with an int32 size; in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        value = sample(dtype, (4,), special=True)
        row = sample(dtype, (1, 3), special=True)
        cases += [
            Case("%s,n,len" % dtype, _alloc_lead, lambda v, k: np.broadcast_to(v, (int(k), v.shape[0])),
                 [value, np.int64(3)], dtype=dtype),
            Case("%s,0,2,len" % dtype, _alloc_lead_and_2, lambda v, k: np.broadcast_to(v, (int(k), 2, 4)),
                 [value, np.int64(0)], dtype=dtype),
            Case("%s,row,int32" % dtype, _alloc_rows, lambda v, k: np.broadcast_to(v, (int(k), 3)),
                 [row, np.int32(5)], dtype=dtype),
        ]
    check_cases(cases, mode)


def test_alloc_static_shape_and_python_values(mode):
    n = T.lscalar("n")
    x = T.dvector("x")
    assert T.alloc(x, 3, 4).type.shape == (3, 4)
    assert T.alloc(x, n, 4).type.shape == (None, 4)
    assert T.alloc(x, n, x.shape[0]).type.shape == (None, None)
    a, b, c = T.alloc(1.5, 2, 3), T.alloc(7, n), T.alloc(True, n, 2)
    assert (a.dtype, b.dtype, c.dtype) == ("float64", "int64", "bool")
    got = function([n], [a, b, c], mode=mode)(3)
    assert_matches(got[0], np.full((2, 3), 1.5), a.type, dtype="float64")
    assert_matches(got[1], np.full(3, 7), b.type, dtype="int64")
    assert_matches(got[2], np.ones((3, 2), dtype=bool), c.type, dtype="bool")
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

LIKE_SHAPES = [(), (0,), (3, 0), (4,), (3, 4)]


@pytest.mark.parametrize("kind", [None, "int32", "float32", "bool", "float64"], ids=str)
def test_zeros_like_ones_like(kind, mode):
    """zeros_like and ones_like with ``dtype=kind`` of every dtype on every shape of LIKE_SHAPES, in one
    compiled function. With ``dtype=None`` the result keeps the input's dtype: the calls without the
    argument build the very same graph (checked), so their cases share its node."""
    like_dtype = kind

    def zeros(v):
        return T.zeros_like(v, dtype=like_dtype)

    def ones(v):
        return T.ones_like(v, dtype=like_dtype)

    cases = []
    for dtype in ALL_DTYPES:
        out_dtype = dtype if like_dtype is None else like_dtype
        for shape in LIKE_SHAPES:
            x = sample(dtype, shape, special=True)
            sym = T.tensor(dtype, (None,) * len(shape))
            assert T.zeros_like(sym, dtype=like_dtype).dtype == out_dtype
            assert T.ones_like(sym).dtype == dtype
            label = "%s,%s" % (dtype, _id(shape))
            cases += [Case(label + ",zeros", zeros, lambda v, d=out_dtype: np.zeros_like(v, dtype=d), [x], key="zeros",
                           dtype=out_dtype),
                      Case(label + ",ones", ones, lambda v, d=out_dtype: np.ones_like(v, dtype=d), [x], key="ones",
                           dtype=out_dtype)]
            if like_dtype is None:
                assert T.zeros_like(sym).dtype == dtype
                assert same_graph(T.zeros_like(sym), zeros(sym)) and same_graph(T.ones_like(sym), ones(sym))
                cases += [Case(label + ",zeros_like(x)", T.zeros_like, np.zeros_like, [x], key="zeros", dtype=dtype),
                          Case(label + ",ones_like(x)", T.ones_like, np.ones_like, [x], key="ones", dtype=dtype)]
    check_cases(cases, mode)


ZEROS_ONES_SHAPES = [((2, 3), (2, 3)), ([4], (4,)), (5, (5,)), ((), ()), ((0, 2), (0, 2))]


def test_zeros_ones_constant_shapes(mode):
    """zeros and ones of every constant shape form, with every dtype (None: float64) and with the
    default dtype under floatX=float32, in one compiled function."""
    outs, expected, dtypes = [], [], []
    for dtype in [None, "float64", "float32", "int64", "int32", "bool"]:
        out_dtype = dtype or "float64"
        for given, shape in ZEROS_ONES_SHAPES:
            for maker, np_maker in ((T.zeros, np.zeros), (T.ones, np.ones)):
                out = maker(given, dtype=dtype)
                assert out.dtype == out_dtype
                assert out.type.shape == shape
                outs.append(out)
                expected.append(np_maker(shape, dtype=out_dtype))
                dtypes.append(out_dtype)
    # the default dtype follows floatX
    with ffigraph.config.change_flags(floatX="float32"):
        z, o = T.zeros((2,)), T.ones(3)
    assert z.dtype == o.dtype == "float32"
    outs += [z, o]
    expected += [np.zeros(2, dtype="float32"), np.ones(3, dtype="float32")]
    dtypes += ["float32", "float32"]
    got = function([], outs, mode=mode)()
    for g, e, o, d in zip(got, expected, outs, dtypes):
        assert_matches(g, e, o.type, dtype=d)


def test_zeros_ones_symbolic_sizes(mode):
    """Symbolic sizes (a scalar, a shape entry, both, zero) for float64, int32 and bool, in one function."""
    n = T.lscalar("n")
    x = T.dmatrix("x")
    outs, dtypes = [], []
    for dtype in ["float64", "int32", "bool"]:
        outs += [T.zeros((n, 3), dtype=dtype), T.ones([x.shape[1], n], dtype=dtype), T.zeros(n, dtype=dtype)]
        dtypes += [dtype] * 3
    got = function([n, x], outs, mode=mode)(2, np.ones((4, 5)))
    for g, e, o, d in zip(got, [np.zeros((2, 3)), np.ones((5, 2)), np.zeros(2)] * 3, outs, dtypes):
        assert_matches(g, e.astype(d), o.type, dtype=d)
    got = function([n, x], outs, mode=mode)(0, np.ones((4, 0)))   # (the same graph: its library is reused)
    for g, e, o, d in zip(got, [np.zeros((0, 3)), np.ones((0, 0)), np.zeros(0)] * 3, outs, dtypes):
        assert_matches(g, e.astype(d), o.type, dtype=d)


def test_zeros_ones_from_a_symbolic_shape_vector(mode):
    # Theano's idiom: ``zeros(x.shape)`` takes the shape as one symbolic vector
    x = T.dmatrix("x")
    f = function([x], [T.zeros(x.shape), T.ones(x.shape, dtype="int32")], mode=mode)
    z, o = f(np.ones((2, 3)))
    np.testing.assert_array_equal(z, np.zeros((2, 3)))
    np.testing.assert_array_equal(o, np.ones((2, 3), dtype="int32"))
    assert o.dtype == "int32"


# ------------------------------------------------------------------ concatenate

CONCATENATE_CASES = [
    (0, [(2, 3), (4, 3)]), (1, [(2, 3), (2, 1), (2, 4)]), (-1, [(3, 2), (3, 5)]), (-2, [(1, 2), (3, 2)]),
    (0, [(3,), (4,), (1,)]), (-1, [(2,), (5,)]), (2, [(2, 3, 1), (2, 3, 2)]),
    (0, [(0, 3), (2, 3)]), (1, [(2, 0), (2, 3), (2, 0)]), (0, [(0,), (0,)]), (1, [(0, 2), (0, 3)]),
]


def _concatenate_on(axis):
    return lambda *xs: T.concatenate(list(xs), axis=axis)


def _np_concatenate_on(axis):
    return lambda *xs: np.concatenate(xs, axis=axis)


def test_concatenate(mode):
    """Every dtype with every (axis, shapes) of CONCATENATE_CASES, in one compiled function."""
    builds = [_concatenate_on(axis) for axis, _ in CONCATENATE_CASES]
    cases = []
    for dtype in ALL_DTYPES:
        for build, (axis, shapes) in zip(builds, CONCATENATE_CASES):
            values = [sample(dtype, s, rng=np.random.default_rng(20 + i), special=True) for i, s in enumerate(shapes)]
            out = T.concatenate(symbolic_like(values), axis=axis)
            assert out.dtype == dtype
            cases.append(Case("%s,%s,%s" % (dtype, axis, _id(shapes)), build, _np_concatenate_on(axis), values,
                              dtype=dtype))
    check_cases(cases, mode)


CONCATENATE_MIXED = [("int32", "float32"), ("bool", "int32"), ("int8", "uint8"), ("float32", "float64"),
                     ("bool", "float32"), ("int64", "int32", "float32"), ("bool", "bool", "int8")]


def test_concatenate_mixed_dtypes_upcast_like_numpy(mode):
    """Every dtype mix of CONCATENATE_MIXED along axes 0, 1 and -1, in one compiled function."""
    builds = {axis: _concatenate_on(axis) for axis in (0, 1, -1)}
    cases = []
    for axis in (0, 1, -1):
        for dtypes in CONCATENATE_MIXED:
            shapes = [(2, 3) if axis == 0 else (2, 3 + i) for i in range(len(dtypes))]
            if axis == 0:
                shapes = [(1 + i, 3) for i in range(len(dtypes))]
            values = [sample(d, s, rng=np.random.default_rng(30 + i), low=0 if kind(d) == "u" else -3, special=True)
                      for i, (d, s) in enumerate(zip(dtypes, shapes))]
            out = T.concatenate(symbolic_like(values), axis=axis)
            assert out.dtype == np.concatenate(values, axis=axis).dtype == promoted(*dtypes)
            cases.append(Case("%s,%s" % (_id(dtypes), axis), builds[axis], _np_concatenate_on(axis), values,
                              dtype=promoted(*dtypes)))
    check_cases(cases, mode)


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

STACK_CASES = [
    (0, (4,), 3), (1, (4,), 2), (-1, (4,), 3), (0, (2, 3), 2), (1, (2, 3), 3), (2, (2, 3), 2),
    (-1, (2, 3), 2), (-2, (2, 3), 3), (0, (), 3), (-1, (), 2), (0, (0,), 2), (1, (3, 0), 2), (0, (4,), 1),
]


def _stack_on(axis):
    return lambda *xs: T.stack(list(xs), axis=axis)


def _np_stack_on(axis):
    return lambda *xs: np.stack(xs, axis=axis)


@pytest.mark.parametrize("kind", ALL_DTYPES)
def test_stack(kind, mode):
    """Tensors of dtype ``kind``, every (axis, shape, count) of STACK_CASES, in one compiled function."""
    cases = []
    for axis, shape, count in STACK_CASES:
        values = [sample(kind, shape, rng=np.random.default_rng(40 + i), special=True) for i in range(count)]
        out = T.stack(symbolic_like(values), axis=axis)
        assert out.dtype == kind
        assert out.ndim == len(shape) + 1
        cases.append(Case("%s,%s,%s" % (axis, _id(shape), count), _stack_on(axis), _np_stack_on(axis), values,
                          dtype=kind))
    check_cases(cases, mode)


def test_stack_scalars_makes_a_vector(mode):
    s, t = T.dscalar("s"), T.fscalar("t")
    out = T.stack([s, t, s * 2, 1.5])
    assert out.ndim == 1 and out.dtype == "float64"
    assert out.type.shape == (4,)
    i = T.iscalar("i")
    ints = T.stack([i, i + 1, i * 3])
    assert ints.dtype == "int32"
    got, got_ints = function([s, t, i], [out, ints], mode=mode)(2.0, np.float32(0.25), 5)
    assert_matches(got, np.array([2.0, 0.25, 4.0, 1.5]), out.type, dtype="float64")
    np.testing.assert_array_equal(got_ints, np.array([5, 6, 15], dtype="int32"))


def test_stack_mixed_dtypes(mode):
    """Each dtype pair, stacked along axis 1, in one compiled function."""
    cases = []
    for dtypes in [("int32", "float32"), ("bool", "int64"), ("float32", "float64")]:
        values = [sample(d, (3,), rng=np.random.default_rng(50 + i), special=True) for i, d in enumerate(dtypes)]
        out = T.stack(symbolic_like(values), axis=1)
        assert out.dtype == np.stack(values).dtype == promoted(*dtypes)
        cases.append(Case(_id(dtypes), _stack_on(1), _np_stack_on(1), values, dtype=promoted(*dtypes)))
    check_cases(cases, mode)


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

CONSTANT_VALUES = [
    ([[1, 2], [3, 4]], "int64", (2, 2)), ([1, 2.5], "float64", (2,)), ([True, False, True], "bool", (3,)),
    ([], "float64", (0,)), ([[]], "float64", (1, 0)), ((1, 2, 3), "int64", (3,)), ([1 + 2j], "complex128", (1,)),
    (3, "int64", ()), (1.5, "float64", ()), (True, "bool", ()), (2 ** 63, "uint64", ()),
    (np.float32(1.5), "float32", ()), (np.int8(-3), "int8", ()), (np.arange(6, dtype="int16").reshape(2, 3),
                                                                   "int16", (2, 3)),
    (np.array([1.5, np.nan], dtype="float32"), "float32", (2,)), (np.array(True), "bool", ()),
    (np.zeros((0, 3), dtype="uint8"), "uint8", (0, 3)),
]
CONVERTERS = {"as_tensor_variable": T.as_tensor_variable, "constant": T.constant}


@pytest.mark.parametrize("kind", sorted(CONVERTERS))
def test_constants_from_values(kind, mode):
    """Every value of CONSTANT_VALUES converted by ``kind``, returned as it is and computed on, in one
    compiled function (the complex value only where it has C code: not under the 'c' linker)."""
    convert = CONVERTERS[kind]
    consts, outs, expected, dtypes = [], [], [], []
    for value, dtype, shape in CONSTANT_VALUES:
        c = convert(value)
        assert isinstance(c, T.TensorConstant)
        assert c.dtype == dtype
        assert c.type.shape == shape
        want = np.asarray(value)
        np.testing.assert_array_equal(c.data, want)
        assert not c.data.flags.writeable
        if no_c_code(mode, dtype):
            continue
        consts.append(c)
        outs += [c, c + T.zeros_like(c)]
        expected.append(want)
        dtypes.append(dtype)
    got = function([], outs, mode=mode)()
    for k, (c, want, dtype) in enumerate(zip(consts, expected, dtypes)):
        direct, computed = got[2 * k], got[2 * k + 1]
        assert_matches(direct, want, c.type, dtype=dtype)
        assert_matches(computed, want, c.type, dtype=dtype)   # x + zeros_like(x) keeps x's dtype
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
    nested = T.as_tensor_variable([[s, 1.0], [2.0, s]])
    assert nested.ndim == 2
    f = function([s], [packed, nested], mode=mode)
    np.testing.assert_array_equal(f(1.5)[0], [1.5, 2.0, 4.5])
    np.testing.assert_array_equal(f(-1.0)[1], [[-1.0, 1.0], [2.0, -1.0]])


# ------------------------------------------------------------------ recovery after errors


def _recovery_cases():
    """(label, inputs, output, bad arguments, exception, good arguments, numpy reference, output dtype);
    each case has its own input variables."""
    cases = []
    c, a, b = T.tensor("bool", (None,)), T.dvector("a"), T.dvector("b")
    cases.append(("switch", [c, a, b], T.switch(c, a, b), (np.ones(2, bool), np.ones(3), np.ones(3)), ValueError,
                  (np.array([True, False, True]), np.arange(3.0), -np.arange(3.0)),
                  lambda c, a, b: np.where(c, a, b), "float64"))
    x = T.fmatrix("x")
    cases.append(("cast", [x], T.cast(x, "int32"), (np.ones(3, "float32"),), TypeError,
                  (np.array([[1.5, -2.5]], "float32"),), lambda x: x.astype("int32"), "int32"))
    a, lo = T.dvector("a"), T.dvector("lo")
    cases.append(("clip", [a, lo], T.clip(a, lo, 1.0), (np.ones(3), np.zeros(2)), ValueError,
                  (np.array([-1.0, 0.5, 3.0]), np.zeros(3)), lambda a, lo: np.clip(a, lo, 1.0), "float64"))
    a, n = T.dvector("a"), T.lscalar("n")
    cases.append(("alloc-negative", [a, n], T.alloc(a, n, a.shape[0]), (np.ones(2), -3), ValueError,
                  (np.arange(2.0), 3), lambda a, n: np.broadcast_to(a, (n, 2)), "float64"))
    a = T.dvector("a")
    cases.append(("alloc-value", [a], T.alloc(a, 2, 3), (np.ones(2),), ValueError,
                  (np.arange(3.0),), lambda a: np.broadcast_to(a, (2, 3)), "float64"))
    n = T.lscalar("n")
    cases.append(("zeros", [n], T.zeros((n, 2), dtype="int32"), (-1,), ValueError,
                  (2,), lambda n: np.zeros((n, 2), dtype="int32"), "int32"))
    x = T.fmatrix("x")
    cases.append(("ones_like", [x], T.ones_like(x, dtype="bool"), ("text",), TypeError,
                  (np.ones((2, 1), "float32"),), lambda x: np.ones_like(x, dtype=bool), "bool"))
    m1, m2 = T.dmatrix("m1"), T.imatrix("m2")
    cases.append(("concatenate", [m1, m2], T.concatenate([m1, m2], axis=0), (np.ones((1, 2)), np.ones((1, 3), "int32")),
                  ValueError, (np.ones((1, 2)), np.full((2, 2), 3, "int32")), lambda p, q: np.concatenate([p, q]),
                  "float64"))
    a, b = T.dvector("a"), T.dvector("b")
    cases.append(("stack", [a, b], T.stack([a, b]), (np.ones(2), np.ones(4)), ValueError,
                  (np.arange(2.0), np.ones(2)), lambda a, b: np.stack([a, b]), "float64"))
    return cases


def test_functions_keep_working_after_an_error(mode):
    """One function computes every case of _recovery_cases; for each case in turn it is called with
    that case's bad arguments (the others' good ones) and raises, then with good arguments only and
    gives every right answer; twice over."""
    cases = _recovery_cases()
    inputs = [v for case in cases for v in case[1]]
    f = function(inputs, [case[2] for case in cases], mode=mode)
    good = [v for case in cases for v in case[5]]
    expected = [case[6](*case[5]) for case in cases]
    for _ in range(2):
        for k, (label, _, _, bad, exc, _, _, _) in enumerate(cases):
            args = [v for j, case in enumerate(cases) for v in (bad if j == k else case[5])]
            with pytest.raises(exc):
                f(*args)
            for got, want, case in zip(f(*good), expected, cases):
                try:
                    assert_matches(got, want, case[2].type, dtype=case[7])
                except AssertionError as err:
                    raise AssertionError("case %s, after the error of %s: %s" % (case[0], label, err)) from None

"""Elementwise ops (``Elemwise`` over the scalar table) checked against numpy.

Each op runs on every dtype it accepts, on 0-d, empty, 1-d and 2-d inputs
(and broadcast pairs for binary ops), on contiguous, strided and reversed
layouts (see ``helpers.check``). Float inputs carry NaN and +/-inf. The
expected output dtype is spelled out here from the documented rules rather
than read from ffigraph, so a change of typing is caught too.
"""
import math
import operator

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from helpers import ALL_DTYPES, Case, assert_matches, check, check_cases, sample

# ------------------------------------------------------------------ expected typing


def upgrade_to_float(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return dtype.name
    if dtype.kind == "b" or dtype.itemsize <= 2:
        return "float32"
    return "float64"


def expected_dtype(rule, dtypes):
    promoted = np.result_type(*[np.dtype(d) for d in dtypes]).name
    if rule == "div":   # PyTensor's TrueDiv: integers and bools only give floatX (float64 by default)
        return "float64" if all(kind(d) in "biu" for d in dtypes) else upgrade_to_float(promoted)
    if rule == "float":
        return upgrade_to_float(promoted)
    if rule == "bool":
        return "bool"
    return promoted  # "numpy" (for these ops numpy's ufunc gives the promoted dtype) and "same"


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf_scalar(x).astype(x.dtype) if x.size else np.empty(x.shape, x.dtype)


def _keep_ints(fn):
    return lambda x: x.copy() if x.dtype.kind in "biu" else fn(x)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    # log(1 + e^x) written so it neither overflows for big x nor loses small values
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


# name -> (ffigraph function, numpy reference, accepted kinds, dtype rule)
UNARY = {
    "neg": (T.neg, np.negative, "iuf", "numpy"),
    "abs": (T.abs, np.absolute, "biuf", "numpy"),
    "exp": (T.exp, np.exp, "biuf", "float"),
    "expm1": (T.expm1, np.expm1, "biuf", "float"),
    "log": (T.log, np.log, "biuf", "float"),
    "log1p": (T.log1p, np.log1p, "biuf", "float"),
    "log2": (T.log2, np.log2, "biuf", "float"),
    "log10": (T.log10, np.log10, "biuf", "float"),
    "sqrt": (T.sqrt, np.sqrt, "biuf", "float"),
    "sqr": (T.sqr, np.square, "iuf", "numpy"),
    "sin": (T.sin, np.sin, "biuf", "float"),
    "cos": (T.cos, np.cos, "biuf", "float"),
    "tan": (T.tan, np.tan, "biuf", "float"),
    "tanh": (T.tanh, np.tanh, "biuf", "float"),
    "sigmoid": (T.sigmoid, _sigmoid, "biuf", "float"),
    "softplus": (T.softplus, _softplus, "biuf", "float"),
    "floor": (T.floor, _keep_ints(np.floor), "biuf", "same"),
    "ceil": (T.ceil, _keep_ints(np.ceil), "biuf", "same"),
    "round": (T.round, _keep_ints(np.rint), "biuf", "same"),
    "sgn": (T.sgn, np.sign, "iuf", "numpy"),
    "erf": (T.erf, _erf, "biuf", "float"),
    "isnan": (T.isnan, np.isnan, "biuf", "bool"),
    "isinf": (T.isinf, np.isinf, "biuf", "bool"),
    "invert": (T.invert, np.invert, "biu", "numpy"),
}

# name -> (ffigraph function, numpy ufunc, accepted kinds, dtype rule)
BINARY = {
    "add": (T.add, np.add, "biuf", "numpy"),
    "sub": (T.sub, np.subtract, "iuf", "numpy"),
    "mul": (T.mul, np.multiply, "biuf", "numpy"),
    "true_div": (T.true_div, np.true_divide, "biuf", "div"),
    "int_div": (T.int_div, np.floor_divide, "iuf", "numpy"),
    "mod": (T.mod, np.mod, "iuf", "numpy"),
    "pow": (T.pow, np.power, "iuf", "numpy"),
    "maximum": (T.maximum, np.maximum, "biuf", "numpy"),
    "minimum": (T.minimum, np.minimum, "biuf", "numpy"),
    "eq": (T.eq, np.equal, "biuf", "bool"),
    "neq": (T.neq, np.not_equal, "biuf", "bool"),
    "lt": (T.lt, np.less, "biuf", "bool"),
    "le": (T.le, np.less_equal, "biuf", "bool"),
    "gt": (T.gt, np.greater, "biuf", "bool"),
    "ge": (T.ge, np.greater_equal, "biuf", "bool"),
    "and_": (T.and_, np.bitwise_and, "biu", "numpy"),
    "or_": (T.or_, np.bitwise_or, "biu", "numpy"),
    "xor": (T.xor, np.bitwise_xor, "biu", "numpy"),
}

# complex is accepted by some ops; only its rejections are tested here
COMPLEX_OK = {"neg", "abs", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sqr", "sin",
              "cos", "tan", "tanh", "isnan", "isinf", "add", "sub", "mul", "true_div", "pow", "eq", "neq"}

SHAPES = [(), (0,), (3, 0), (7,), (3, 4)]
BROADCAST_SHAPES = [((3, 1), (1, 4)), ((4,), (3, 4)), ((3, 4), (4,)), ((), (3, 4)), ((2, 3), ()),
                    ((2, 1, 3), (4, 1)), ((3, 0), (1, 0)), ((0, 2), (2,))]
MIXED_DTYPES = [("int32", "float32"), ("int64", "float32"), ("float32", "int64"), ("bool", "int32"),
                ("int32", "int64"), ("float32", "float64"), ("bool", "float32"), ("int32", "float64"),
                ("int16", "int8"), ("uint8", "int16")]


def kind(dtype):
    return np.dtype(dtype).kind


def _id(v):
    return str(v).replace(" ", "")


def _ids(values):
    return "-".join(_id(v) for v in values)


# ------------------------------------------------------------------ unary


def unary_ref(name, dtype):
    _, ref, _, rule = UNARY[name]
    out = expected_dtype(rule, [dtype])

    def run(x):
        if rule == "float":
            x = x.astype(out)
        return ref(x)

    return run, out


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, mode):
    """Every accepted dtype of ALL_DTYPES on every shape of SHAPES, in one compiled function."""
    fn, _, kinds, _ = UNARY[name]
    cases = []
    for dtype in ALL_DTYPES:
        if kind(dtype) not in kinds:
            continue
        ref, out_dtype = unary_ref(name, dtype)
        for shape in SHAPES:
            sym = T.tensor(dtype, (None,) * len(shape))
            assert fn(sym).dtype == out_dtype, (dtype, shape)
            assert fn(sym).ndim == len(shape), (dtype, shape)
            cases.append(Case("%s,%s" % (dtype, _id(shape)), fn, ref, [sample(dtype, shape, special=True)],
                              dtype=out_dtype))
    check_cases(cases, mode)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool", "complex128"])
def test_unary_rejected_dtypes_raise_when_building(name, dtype):
    fn, _, kinds, _ = UNARY[name]
    x = T.tensor(dtype, (None,))
    accepted = kind(dtype) in kinds or (kind(dtype) == "c" and name in COMPLEX_OK)
    if accepted:
        fn(x)
    else:
        with pytest.raises(TypeError, match=dtype):
            fn(x)


def test_unary_out_dtypes():
    assert T.exp(T.ivector()).dtype == "float64"
    assert T.exp(T.lvector()).dtype == "float64"
    assert T.exp(T.tensor("int16", (None,))).dtype == "float32"
    assert T.exp(T.tensor("int8", (None,))).dtype == "float32"
    assert T.exp(T.tensor("uint8", (None,))).dtype == "float32"
    assert T.exp(T.tensor("uint16", (None,))).dtype == "float32"
    assert T.exp(T.tensor("uint32", (None,))).dtype == "float64"
    assert T.sqrt(T.tensor("bool", (None,))).dtype == "float32"
    assert T.log(T.fvector()).dtype == "float32"
    assert T.sin(T.dmatrix()).dtype == "float64"
    assert T.floor(T.ivector()).dtype == "int32"
    assert T.round(T.tensor("int16", (None,))).dtype == "int16"
    assert T.ceil(T.fvector()).dtype == "float32"
    assert T.isnan(T.fvector()).dtype == "bool"
    assert T.isinf(T.ivector()).dtype == "bool"
    assert T.neg(T.tensor("int8", (None,))).dtype == "int8"
    assert T.abs(T.tensor("bool", (None,))).dtype == "bool"
    assert T.sgn(T.ivector()).dtype == "int32"
    assert T.invert(T.tensor("bool", (None,))).dtype == "bool"


def _run1(fn, x, mode):
    x = np.asarray(x)
    sym = T.tensor(x.dtype, (None,) * x.ndim)
    return function([sym], fn(sym), mode=mode)(x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_log_and_sqrt_domain_edges(dtype, mode):
    x = np.array([0.0, -0.0, -1.0, 1.0, -np.inf, np.inf, np.nan, 1e-30], dtype=dtype)
    with np.errstate(all="ignore"):
        for fn, ref in [(T.log, np.log), (T.log2, np.log2), (T.log10, np.log10),
                        (T.log1p, np.log1p), (T.sqrt, np.sqrt)]:
            got = _run1(fn, x, mode)
            assert got.dtype == dtype
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref(x)))
            np.testing.assert_allclose(got, ref(x), rtol=1e-6, equal_nan=True)
    got = _run1(T.log, x, mode)
    assert got[0] == -np.inf and got[1] == -np.inf and np.isnan(got[2]) and got[3] == 0
    assert np.isnan(got[4]) and got[5] == np.inf and np.isnan(got[6])
    got = _run1(T.log1p, np.array([-1.0, -2.0, 0.0], dtype=dtype), mode)
    assert got[0] == -np.inf and np.isnan(got[1]) and got[2] == 0
    got = _run1(T.sqrt, np.array([-1.0, -np.inf, 4.0], dtype=dtype), mode)
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 2


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_log_of_integer_zero_and_negative(dtype, mode):
    x = np.array([0, 1, -2, 4], dtype=dtype) if dtype != "bool" else np.array([False, True])
    got = _run1(T.log, x, mode)
    assert got.dtype == upgrade_to_float(dtype)
    assert got[0] == -np.inf and got[1] == 0
    if dtype != "bool":
        assert np.isnan(got[2])
        np.testing.assert_allclose(got[3], np.log(4.0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_large_and_tiny_arguments(dtype, mode):
    big = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], dtype=dtype)
    sig = _run1(T.sigmoid, big, mode)
    np.testing.assert_allclose(sig, [0.0, 1 / (1 + np.exp(100.0)), 0.5, 1 / (1 + np.exp(-100.0)), 1.0],
                               rtol=1e-6, atol=1e-30)
    assert not np.isnan(sig).any()
    sp = _run1(T.softplus, big, mode)
    np.testing.assert_allclose(sp, np.array([0.0, 0.0, np.log(2), 100.0, 1000.0]), rtol=1e-6, atol=1e-30)
    ex = _run1(T.exp, big, mode)
    assert ex[0] == 0 and ex[2] == 1 and ex[4] == np.inf
    tiny = np.array([1e-10, -1e-10, 1e-20], dtype=dtype)
    np.testing.assert_allclose(_run1(T.expm1, tiny, mode), tiny, rtol=1e-6)
    np.testing.assert_allclose(_run1(T.log1p, tiny, mode), tiny, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_round_half_to_even_floor_ceil(dtype, mode):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, -0.51, 3.0, np.nan, np.inf], dtype=dtype)
    np.testing.assert_array_equal(_run1(T.round, x, mode),
                                  np.array([0, 2, 2, -0.0, -2, -2, 0, -1, 3, np.nan, np.inf], dtype=dtype))
    np.testing.assert_array_equal(_run1(T.floor, x, mode), np.floor(x))
    np.testing.assert_array_equal(_run1(T.ceil, x, mode), np.ceil(x))
    np.testing.assert_array_equal(_run1(T.sgn, x, mode), np.sign(x))


def test_erf_values(mode):
    x = np.array([0.0, 0.5, -0.5, 3.0, -np.inf, np.inf, np.nan])
    got = _run1(T.erf, x, mode)
    np.testing.assert_allclose(got, [0.0, 0.5204998778130465, -0.5204998778130465, 0.9999779095030014,
                                     -1.0, 1.0, np.nan], rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_invert_is_bitwise_not(dtype, mode):
    x = np.array([0, 1, -1, 5], dtype=dtype) if dtype != "bool" else np.array([True, False])
    got = _run1(T.invert, x, mode)
    expected = np.array([-1, -2, 0, -6], dtype=dtype) if dtype != "bool" else np.array([False, True])
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == dtype


# ------------------------------------------------------------------ binary


def binary_values(name, da, db, sa, sb):
    # unsigned values stay small and non-negative so that no op wraps around
    a = sample(da, sa, rng=np.random.default_rng(1), low=0 if kind(da) == "u" else -3, special=True)
    b = sample(db, sb, rng=np.random.default_rng(2), low=0 if kind(db) == "u" else -3, special=True)
    if b.size >= 4:  # meet the special values of ``a`` with ordinary ones and other specials
        b = np.roll(b.reshape(-1), 1).reshape(sb)
    common = np.result_type(np.dtype(da), np.dtype(db))
    if name in ("int_div", "mod") and kind(db) in "biu":
        b = np.where(b == 0, np.asarray(2, dtype=db), b).astype(db)  # int division by 0 is platform specific
    if name == "pow" and common.kind in "iu":
        b = np.abs(b).astype(db)  # ints take non-negative exponents
    return a, b


def binary_ref(name, da, db):
    _, ufunc, _, rule = BINARY[name]
    out = expected_dtype(rule, [da, db])
    compute_in = out if rule in ("float", "div") else np.result_type(np.dtype(da), np.dtype(db)).name

    def run(a, b):
        # cast first so numpy 1.x's value-based casting of 0-d arrays plays no part
        with np.errstate(all="ignore"):
            return ufunc(a.astype(compute_in), b.astype(compute_in))

    return run, out


def _binary_case(name, da, db, sa, sb):
    fn = BINARY[name][0]
    ref, out_dtype = binary_ref(name, da, db)
    a, b = binary_values(name, da, db, sa, sb)
    sym = fn(T.tensor(da, (None,) * len(sa)), T.tensor(db, (None,) * len(sb)))
    assert sym.dtype == out_dtype
    assert sym.ndim == max(len(sa), len(sb))
    return Case("%s,%s,%s,%s" % (da, db, _id(sa), _id(sb)), fn, ref, [a, b], dtype=out_dtype)


BCAST_DTYPES = ("float64", "float32", "int32", "bool")


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_same_shape_and_broadcasting(name, mode):
    """Every accepted dtype of ALL_DTYPES on every shape of SHAPES (both operands alike) and, for
    BCAST_DTYPES, every broadcast pair of BROADCAST_SHAPES, in one compiled function."""
    cases = []
    for dtype in ALL_DTYPES:
        if kind(dtype) in BINARY[name][2]:
            pairs = [(s, s) for s in SHAPES] + (list(BROADCAST_SHAPES) if dtype in BCAST_DTYPES else [])
            cases += [_binary_case(name, dtype, dtype, sa, sb) for sa, sb in pairs]
    check_cases(cases, mode)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_mixed_dtypes(name, mode):
    """Every accepted pair of MIXED_DTYPES, as (3, 4) with (4,) and () with (2, 3), in one function."""
    kinds = BINARY[name][2]
    pairs = [(da, db) for da, db in MIXED_DTYPES if kind(da) in kinds and kind(db) in kinds]
    check_cases([_binary_case(name, da, db, sa, sb) for da, db in pairs
                 for sa, sb in (((3, 4), (4,)), ((), (2, 3)))], mode)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("da,db", [("float64", "float64"), ("int32", "int32"), ("bool", "bool"),
                                   ("int32", "float64"), ("bool", "int64"), ("complex128", "float64")])
def test_binary_rejected_dtypes_raise_when_building(name, da, db):
    fn, _, kinds, _ = BINARY[name]

    def ok(d):
        return kind(d) in kinds or (kind(d) == "c" and name in COMPLEX_OK)

    x, y = T.tensor(da, (None,)), T.tensor(db, (None,))
    if ok(da) and ok(db):
        fn(x, y)
    else:
        with pytest.raises(TypeError):
            fn(x, y)


def test_binary_out_dtypes():
    assert (T.ivector() + T.fvector()).dtype == "float64"
    assert (T.bvector() + T.fvector()).dtype == "float32"
    assert (T.tensor("bool", (None,)) + T.ivector()).dtype == "int32"
    assert (T.tensor("bool", (None,)) * T.tensor("bool", (None,))).dtype == "bool"
    assert (T.ivector() * T.lvector()).dtype == "int64"
    # PyTensor's TrueDiv: integers and bools only give floatX, whatever their width
    assert T.true_div(T.bvector(), T.bvector()).dtype == "float64"
    assert T.true_div(T.tensor("bool", (None,)), T.tensor("uint16", (None,))).dtype == "float64"
    assert T.true_div(T.ivector(), T.ivector()).dtype == "float64"
    with ffigraph.config.change_flags(floatX="float32"):
        assert T.true_div(T.lvector(), T.ivector()).dtype == "float32"
        assert (T.tensor("int16", (None,)) / 2).dtype == "float32"
        assert T.true_div(T.ivector(), T.fvector()).dtype == "float64"   # a float operand: upcast, no floatX
    assert T.true_div(T.bvector(), T.fvector()).dtype == "float32"
    assert T.true_div(T.ivector(), T.fvector()).dtype == "float64"
    assert T.true_div(T.fvector(), T.fvector()).dtype == "float32"
    assert T.int_div(T.fvector(), T.fvector()).dtype == "float32"
    assert T.mod(T.ivector(), T.lvector()).dtype == "int64"
    assert T.pow(T.ivector(), T.fvector()).dtype == "float64"
    assert T.lt(T.fvector(), T.dvector()).dtype == "bool"
    assert T.and_(T.tensor("bool", (None,)), T.tensor("bool", (None,))).dtype == "bool"
    assert T.xor(T.ivector(), T.tensor("bool", (None,))).dtype == "int32"


# ------------------------------------------------------------------ domain edges


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float_division_by_zero(dtype, mode):
    x = np.array([1.0, -1.0, 0.0, np.inf, np.nan, 2.5, -2.5], dtype=dtype)
    z = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -0.0, -0.0], dtype=dtype)
    a, b = T.tensor(dtype, (None,)), T.tensor(dtype, (None,))
    f = function([a, b], [a / b, a // b, a % b], mode=mode)
    div, fdiv, mod = f(x, z)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(div, np.array([np.inf, -np.inf, np.nan, np.inf, np.nan, -np.inf, np.inf],
                                                    dtype=dtype))
        np.testing.assert_array_equal(div, np.true_divide(x, z))
        np.testing.assert_array_equal(fdiv, np.floor_divide(x, z))
        np.testing.assert_array_equal(mod, np.mod(x, z))
    assert np.isnan(mod[:5]).all()
    assert div.dtype == fdiv.dtype == mod.dtype == dtype


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_true_division_by_zero_is_float(dtype, mode):
    a, b = T.tensor(dtype, (None,)), T.tensor(dtype, (None,))
    got = function([a, b], a / b, mode=mode)(np.array([1, -3, 0, 7], dtype=dtype), np.array([0, 0, 0, 2], dtype=dtype))
    assert got.dtype == "float64"
    np.testing.assert_array_equal(got, [np.inf, -np.inf, np.nan, 3.5])


@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
def test_int_div_and_mod_floor_semantics(dtype, mode):
    x = np.arange(-7, 8).astype(dtype).reshape(-1, 1)
    y = np.array([-3, -2, -1, 1, 2, 3], dtype=dtype).reshape(1, -1)
    a, b = T.tensor(dtype, (None, None)), T.tensor(dtype, (None, None))
    q, r = function([a, b], [a // b, a % b], mode=mode)(x, y)
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.mod(x, y))
    np.testing.assert_array_equal(q * y + r, np.broadcast_to(x, q.shape))
    assert (np.sign(r) * np.sign(y) >= 0).all()  # the remainder takes the divisor's sign
    assert q[0, 4] == -4 and r[0, 4] == 1    # -7 // 2, -7 % 2
    assert q[14, 1] == -4 and r[14, 1] == -1  # 7 // -2, 7 % -2
    assert q.dtype == r.dtype == dtype


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_pow(dtype, mode):
    x = np.arange(-4, 5).astype(dtype).reshape(-1, 1)
    e = np.arange(0, 6).astype(dtype).reshape(1, -1)
    a, b = T.tensor(dtype, (None, None)), T.tensor(dtype, (None, None))
    got = function([a, b], a ** b, mode=mode)(x, e)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.power(x, e))
    assert got[0, 3] == -64 and got[4, 0] == 1  # (-4)**3, 0**0


def test_float_pow_edges(mode):
    a, b = T.dvector(), T.dvector()
    x = np.array([-8.0, 0.0, 0.0, 2.0, np.nan, 1.0, -2.0])
    y = np.array([1 / 3, 0.0, -1.0, 0.5, 0.0, np.nan, 2.0])
    got = function([a, b], a ** b, mode=mode)(x, y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.power(x, y))
    assert np.isnan(got[0]) and got[1] == 1 and got[2] == np.inf and got[4] == 1 and got[5] == 1 and got[6] == 4


def test_nan_propagation_in_max_min_and_comparisons(mode):
    a, b = T.dvector(), T.dvector()
    x = np.array([np.nan, 1.0, np.nan, -np.inf])
    y = np.array([1.0, np.nan, np.nan, np.inf])
    mx, mn, lt, eq, neq = function([a, b], [T.maximum(a, b), T.minimum(a, b), a < b, T.eq(a, b), T.neq(a, b)],
                                   mode=mode)(x, y)
    assert np.isnan(mx[:3]).all() and mx[3] == np.inf
    assert np.isnan(mn[:3]).all() and mn[3] == -np.inf
    np.testing.assert_array_equal(lt, [False, False, False, True])
    np.testing.assert_array_equal(eq, [False, False, False, False])
    np.testing.assert_array_equal(neq, [True, True, True, True])


# ------------------------------------------------------------------ operators and weak scalars

BINARY_OPERATORS = [
    (operator.add, T.add), (operator.sub, T.sub), (operator.mul, T.mul), (operator.truediv, T.true_div),
    (operator.floordiv, T.int_div), (operator.mod, T.mod), (operator.pow, T.pow),
    (operator.lt, T.lt), (operator.le, T.le), (operator.gt, T.gt), (operator.ge, T.ge),
    (operator.and_, T.and_), (operator.or_, T.or_), (operator.xor, T.xor),
]


@pytest.mark.parametrize("op,fn", BINARY_OPERATORS, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_python_operators_match_functions(op, fn, dtype, mode):
    name = fn.__name__
    if kind(dtype) not in BINARY[name][2]:
        with pytest.raises(TypeError):
            op(T.tensor(dtype, (None,)), T.tensor(dtype, (None,)))
        return
    a, b = binary_values(name, dtype, dtype, (3, 4), (4,))
    x, y = T.tensor(dtype, (None, None)), T.tensor(dtype, (None,))
    by_op, by_fn = op(x, y), fn(x, y)
    assert by_op.dtype == by_fn.dtype
    assert by_op.owner.op == by_fn.owner.op
    r_op, r_fn = function([x, y], [by_op, by_fn], mode=mode)(a, b)
    ref, out_dtype = binary_ref(name, dtype, dtype)
    assert_matches(r_op, ref(a, b), by_op.type, dtype=out_dtype)
    np.testing.assert_array_equal(r_op, r_fn)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_unary_operators_match_functions(dtype, mode):
    x = T.tensor(dtype, (None,))
    v = sample(dtype, (6,), special=True)
    outs = [abs(x), T.abs(x)]
    refs = [np.abs(v)]
    if dtype != "bool":
        outs += [-x, T.neg(x)]
        refs.append(np.negative(v))
    else:
        with pytest.raises(TypeError):
            -x
    if dtype != "float64":
        outs += [~x, T.invert(x)]
        refs.append(np.invert(v))
    else:
        with pytest.raises(TypeError):
            ~x
    got = function([x], outs, mode=mode)(v)
    for i, ref in enumerate(refs):
        assert_matches(got[2 * i], ref, outs[2 * i].type, dtype=dtype)   # abs, neg and invert keep the dtype
        np.testing.assert_array_equal(got[2 * i], got[2 * i + 1])


# (build, input dtype, expected output dtype, numpy reference on the input)
WEAK_CASES = [
    ("x + 1.5", lambda x: x + 1.5, "float32", "float32", lambda v: v + np.float32(1.5)),
    ("1.5 + x", lambda x: 1.5 + x, "float32", "float32", lambda v: np.float32(1.5) + v),
    ("2 * x", lambda x: 2 * x, "float32", "float32", lambda v: np.float32(2) * v),
    ("x ** 2 f", lambda x: x ** 2, "float32", "float32", lambda v: v * v),
    ("x - 0.1", lambda x: x - 0.1, "float32", "float32", lambda v: v - np.float32(0.1)),
    ("x * 0.1", lambda x: x * 0.1, "float32", "float32", lambda v: v * np.float32(0.1)),
    ("x + 2**40 f", lambda x: x + 2 ** 40, "float32", "float32", lambda v: v + np.float32(2 ** 40)),
    ("x / 3", lambda x: x / 3, "float32", "float32", lambda v: v / np.float32(3)),
    ("x + 3 i", lambda x: x + 3, "int32", "int32", lambda v: v + np.int32(3)),
    ("x + 1.5 i", lambda x: x + 1.5, "int32", "float64", lambda v: v.astype("float64") + 1.5),
    ("x ** 2 i", lambda x: x ** 2, "int32", "int32", lambda v: v * v),
    ("2 ** x i", lambda x: 2 ** abs(x), "int32", "int32", lambda v: np.int32(2) ** np.abs(v)),
    ("7 // x i", lambda x: 7 // (abs(x) + 1), "int32", "int32", lambda v: np.int32(7) // (np.abs(v) + 1)),
    ("x % 2 i", lambda x: x % 2, "int32", "int32", lambda v: np.mod(v, np.int32(2))),
    ("x / 2 i", lambda x: x / 2, "int32", "float64", lambda v: v / 2.0),
    ("x / 2 w", lambda x: x / 2, "int16", "float64", lambda v: v.astype("float64") / 2.0),
    ("x + 1 b", lambda x: x + 1, "int8", "int8", lambda v: v + np.int8(1)),
    ("x > 1.5 i", lambda x: x > 1.5, "int32", "bool", lambda v: v > 1.5),
    ("x == 2.0 i", lambda x: T.eq(x, 2.0), "int32", "bool", lambda v: v == 2),
    ("x + 2**40 i", lambda x: x + 2 ** 40, "int32", "int64", lambda v: v.astype("int64") + 2 ** 40),
    ("bool + 1", lambda x: x + 1, "bool", "int64", lambda v: v.astype("int64") + 1),
    ("bool + 1.5", lambda x: x + 1.5, "bool", "float64", lambda v: v + 1.5),
    ("x + True f", lambda x: x + True, "float32", "float32", lambda v: v + np.float32(1)),
    ("x & 1 i", lambda x: x & 1, "int32", "int32", lambda v: v & np.int32(1)),
    ("max(x, 0.5) f", lambda x: T.maximum(x, 0.5), "float32", "float32", lambda v: np.maximum(v, np.float32(0.5))),
    ("x * 1.5 d", lambda x: x * 1.5, "float64", "float64", lambda v: v * 1.5),
]


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)], ids=_id)
def test_weak_python_scalars(shape, mode):
    """Every case of WEAK_CASES on this shape, in one compiled function."""
    cases = []
    for label, build, dtype, out_dtype, ref in WEAK_CASES:
        out = build(T.tensor(dtype, (None,) * len(shape)))
        assert out.dtype == out_dtype, label
        assert out.ndim == len(shape), label
        cases.append(Case(label, build, lambda v, ref=ref: np.asarray(ref(v)), [sample(dtype, shape)],
                          dtype=out_dtype))
    check_cases(cases, mode)


def test_weak_scalar_dtype_rules():
    assert (T.fvector() + 1.5).dtype == "float32"
    assert (T.ivector() + 3).dtype == "int32"
    assert (T.ivector() + 1.5).dtype == "float64"
    assert (2 * T.fvector()).dtype == "float32"
    assert (T.fvector() * 0.1).dtype == "float32"
    assert (0.1 + T.fmatrix()).dtype == "float32"
    assert (T.ivector() ** 2).dtype == "int32"
    assert (T.lvector() - 1).dtype == "int64"
    assert (T.fscalar() * 2).dtype == "float32"
    assert T.exp(T.fvector() + 1).dtype == "float32"
    # a numpy scalar is not weak: it keeps its own dtype
    assert (T.fvector() + np.float64(1.5)).dtype == "float64"
    assert (T.ivector() + np.int64(3)).dtype == "int64"


# ------------------------------------------------------------------ shapes and broadcasting errors


def test_runtime_broadcast_failure_then_recovers(mode):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], x * y + 1, mode=mode)
    with pytest.raises(ValueError, match="(?i)broadcast"):
        f(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(f(np.arange(3.0), np.full(3, 2.0)), [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(f(np.arange(3.0), np.full(1, 2.0)), [1.0, 3.0, 5.0])
    with pytest.raises(ValueError, match="(?i)broadcast"):
        f(np.ones(0), np.ones(3))
    np.testing.assert_array_equal(f(np.arange(2.0), np.arange(2.0)), [1.0, 2.0])


def test_runtime_broadcast_failure_2d(mode):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = function([x, y], T.maximum(x, y), mode=mode)
    with pytest.raises(ValueError, match="(?i)broadcast"):
        f(np.ones((2, 3)), np.ones((3, 2)))
    a, b = sample("float64", (2, 3)), sample("float64", (1, 3), rng=np.random.default_rng(5))
    np.testing.assert_array_equal(f(a, b), np.maximum(a, b))


def test_static_shape_mismatch_raises_when_building():
    with pytest.raises(ValueError):
        T.tensor("float64", (2,)) + T.tensor("float64", (3,))
    with pytest.raises(ValueError):
        T.mul(T.tensor("float64", (4, 2)), T.tensor("int32", (3, 2)))
    with pytest.raises(ValueError):
        T.tensor("float64", (2, None)) < T.tensor("float64", (None, 5)).T


def test_static_shapes_propagate(mode):
    a = T.tensor("float64", (3, 1))
    b = T.tensor("float64", (1, 4))
    assert (a + b).type.shape == (3, 4)
    assert (T.tensor("float64", (None,)) + T.tensor("float64", (1,))).type.shape == (None,)
    assert (T.tensor("float64", (2, None)) + T.tensor("float64", (None, 5))).type.shape == (2, 5)
    assert (T.tensor("float64", (1, 1)) * T.tensor("float64", (1,))).type.shape == (1, 1)
    assert (T.tensor("float64", (3,)) + 1.0).type.shape == (3,)
    f = function([a, b], a - b, mode=mode)
    got = f(np.arange(3.0).reshape(3, 1), np.arange(4.0).reshape(1, 4))
    np.testing.assert_array_equal(got, np.arange(3.0).reshape(3, 1) - np.arange(4.0).reshape(1, 4))
    with pytest.raises(ValueError):
        f(np.ones((2, 1)), np.ones((1, 4)))  # violates the static shape of ``a``
    np.testing.assert_array_equal(f(np.ones((3, 1)), np.ones((1, 4))), np.zeros((3, 4)))


@pytest.mark.parametrize("sa,sb", [((0,), (1,)), ((1,), (0,)), ((3, 0), (3, 1)), ((1, 4), (0, 1))], ids=_id)
def test_broadcast_zero_length_against_one(sa, sb, mode):
    # numpy broadcasts a length-1 axis against a length-0 one to length 0
    a, b = sample("float64", sa), sample("float64", sb)
    check(T.add, np.add, [a, b], mode, dtype="float64")


def test_inputs_broadcast_along_the_last_axis_by_type_take_the_contiguous_loop():
    """An input whose type is broadcast along the last axis (a constant scalar, a column) reads its
    one element in the contiguous loop; the others must still be contiguous there, else the strided
    loop runs. One function, several separate Elemwise nodes (nothing fuses two outputs)."""
    m, col, x = T.dmatrix("m"), T.TensorType("float64", (False, True))("col"), T.fvector("x")
    f = function([m, col, x], [m + col, m * 2.0, x - np.float32(1.5), col * 3.0],
                 mode=ffigraph.Mode(linker="c"))
    rng = np.random.default_rng(3)
    full = rng.normal(size=(5, 8))
    for mm in (full, full[:, ::2], full[::-1, ::-1], full[:0], full.T.copy().T):
        c = rng.normal(size=(mm.shape[0], 1))
        xv = np.array([0.5, np.nan, -np.inf, 3.0], np.float32)
        got = f(mm, c, xv)
        np.testing.assert_array_equal(got[0], mm + c)
        np.testing.assert_array_equal(got[1], mm * 2.0)
        np.testing.assert_array_equal(got[2], xv - np.float32(1.5))
        assert got[2].dtype == np.float32
        np.testing.assert_array_equal(got[3], c * 3.0)

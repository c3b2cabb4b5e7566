"""Canonicalize, shape and stabilize rewrites: which ops remain, and that values do not change.

Every graph is compiled twice per linker: with the rewrites (``fast_run`` minus
fusion and inplace, so the rewritten graph is what these rewrites made) and
with none. Canonicalizing rewrites must give the same values bit for bit
(NaN where NaN, the sign of zero aside for x + 0), shape rewrites numpy's
shapes, and stabilizing rewrites the exact function's value, finite where
the plain graph overflows.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.compile.ops import DeepCopyOp, Shape, Shape_i
from ffigraph.scalar.basic import Cast
from ffigraph.tensor.elemwise import Elemwise

LINKERS = ["py", "c"]

F_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, -3.75, 1e-300, 1e300]


def rewrite_mode(linker):
    return Mode(linker=linker, optimizer="fast_run").excluding("fusion", "inplace")


def plain_mode(linker):
    return Mode(linker=linker, optimizer=None)


def ops(f):
    return [n.op for n in f.maker.fgraph.toposort()]


def op_names(f):
    """Elemwise nodes by scalar op name, other nodes by class name (DeepCopyOp left out)."""
    out = []
    for op in ops(f):
        if isinstance(op, DeepCopyOp):
            continue
        if isinstance(op, Elemwise):
            sop = op.scalar_op
            out.append("cast" if isinstance(sop, Cast) else sop.name)
        else:
            out.append(type(op).__name__)
    return out


def float_values(dtype, shape=(len(F_SPECIAL),)):
    with np.errstate(over="ignore"):
        base = np.array(F_SPECIAL, dtype=dtype)
    n = int(np.prod(shape))
    return np.resize(base, n).reshape(shape).astype(dtype)


def int_values(dtype, shape=(7,)):
    info = np.iinfo(dtype)
    base = np.array([0, 1, -1 if info.min < 0 else 2, info.max, info.min, 7, 42], dtype=dtype)
    n = int(np.prod(shape))
    return np.resize(base, n).reshape(shape).astype(dtype)


def values_for(dtype, shape):
    kind = np.dtype(dtype).kind
    if kind == "f":
        return float_values(dtype, shape)
    if kind == "b":
        return (np.arange(int(np.prod(shape))) % 3 == 0).reshape(shape)
    return int_values(dtype, shape)


SHAPES = [(), (0,), (11,), (3, 4), (0, 5)]


def sym(dtype, ndim, name="x"):
    return T.tensor(dtype, (None,) * ndim, name=name)


def assert_same(got, want):
    """Same dtype, shape and values; NaN matches NaN; -0.0 matches 0.0."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(got, np.asarray(want, dtype=dtype), rtol=rtol, atol=0, equal_nan=True)


def compile_both(inputs, output, linker):
    return function(inputs, output, mode=rewrite_mode(linker)), function(inputs, output, mode=plain_mode(linker))


# ------------------------------------------------------------------ x op constant -> x

IDENTITIES = {
    # name: (build, dtypes it applies to)
    "mul_one_right": (lambda x: x * 1, ("float64", "float32", "int64", "int32", "uint8")),
    "mul_one_left": (lambda x: 1 * x, ("float64", "float32", "int64", "int32", "uint8")),
    "add_zero_right": (lambda x: x + 0, ("float64", "float32", "int64", "int32", "uint8")),
    "add_zero_left": (lambda x: 0 + x, ("float64", "float32", "int64", "int32", "uint8")),
    "sub_zero": (lambda x: x - 0, ("float64", "float32", "int64", "int32", "uint8")),
    "div_one": (lambda x: x / 1, ("float64", "float32")),
    "pow_one": (lambda x: x ** 1, ("float64", "float32", "int64", "int32")),
    "mul_one_float": (lambda x: x * 1.0, ("float64", "float32")),
    "add_neg_zero": (lambda x: x + (-0.0), ("float64", "float32")),
    "mul_true": (lambda x: x * True, ("bool",)),
    "add_false": (lambda x: x + False, ("bool",)),
}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("name", sorted(IDENTITIES))
def test_identity_with_constant(name, linker):
    build, dtypes = IDENTITIES[name]
    for dtype in dtypes:
        for shape in SHAPES:
            x = sym(dtype, len(shape))
            f, g = compile_both([x], build(x), linker)
            assert op_names(f) == [], (name, dtype, op_names(f))
            v = values_for(dtype, shape)
            got = f(v)
            assert_same(got, g(v))
            assert_same(got, v)
            assert not np.shares_memory(got, v)  # the output is still a fresh array


@pytest.mark.parametrize("linker", LINKERS)
def test_add_zero_gives_positive_zero_only_for_negative_zero(linker):
    # the one accepted difference: (-0.0) + 0.0 is +0.0, the rewrite keeps -0.0
    x = sym("float64", 1)
    f, g = compile_both([x], x + 0, linker)
    v = np.array([-0.0, 0.0, np.nan])
    got, want = f(v), g(v)
    assert_same(got, want)
    assert np.signbit(got[0]) and not np.signbit(want[0])


@pytest.mark.parametrize("linker", LINKERS)
def test_identity_looks_through_dimshuffle_of_constant(linker):
    x = sym("float64", 2)
    one = T.constant(np.ones((), dtype="float64"))
    f, g = compile_both([x], x * T.dimshuffle(one, ("x", "x")), linker)
    assert op_names(f) == []
    v = float_values("float64", (2, 11))
    assert_same(f(v), g(v))
    assert_same(f(v), v)


@pytest.mark.parametrize("linker", LINKERS)
def test_size1_constant_of_higher_ndim_keeps_broadcast(linker):
    # the constant adds an axis: the output is (1, n), not x's (n,); x is padded to (1, n)
    # when the node is made, and that padded x is what replaces the product
    x = sym("float64", 1)
    f, g = compile_both([x], x * np.ones((1, 1)), linker)
    assert op_names(f) == ["DimShuffle"]
    for v in (float_values("float64", (11,)), np.zeros(0)):
        assert_same(f(v), g(v))
        assert f(v).shape == (1, v.shape[0])


@pytest.mark.parametrize("linker", LINKERS)
def test_bigger_constant_is_not_an_identity(linker):
    # x of length 1 times ones(3) has length 3: x * ones(3) is not x
    x = sym("float64", 1)
    f, g = compile_both([x], x * np.ones(3), linker)
    assert "mul" in op_names(f)
    v = np.array([np.nan])
    assert_same(f(v), g(v))
    assert f(v).shape == (3,)


@pytest.mark.parametrize("linker", LINKERS)
def test_identity_that_casts_is_kept(linker):
    # float32 x times a float64 constant 1 computes in float64: not x
    x = sym("float32", 1)
    out = T.mul(x, T.constant(np.float64(1.0)))
    assert out.dtype == "float64"
    f, g = compile_both([x], out, linker)
    assert "mul" in op_names(f)
    v = float_values("float32", (11,))
    assert_same(f(v), g(v))
    # bool times int 1 is int64, not bool
    b = sym("bool", 1)
    f, g = compile_both([b], b * 1, linker)
    assert "mul" in op_names(f)
    vb = values_for("bool", (5,))
    assert_same(f(vb), g(vb))


@pytest.mark.parametrize("linker", LINKERS)
def test_other_constants_are_not_identities(linker):
    x = sym("float64", 1)
    v = float_values("float64", (11,))
    for build, name in [(lambda x: x * 2, "mul"), (lambda x: x + 1, "add"), (lambda x: 0 - x, "sub"),
                        (lambda x: 1 / x, "true_div"), (lambda x: x ** 3, "pow"),
                        (lambda x: x * np.nan, "mul")]:
        f, g = compile_both([x], build(x), linker)
        assert name in op_names(f)
        assert_same(f(v), g(v))


@pytest.mark.parametrize("linker", LINKERS)
def test_excluding_local_mul_one_keeps_the_mul(linker):
    x = sym("float64", 1)
    f = function([x], x * 1, mode=rewrite_mode(linker).excluding("local_mul_one"))
    assert op_names(f) == ["mul"]
    v = float_values("float64", (11,))
    assert_same(f(v), v)
    # the other identities still run
    f = function([x], (x * 1) + 0, mode=rewrite_mode(linker).excluding("local_mul_one"))
    assert op_names(f) == ["mul"]


# ------------------------------------------------------------------ unary chains


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "uint8"])
def test_neg_neg(dtype, linker):
    for shape in SHAPES:
        x = sym(dtype, len(shape))
        f, g = compile_both([x], -(-x), linker)
        assert op_names(f) == []
        v = values_for(dtype, shape)
        assert_same(f(v), g(v))
        assert_same(f(v), v)


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
def test_abs_abs(dtype, linker):
    for shape in SHAPES:
        x = sym(dtype, len(shape))
        f, g = compile_both([x], abs(abs(x)), linker)
        assert op_names(f) == ["abs"]
        v = values_for(dtype, shape)
        assert_same(f(v), g(v))
        with np.errstate(over="ignore"):
            assert_same(f(v), np.abs(v))


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_useless_cast(dtype, linker):
    x = sym(dtype, 2)
    f, g = compile_both([x], Elemwise(Cast(dtype))(x), linker)
    assert op_names(f) == []
    v = values_for(dtype, (3, 4))
    assert_same(f(v), g(v))
    assert_same(f(v), v)
    # a real cast stays
    other = "float32" if dtype != "float32" else "float64"
    f, g = compile_both([x], T.cast(x, other), linker)
    assert op_names(f) == ["cast"]
    with np.errstate(all="ignore"):
        assert_same(f(v), v.astype(other))


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_sub_self_int_is_zeros(dtype, linker):
    for shape in SHAPES:
        x = sym(dtype, len(shape))
        f, g = compile_both([x], x - x, linker)
        assert "sub" not in op_names(f)
        v = values_for(dtype, shape)
        assert_same(f(v), g(v))
        assert_same(f(v), np.zeros(shape, dtype=dtype))
    # static shape: a constant
    x = T.tensor(dtype, (2, 3), name="x")
    f, g = compile_both([x], x - x, linker)
    assert op_names(f) == []
    assert_same(f(values_for(dtype, (2, 3))), np.zeros((2, 3), dtype=dtype))


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sub_self_float_is_kept(dtype, linker):
    # inf - inf and nan - nan are nan: x - x is not zeros for floats
    x = sym(dtype, 1)
    f, g = compile_both([x], x - x, linker)
    assert op_names(f) == ["sub"]
    v = float_values(dtype, (11,))
    got = f(v)
    assert_same(got, g(v))
    assert np.isnan(got[:3]).all()


# ------------------------------------------------------------------ DimShuffle


@pytest.mark.parametrize("linker", LINKERS)
def test_dimshuffle_chains(linker):
    x = sym("float64", 2)
    v = float_values("float64", (3, 4))
    cases = [
        (x.T.T, 0, v),
        (x.dimshuffle(0, "x", 1).dimshuffle(2, 0, 1), 1, v.T[:, :, None].transpose(0, 1, 2)),
        (x.dimshuffle("x", 1, 0).dimshuffle(1, 2), 1, v.T),
        (x.dimshuffle(1, "x", 0).dimshuffle(2, 1, 0).dimshuffle(0, 2, "x"), 1, v[:, :, None]),
        (x.dimshuffle(0, 1), 0, v),
    ]
    for out, n_dimshuffles, want in cases:
        f, g = compile_both([x], out, linker)
        assert op_names(f).count("DimShuffle") == n_dimshuffles, op_names(f)
        assert set(op_names(f)) <= {"DimShuffle"}
        want = np.asarray(want)
        assert_same(f(v), g(v))
        assert_same(f(v), want.reshape(g(v).shape))
        e = np.zeros((0, 4))
        assert_same(f(e), g(e))


@pytest.mark.parametrize("linker", LINKERS)
def test_dimshuffle_chain_still_checks_dropped_axes(linker):
    x = sym("float64", 2)
    out = x.dimshuffle(0).dimshuffle("x", 0)  # drops axis 1: it must have length 1
    f, g = compile_both([x], out, linker)
    assert op_names(f) == ["DimShuffle"]
    v = np.array([[1.0], [np.nan]])
    assert_same(f(v), g(v))
    for fn in (f, g):
        with pytest.raises(Exception):
            fn(np.ones((2, 3)))


# ------------------------------------------------------------------ Reshape


@pytest.mark.parametrize("linker", LINKERS)
def test_reshape_reshape(linker):
    x = sym("float64", 2)
    n = T.lscalar("n")
    v = float_values("float64", (3, 4))
    for out, inputs, args in [
        (x.reshape((12,)).reshape((4, 3)), [x], [v]),
        (x.reshape((-1,)).reshape((2, -1)), [x], [v]),
        (x.reshape((2, 6)).reshape((n, -1, 2)), [x, n], [v, 3]),
    ]:
        f, g = compile_both(inputs, out, linker)
        assert op_names(f).count("Reshape") == 1, op_names(f)
        assert_same(f(*args), g(*args))
    f, g = compile_both([x], x.reshape((-1,)).reshape((0, 5)), linker)
    e = np.zeros((0, 3))
    assert_same(f(e), g(e))


@pytest.mark.parametrize("linker", LINKERS)
def test_useless_reshape(linker):
    xs = T.tensor("float64", (3, 4), name="xs")
    v = float_values("float64", (3, 4))
    for out in (xs.reshape((3, 4)), xs.reshape((3, -1)), xs.reshape((-1, 4))):
        f, g = compile_both([xs], out, linker)
        assert op_names(f) == []
        assert_same(f(v), g(v))
        assert_same(f(v), v)
    # a different shape stays
    f, g = compile_both([xs], xs.reshape((4, 3)), linker)
    assert op_names(f) == ["Reshape"]
    assert_same(f(v), v.reshape(4, 3))
    # to its own symbolic shape, and a vector to [-1]
    x = sym("float64", 2)
    vec = sym("float64", 1)
    for inp, out, val in [(x, x.reshape(x.shape), v), (vec, vec.reshape((-1,)), v.ravel()),
                          (x, x.reshape(x.shape), np.zeros((0, 2)))]:
        f, g = compile_both([inp], out, linker)
        assert op_names(f) == []
        assert_same(f(val), g(val))
    # a 0-d tensor reshaped to ()
    s = sym("float64", 0)
    f, g = compile_both([s], T.reshape(s, []), linker)
    assert op_names(f) == []
    assert_same(f(np.float64(np.nan)), np.array(np.nan))


# ------------------------------------------------------------------ shapes


def _numpy_shape(*arrays):
    return np.array(np.broadcast_shapes(*[a.shape for a in arrays]), dtype=np.int64)


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_elemwise_does_not_compute_it(linker):
    a = sym("float64", 1, "a")
    b = sym("float64", 1, "b")
    f, g = compile_both([a, b], (T.exp(a) * b).shape, linker)
    assert not any(isinstance(n.op, Elemwise) and n.op.scalar_op.name in ("exp", "mul")
                   for n in f.maker.fgraph.apply_nodes)
    for la, lb in [(3, 3), (1, 4), (4, 1), (1, 1), (0, 0), (1, 0), (0, 1)]:
        va, vb = np.ones(la), np.ones(lb)
        assert_same(f(va, vb), _numpy_shape(va, vb))
        assert_same(f(va, vb), g(va, vb))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_broadcast_ranks(linker):
    a = sym("float64", 1, "a")
    b = sym("float64", 3, "b")
    c = sym("float32", 2, "c")
    out = T.exp(a) * b + T.log(c)
    f, g = compile_both([a, b, c], out.shape, linker)
    assert not any(isinstance(n.op, Elemwise) and n.op.scalar_op.name in ("exp", "log", "mul", "add")
                   for n in f.maker.fgraph.apply_nodes)
    for sa, sb, sc in [((4,), (2, 3, 4), (3, 4)), ((1,), (2, 3, 4), (3, 1)), ((4,), (2, 1, 1), (1, 4)),
                       ((0,), (2, 3, 1), (1, 1)), ((1,), (0, 1, 1), (5, 1))]:
        va, vb, vc = np.ones(sa), np.ones(sb), np.ones(sc, dtype="float32")
        assert_same(f(va, vb, vc), _numpy_shape(va, vb, vc))
        assert_same(f(va, vb, vc), g(va, vb, vc))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_i_and_indexed_shape(linker):
    a = sym("float64", 2, "a")
    b = sym("float64", 1, "b")
    out = T.sqrt(a) + b
    f, g = compile_both([a, b], [T.shape_i(out, 0), T.shape_i(out, 1), out.shape[1]], linker)
    assert not any(isinstance(n.op, Elemwise) and n.op.scalar_op.name in ("sqrt", "add")
                   for n in f.maker.fgraph.apply_nodes)
    for sa, sb in [((2, 3), (3,)), ((2, 1), (5,)), ((0, 1), (4,)), ((3, 1), (0,)), ((2, 3), (1,))]:
        va, vb = np.ones(sa), np.ones(sb)
        want = np.broadcast_shapes(sa, sb)
        got = f(va, vb)
        assert [int(x) for x in got] == [want[0], want[1], want[1]]
        for x in got:
            assert np.asarray(x).dtype == np.int64
        assert [int(x) for x in g(va, vb)] == [int(x) for x in got]


@pytest.mark.parametrize("linker", LINKERS)
def test_static_shape_becomes_constant(linker):
    x = T.tensor("float64", (2, 3), name="x")
    y = T.tensor("float64", (1, 3), name="y")
    f, g = compile_both([x, y], (T.exp(x) + y).shape, linker)
    assert [op for op in ops(f) if not isinstance(op, DeepCopyOp)] == []
    vx, vy = np.ones((2, 3)), np.ones((1, 3))
    assert_same(f(vx, vy), np.array([2, 3], dtype=np.int64))
    assert_same(g(vx, vy), f(vx, vy))
    # 0-d: an empty shape
    s = sym("float64", 0)
    f, g = compile_both([s], T.exp(s).shape, linker)
    assert [op for op in ops(f) if not isinstance(op, DeepCopyOp)] == []
    assert_same(f(np.float64(1)), np.zeros(0, dtype=np.int64))
    assert_same(g(np.float64(1)), np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_through_reshape_dimshuffle_and_reduction(linker):
    x = sym("float64", 2)
    out = T.exp(x).reshape((-1, 2)).dimshuffle(1, "x", 0).sum(axis=1)
    f, g = compile_both([x], out.shape, linker)
    assert not any(isinstance(n.op, Elemwise) and n.op.scalar_op.name == "exp"
                   for n in f.maker.fgraph.apply_nodes)
    for shape in [(3, 4), (2, 1), (0, 6), (6, 0)]:
        v = np.ones(shape)
        want = np.exp(v).reshape((-1, 2)).transpose(1, 0)[:, None, :].sum(axis=1).shape
        assert_same(f(v), np.array(want, dtype=np.int64))
        assert_same(g(v), f(v))


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_input_is_kept(linker):
    x = sym("float64", 2)
    f, g = compile_both([x], x.shape, linker)
    assert [type(op) for op in ops(f) if not isinstance(op, DeepCopyOp)] == [Shape]
    v = np.ones((0, 3))
    assert_same(f(v), np.array([0, 3], dtype=np.int64))
    f, g = compile_both([x], T.shape_i(x, 1), linker)
    assert [type(op) for op in ops(f) if not isinstance(op, DeepCopyOp)] == [Shape_i]


@pytest.mark.parametrize("linker", LINKERS)
def test_shape_of_a_value_computed_anyway_is_read_from_it(linker):
    a = sym("float64", 1, "a")
    b = sym("float64", 2, "b")
    out = T.exp(a) * b
    f, g = compile_both([a, b], [out, out.shape], linker)
    assert Shape in [type(op) for op in ops(f)]
    for sa, sb in [((3,), (2, 3)), ((1,), (2, 4)), ((0,), (2, 1)), ((1,), (0, 1))]:
        va, vb = float_values("float64", sa), float_values("float64", sb)
        got, want = f(va, vb), g(va, vb)
        assert_same(got[0], want[0])
        assert_same(got[1], np.array(want[0].shape, dtype=np.int64))


@pytest.mark.parametrize("linker", LINKERS)
def test_zeros_like_of_elemwise_is_rewritten(linker):
    # x - x of ints becomes an alloc of x's shape; the shape of an elementwise x needs no x
    a = sym("int32", 1, "a")
    b = sym("int32", 2, "b")
    x = a * b
    f, g = compile_both([a, b], x - x, linker)
    assert "mul" not in op_names(f) and "sub" not in op_names(f)
    for sa, sb in [((3,), (2, 3)), ((1,), (2, 4)), ((0,), (1, 1))]:
        va, vb = np.ones(sa, dtype="int32"), np.ones(sb, dtype="int32")
        assert_same(f(va, vb), np.zeros(np.broadcast_shapes(sa, sb), dtype="int32"))
        assert_same(f(va, vb), g(va, vb))


# ------------------------------------------------------------------ stabilize

Z = np.array([-800.0, -50.0, -1.0, -1e-8, -0.0, 0.0, 1e-8, 1.0, 50.0, 800.0, np.nan, np.inf, -np.inf])


def _softplus(x):
    with np.errstate(all="ignore"):
        return np.logaddexp(np.zeros((), x.dtype), x)


def _sigmoid(x):
    with np.errstate(all="ignore"):
        return np.exp(-np.logaddexp(np.zeros((), x.dtype), -x))


def _finite_agree(got, plain, dtype, mask):
    """Where the plain graph does not overflow, both give the same value (to rounding)."""
    got, plain = np.asarray(got), np.asarray(plain)
    assert plain.dtype == got.dtype
    rtol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-9
    np.testing.assert_allclose(got[mask], plain[mask], rtol=rtol, atol=1e-30, equal_nan=True)


STABILIZE = {
    # name: (build, exact reference, ops that must remain, ops that must be gone, "safe" mask)
    "log_sigmoid": (lambda x: T.log(T.sigmoid(x)), lambda v: -_softplus(-v),
                    {"softplus"}, {"log", "sigmoid"}, lambda v: np.abs(v) < 30),
    "log_one_minus_sigmoid": (lambda x: T.log(1 - T.sigmoid(x)), lambda v: -_softplus(v),
                              {"softplus"}, {"log", "sigmoid", "sub"}, lambda v: np.abs(v) < 30),
    "one_minus_sigmoid": (lambda x: 1 - T.sigmoid(x), lambda v: _sigmoid(-v),
                          {"sigmoid", "neg"}, {"sub"}, lambda v: np.abs(v) < 30),
    "log_one_plus": (lambda x: T.log(1 + x), np.log1p, {"log1p"}, {"log", "add"},
                     lambda v: np.abs(v) > 1e-3),
    "log_plus_one": (lambda x: T.log(x + 1), np.log1p, {"log1p"}, {"log", "add"},
                     lambda v: np.abs(v) > 1e-3),
    "log_one_plus_exp": (lambda x: T.log(1 + T.exp(x)), _softplus, {"softplus"}, {"log", "add", "exp", "log1p"},
                         lambda v: np.abs(v) < 30),
    "log1p_exp": (lambda x: T.log1p(T.exp(x)), _softplus, {"softplus"}, {"exp", "log1p"},
                  lambda v: v < 30),
    "exp_minus_one": (lambda x: T.exp(x) - 1, np.expm1, {"expm1"}, {"exp", "sub"},
                      lambda v: np.abs(v) > 1e-3),
    "log_exp": (lambda x: T.log(T.exp(x)), lambda v: v.copy(), set(), {"log", "exp"},
                lambda v: (np.abs(v) > 0.5) & (np.abs(v) < 30)),
}


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(STABILIZE))
def test_stabilize(name, dtype, linker):
    build, ref, present, absent, safe = STABILIZE[name]
    x = sym(dtype, 1)
    f, g = compile_both([x], build(x), linker)
    names = set(op_names(f))
    assert present <= names, (names, present)
    assert not names & absent, (names, absent)
    with np.errstate(over="ignore"):
        v = Z.astype(dtype)
    got = f(v)
    assert got.dtype == np.dtype(dtype)
    with np.errstate(all="ignore"):
        want = ref(v)
    assert_close(got, want, dtype)
    _finite_agree(got, g(v), dtype, safe(v) & np.isfinite(v))
    # 0-d, empty, 2-d
    for shape in [(), (0,), (0, 3), (2, 3)]:
        y = sym(dtype, len(shape))
        f2, g2 = compile_both([y], build(y), linker)
        w = np.resize(np.array([0.5, -2.0, 3.0], dtype=dtype), int(np.prod(shape))).reshape(shape)
        got2 = f2(w)
        assert_close(got2, np.asarray(g2(w)), dtype)


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "bool"])
def test_stabilize_int_inputs_cast_before_negating(dtype, linker):
    # sigmoid of ints works in floats: -x must be taken in floats too (int8 -128 would wrap)
    x = sym(dtype, 1)
    for build, ref in [(lambda x: T.log(T.sigmoid(x)), lambda v: -_softplus(-v)),
                       (lambda x: T.log(1 - T.sigmoid(x)), lambda v: -_softplus(v)),
                       (lambda x: 1 - T.sigmoid(x), lambda v: _sigmoid(-v))]:
        out = build(x)
        f, g = compile_both([x], out, linker)
        assert "softplus" in op_names(f) or "sigmoid" in op_names(f)
        v = values_for(dtype, (7,))
        got = f(v)
        assert got.dtype == np.dtype(out.dtype)
        assert_close(got, ref(v.astype(out.dtype)), out.dtype)


@pytest.mark.parametrize("linker", LINKERS)
def test_stabilize_keeps_what_it_must(linker):
    # log(1 + x) of ints: 1 + x could wrap around, so the graph stays as written
    i = sym("int8", 1)
    f, g = compile_both([i], T.log(1 + i), linker)
    assert "log" in op_names(f) and "add" in op_names(f)
    v = np.array([127, 0, -1, 5], dtype="int8")
    with np.errstate(all="ignore"):
        assert_close(f(v), g(v), "float32")
    # float32 x plus a float64 constant: the original computes in float64
    x = sym("float32", 1)
    f, g = compile_both([x], T.log(T.add(T.constant(np.float64(1.0)), x)), linker)
    assert f.maker.fgraph.outputs[0].dtype == "float64"
    vx = np.array([1e-10, 2.0], dtype="float32")
    assert_close(f(vx), g(vx), "float64")
    # log(exp(x)) of ints is float: not x
    f, g = compile_both([i], T.log(T.exp(i)), linker)
    assert "log" in op_names(f)
    # log(2 - sigmoid(x)) is not log(1 - sigmoid(x))
    y = sym("float64", 1)
    f, g = compile_both([y], T.log(2 - T.sigmoid(y)), linker)
    assert "softplus" not in op_names(f)
    vy = np.array([0.5, -3.0, np.nan])
    assert_close(f(vy), g(vy), "float64")


def _cross_entropy_reference(z, y):
    # -y*log(sigmoid(z)) - (1-y)*log(1-sigmoid(z)) = y*softplus(-z) + (1-y)*softplus(z)
    return y * _softplus(-z) + (1 - y) * _softplus(z)


def _cross_entropy(dtype):
    z = sym(dtype, 1, "z")
    y = sym(dtype, 1, "y")
    p = T.sigmoid(z)
    cost = -y * T.log(p) - (1 - y) * T.log(1 - p)
    return z, y, cost


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cross_entropy_default_mode(dtype):
    z, y, cost = _cross_entropy(dtype)
    f = function([z, y], cost)  # the default mode
    vz = np.array([800, -800, 800, -800, 0, 3, -3, 40], dtype=dtype)
    vy = np.array([1, 1, 0, 0, 1, 0.25, 0.75, 1], dtype=dtype)
    got = f(vz, vy)
    assert got.dtype == np.dtype(dtype)
    assert np.isfinite(got).all()
    assert_close(got, _cross_entropy_reference(vz, vy), dtype)
    np.testing.assert_allclose(got[:4], [0, 800, 800, 0], atol=0, rtol=0)
    with np.errstate(all="ignore"):
        plain = function([z, y], cost, mode=Mode(optimizer=None))(vz, vy)
    assert not np.isfinite(plain[:4]).any()


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cross_entropy(dtype, linker):
    z, y, cost = _cross_entropy(dtype)
    f, g = compile_both([z, y], cost, linker)
    names = op_names(f)
    assert "log" not in names and "sigmoid" not in names
    vz = np.array([800, -800, 800, -800, 0, 3, -3, 40, np.nan, np.inf, -np.inf], dtype=dtype)
    vy = np.array([1, 1, 0, 0, 1, 0.25, 0.75, 1, 1, 1, 0], dtype=dtype)
    got = f(vz, vy)
    assert got.dtype == np.dtype(dtype)
    assert np.isfinite(got[:8]).all()
    assert_close(got[:8], _cross_entropy_reference(vz[:8], vy[:8]), dtype)
    plain = g(vz, vy)
    # z = nan gives nan; z = +-inf gives 0 * inf = nan in the (1-y) or y term, as the plain graph does
    assert np.isnan(got[8:]).all() and np.isnan(plain[8:]).all()
    assert not np.isfinite(plain[:4]).any()
    _finite_agree(got, plain, dtype, np.abs(vz) < 30)


@pytest.mark.parametrize("linker", LINKERS)
def test_neg_log_sigmoid_has_no_double_negation(linker):
    x = sym("float64", 1)
    f, g = compile_both([x], -T.log(T.sigmoid(x)), linker)
    assert op_names(f) == ["neg", "softplus"]
    v = Z.copy()
    assert_close(f(v), _softplus(-v), "float64")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_pow_two_and_minus_one_are_specialized_exactly(dtype, mode):
    """x**2 -> sqr(x) and (floats) x**-1 -> 1/x: no pow left, and numpy's values bit for bit."""
    import ffigraph.tensor as T
    from ffigraph import function
    from ffigraph.compile.mode import Mode
    from ffigraph.printing import debugprint

    x = T.tensor(dtype, (None,), name="x")
    outs = [x ** 2] + ([x ** -1] if dtype != "int64" else [])
    f = function([x], outs, mode=Mode(linker=mode.linker.name))
    text = debugprint(f, file="str")
    assert "pow" not in text, text
    if dtype == "int64":
        xv = np.array([-3, 0, 7, 2 ** 31], dtype=dtype)
    else:
        xv = np.array([-3.5, -0.0, 0.0, 1e-30, np.inf, -np.inf, np.nan, 7.25], dtype=dtype)
    got = f(xv)
    with np.errstate(all="ignore"):
        expected = [np.power(xv, 2)] + ([np.power(xv, np.asarray(-1, dtype))] if dtype != "int64" else [])
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(e))

"""Elementwise fusion: the rewritten graph's shape (one fused node), and its values against numpy
on every layout, dtype and broadcast case, under the Python and C linkers."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.fused import FusedElemwise, FusedReduce
from helpers import LAYOUTS, assert_matches, relayout, sample

LINKERS = ("py", "c", "cvm")


@pytest.fixture(params=LINKERS)
def fast(request):
    return Mode(linker=request.param, optimizer="fast_run")


def _ops(f):
    return [n.op for n in f.maker.fgraph.toposort()]


def _chain(x, y):
    return T.exp(x) * y + T.tanh(x) - 1.5 * y


def _chain_np(x, y):
    return np.exp(x) * y + np.tanh(x) - np.asarray(1.5, x.dtype) * y


# ------------------------------------------------------------------ structure


def test_chain_becomes_one_fused_node(fast):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=fast)
    ops = _ops(f)
    assert len(ops) == 1 and isinstance(ops[0], FusedElemwise), ops
    assert len(ops[0].composite.steps) == 6


def test_siblings_share_one_node_with_two_outputs(fast):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = function([x, y], [x + y, x - y], mode=fast)
    ops = _ops(f)
    assert len(ops) == 1 and isinstance(ops[0], FusedElemwise) and ops[0].composite.nout == 2, ops
    a, b = sample("float64", (3, 4)), sample("float64", (3, 4), rng=np.random.default_rng(1))
    s, d = f(a, b)
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(d, a - b)


def test_reduction_absorbs_its_elementwise_input(fast):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = function([x, y], T.sum(T.exp(x) * y), mode=fast)
    ops = _ops(f)
    assert len(ops) == 1 and isinstance(ops[0], FusedReduce), ops


def test_intermediate_used_twice_is_an_extra_output_not_recomputed(fast):
    x = T.dvector("x")
    e = T.exp(x)
    f = function([x], [e * 2, e], mode=fast)
    ops = _ops(f)
    assert len([op for op in ops if isinstance(op, FusedElemwise)]) == 1
    a = sample("float64", (7,))
    got2, got = f(a)
    np.testing.assert_allclose(got, np.exp(a), rtol=1e-15)
    np.testing.assert_allclose(got2, 2 * np.exp(a), rtol=1e-15)


def test_no_cycle_through_an_outside_node(fast):
    # e feeds both the dot (outside) and the add; fusing e with the add would make a cycle
    x, w = T.dmatrix("x"), T.dmatrix("w")
    e = T.exp(x)
    out = e + T.dot(e, w)
    f = function([x, w], out, mode=fast)
    a, b = sample("float64", (3, 3)), sample("float64", (3, 3), rng=np.random.default_rng(2))
    np.testing.assert_allclose(f(a, b), np.exp(a) + np.exp(a) @ b, rtol=1e-12)


def test_no_rewrites_mode_leaves_the_graph_alone():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=Mode(linker="c", optimizer=None))
    assert all(type(op) is Elemwise or type(op).__name__ == "DimShuffle" for op in _ops(f))


def test_excluding_fusion():
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=Mode(linker="c", optimizer="fast_run").excluding("fusion"))
    assert not any(isinstance(op, (FusedElemwise, FusedReduce)) for op in _ops(f))


# ------------------------------------------------------------------ values


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(0,), (1,), (5,), (1000,), (3, 0), (4, 7), (2, 3, 5), ()])
def test_chain_values(fast, dtype, shape):
    x, y = T.tensor(dtype, (None,) * len(shape), "x"), T.tensor(dtype, (None,) * len(shape), "y")
    f = function([x, y], _chain(x, y), mode=fast)
    a = sample(dtype, shape, special=True)
    b = sample(dtype, shape, rng=np.random.default_rng(3))
    expected = _chain_np(a, b)
    for layout in LAYOUTS:
        with np.errstate(all="ignore"):
            got = f(relayout(a, layout), relayout(b, layout))
        assert_matches(got, expected, f.maker.fgraph.outputs[0].type, rtol=4e-6 if dtype == "float32" else 1e-13)


@pytest.mark.parametrize("sa,sb", [((3, 1), (1, 4)), ((1, 5), (4, 5)), ((), (3, 2)), ((2, 1, 3), (4, 1)),
                                   ((1,), (0,)), ((1, 1), (1, 1))])
def test_broadcasting_with_runtime_length_one(fast, sa, sb):
    nd = max(len(sa), len(sb))
    x, y = T.tensor("float64", (None,) * len(sa), "x"), T.tensor("float64", (None,) * len(sb), "y")
    f = function([x, y], [T.exp(x) * 2, T.exp(x) * y + x], mode=fast)
    a, b = sample("float64", sa), sample("float64", sb, rng=np.random.default_rng(4))
    e2, full = f(a, b)
    assert e2.shape == a.shape and full.shape == np.broadcast_shapes(sa, sb)
    np.testing.assert_allclose(e2, np.exp(a) * 2, rtol=1e-14)
    np.testing.assert_allclose(full, np.exp(a) * b + a, rtol=1e-14)
    assert full.ndim == nd


def test_broadcast_error_names_the_shapes(fast):
    x, y = T.dvector("x"), T.dvector("y")
    f = function([x, y], _chain(x, y), mode=fast)
    with pytest.raises(ValueError, match="broadcast"):
        f(np.ones(3), np.ones(4))
    np.testing.assert_allclose(f(np.zeros(2), np.ones(2)), _chain_np(np.zeros(2), np.ones(2)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_and_bool_chains(fast, dtype):
    x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None, None), "y")
    if dtype == "bool":
        out, ref = (x | y) & ~(x ^ y), lambda a, b: (a | b) & ~(a ^ b)
    else:
        out = T.maximum(x * y + 3, y) % 5 - x // 2
        def ref(a, b):
            with np.errstate(all="ignore"):
                return np.maximum(a * b + np.asarray(3, dtype), b) % np.asarray(5, dtype) - a // np.asarray(2, dtype)
    f = function([x, y], out, mode=fast)
    a = sample(dtype, (4, 6), low=0 if dtype == "uint8" else -4, high=6)
    b = sample(dtype, (4, 6), rng=np.random.default_rng(5), low=0 if dtype == "uint8" else -4, high=6)
    for layout in LAYOUTS:
        assert_matches(f(relayout(a, layout), relayout(b, layout)), ref(a, b), out.type)


def test_mixed_dtypes_and_casts(fast):
    # the unfused graph under the Python linker is the reference for dtype rules
    x, i = T.fvector("x"), T.ivector("i")
    outs = [T.exp(i) * x + T.cast(i, "float32") / 2, T.sqrt(x * x) + T.cast(x > 0, "int8"),
            T.cast(T.exp(x), "int16") * i]
    f = function([x, i], outs, mode=fast)
    ref = function([x, i], outs, mode=Mode(linker="py", optimizer=None))
    a = sample("float32", (33,))
    b = sample("int32", (33,), rng=np.random.default_rng(6))
    for got, want, var in zip(f(a, b), ref(a, b), outs):
        assert_matches(got, want, var.type, rtol=1e-6 if got.dtype == np.float32 else 1e-14)


def test_integer_error_inside_a_fused_loop(fast):
    x, y = T.lvector("x"), T.lvector("y")
    f = function([x, y], (x + 1) ** y * 2, mode=fast)
    np.testing.assert_array_equal(f(np.array([1, 2]), np.array([2, 3])), [8, 54])
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([1, 2]), np.array([2, -1]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_values_and_signed_zeros(fast, dtype):
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 700, -800, 1e30, -1e30, 1, -1],
                    dtype=dtype)
    x = T.tensor(dtype, (None,), "x")
    outs = [T.exp(x) * 1.5, T.tanh(x) + 0.0 * x, T.log(x) - x, T.sin(x) * T.cos(x), T.expm1(x) * 2,
            T.log1p(x) * 3]
    refs = [lambda a: np.exp(a) * 1.5, lambda a: np.tanh(a) + 0.0 * a, lambda a: np.log(a) - a,
            lambda a: np.sin(a) * np.cos(a), lambda a: np.expm1(a) * 2, lambda a: np.log1p(a) * 3]
    f = function([x], outs, mode=fast)
    with np.errstate(all="ignore"):
        got = f(vals)
        for g, ref in zip(got, refs):
            want = ref(vals).astype(dtype)
            np.testing.assert_allclose(g, want, rtol=5e-6 if dtype == "float32" else 2e-15, equal_nan=True)
            same_zero = (want == 0)
            assert (np.signbit(g[same_zero]) == np.signbit(want[same_zero])).all()


# ------------------------------------------------------------------ fused reductions


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fused_reductions(fast, kind, axis, dtype):
    x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None, None), "y")
    out = getattr(T, kind)(T.exp(x * 0.1) * y, axis=axis)
    f = function([x, y], out, mode=fast)
    a = sample(dtype, (37, 300))
    b = sample(dtype, (37, 300), rng=np.random.default_rng(7), low=0.5, high=1.5)
    expected = getattr(np, kind)(np.exp(a * np.asarray(0.1, dtype)) * b, axis=axis)
    rtol = 1e-4 if dtype == "float32" else 1e-11
    if kind == "prod":
        rtol *= 100
    for layout in LAYOUTS:
        assert_matches(f(relayout(a, layout), relayout(b, layout)), expected, out.type, rtol=rtol, atol=0)


def test_fused_reduction_nan_and_empty(fast):
    x = T.dmatrix("x")
    f = function([x], [T.max(x * 2, axis=1), T.sum(x * 2, axis=0), T.mean(x * 2, axis=1)], mode=fast)
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]])
    mx, sm, mn = f(a)
    np.testing.assert_array_equal(mx, [np.nan, 10.0])
    np.testing.assert_array_equal(sm, [10.0, np.nan, -np.inf])
    np.testing.assert_array_equal(mn, [np.nan, -np.inf])
    g = function([x], [T.sum(T.exp(x), axis=0), T.mean(T.exp(x), axis=1)], mode=fast)
    sm, mn = g(np.zeros((2, 0)))
    assert sm.shape == (0,)
    np.testing.assert_array_equal(mn, [np.nan, np.nan])
    h = function([x], T.max(T.exp(x), axis=1), mode=fast)
    assert h(np.zeros((0, 3))).shape == (0,)
    with pytest.raises(ValueError, match="empty"):
        h(np.zeros((2, 0)))  # max over an empty axis
    np.testing.assert_array_equal(h(np.zeros((1, 2))), [1.0])


def test_fused_reduction_broadcast_inputs(fast):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = function([x, y], T.sum(T.exp(x) * y, axis=0), mode=fast)
    a, b = sample("float64", (5, 1)), sample("float64", (1, 4), rng=np.random.default_rng(8))
    np.testing.assert_allclose(f(a, b), np.sum(np.exp(a) * b, axis=0), rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("linker", ["py", "c"])
def test_sigmoid_and_softplus_expand_into_vectorised_steps(dtype, linker):
    """Fusion writes sigmoid/softplus as exp(-|x|), log1p, divisions and a switch (so libmvec
    runs them a block at a time): same values as the stable reference, NaN and ±inf included."""
    import ffigraph.tensor as T
    from ffigraph import function
    from ffigraph.compile.mode import Mode
    from ffigraph.printing import debugprint

    x = T.tensor(dtype, (None,), name="x")
    f = function([x], [T.sigmoid(x), T.softplus(x)], mode=Mode(linker=linker))
    text = debugprint(f, file="str")
    assert "sigmoid(" not in text.split("Inner graphs")[-1] and "log1p" in text, text
    xv = np.concatenate([np.linspace(-120, 120, 601), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -800, 800]])
    xv = xv.astype(dtype)
    got_sigmoid, got_softplus = f(xv)
    wide = xv.astype(np.longdouble)
    with np.errstate(all="ignore"):
        want_sigmoid = np.where(wide >= 0, 1 / (1 + np.exp(-np.abs(wide))), np.exp(-np.abs(wide)) / (1 + np.exp(-np.abs(wide))))
        want_softplus = np.maximum(wide, 0) + np.log1p(np.exp(-np.abs(wide)))
    rtol = 1e-14 if dtype == "float64" else 2e-6
    for got, want in ((got_sigmoid, want_sigmoid), (got_softplus, want_softplus)):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want.astype(dtype), rtol=rtol, atol=0, equal_nan=True)

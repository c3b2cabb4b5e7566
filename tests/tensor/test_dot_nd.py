"""``dot`` of every rank (Theano 1.0's numpy.dot semantics) and the BLAS names of compiled products
(Dot22, Gemv, Gemm, Ger: ffigraph/tensor/blas_ops.py, ffigraph/rewriting/blas.py; issue 46).

Cheap on purpose: one function per linker with many outputs covers the ranks, empty axes and
negative strides; the oracle is numpy.dot (and a hand derivation for the gradients).
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad
from ffigraph.tensor import blas, dot_c
from ffigraph.tensor.blas_ops import Dot22, Gemm, Gemv, Ger

RNG = np.random.default_rng(46)


def _arr(shape, dtype="float64"):
    return RNG.standard_normal(shape).astype(dtype)


# name -> value; reversed and transposed views among them, so that negative strides reach the C code
VALUES = {
    "s": _arr(()), "v4": _arr((4,)), "v3": _arr((3,)), "M": _arr((3, 4)), "N": _arr((4, 5)),
    "A3": _arr((2, 3, 4)), "B3": _arr((6, 4, 5)), "A4": _arr((2, 1, 3, 4)), "B4": _arr((2, 3, 4, 5)),
    "R3": _arr((3, 4, 4))[::-1, :, ::-2],                       # (3, 4, 2), negative strides
    "RN": _arr((5, 4))[::-1].T,                                 # (4, 5), transposed and reversed
    "w2": _arr((6,))[::-3], "P": _arr((3, 2, 4))[:, ::-1],     # (2,) and (3, 2, 4), negative strides
    "E3": _arr((2, 0, 4)), "K3": _arr((2, 3, 0)), "K2": _arr((0, 5)), "EN": _arr((4, 0)),
}

# (a, b): numpy.dot's rank combinations (0-d included), empty free and summed axes, strided views
CASES = [
    ("s", "A3"), ("A3", "s"), ("v4", "B3"), ("A3", "v4"), ("M", "B3"), ("A3", "N"), ("A3", "B3"),
    ("A4", "N"), ("A4", "B4"), ("A3", "RN"), ("v4", "R3"), ("R3", "w2"), ("R3", "P"),
    ("E3", "N"), ("K3", "K2"), ("A3", "EN"), ("M", "N"), ("v4", "v4"), ("M", "v4"), ("v3", "M"),
]


def _symbols(dtype):
    return {k: T.TensorType(dtype, (None,) * v.ndim)(k) for k, v in VALUES.items()}


def _check_all(linker, dtype, rtol):
    sym = _symbols(dtype)
    cases = CASES
    outs = [T.dot(sym[a], sym[b]) for a, b in cases]
    for (a, b), out in zip(cases, outs):
        want = np.dot(VALUES[a], VALUES[b])
        assert out.ndim == want.ndim and out.dtype == dtype, (a, b, out.type)
    names = sorted({n for case in cases for n in case})
    f = function([sym[n] for n in names], outs, mode=Mode(linker=linker))
    got = f(*[VALUES[n].astype(dtype, copy=False) for n in names])   # float64: the views as they are
    for (a, b), g in zip(cases, got):
        want = np.dot(VALUES[a].astype(dtype), VALUES[b].astype(dtype))
        assert g.shape == want.shape and g.dtype == want.dtype, (a, b, g.shape, want.shape)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol, err_msg="dot(%s, %s)" % (a, b))
    return f


@pytest.mark.parametrize("linker", ["py", "c"])
def test_dot_of_every_rank_matches_numpy_dot(linker):
    _check_all(linker, "float64", 1e-12)


def test_dot_nd_float32_under_c():
    _check_all("c", "float32", 1e-5)


def test_output_type_follows_numpy_dot():
    x3 = T.TensorType("float64", (2, None, 4))("x3")
    w = T.TensorType("float64", (4, 1))("w")
    assert T.dot(x3, w).type.shape == (2, None, 1)            # a's free axes, then b's
    assert T.dot(x3, T.dmatrix()).type.shape == (2, None, None)
    assert T.dot(T.dvector(), T.tensor3()).ndim == 2           # b's first and last axes
    assert T.dot(T.tensor4(), T.tensor3()).ndim == 5
    assert T.dot(T.dscalar(), T.tensor3()).ndim == 3
    assert T.dot(T.tensor3(dtype="float32"), T.dmatrix()).dtype == "float64"
    assert T.dot(T.tensor3(dtype="int32"), T.matrix(dtype="int64")).dtype == "int64"
    with pytest.raises(ValueError, match="dot: shape mismatch"):
        T.dot(x3, T.TensorType("float64", (5, 3))("bad"))     # 4 vs 5, known statically
    a, b = T.tensor3("a"), T.dmatrix("b")
    g = function([a, b], T.dot(a, b))
    with pytest.raises(ValueError, match=r"b has shape \(5, 2\), expected \(4, None\)"):
        g(np.ones((2, 3, 4)), np.ones((5, 2)))                 # 4 vs 5, at run time: the shape check names b


def test_dot_nd_integers_and_mixed_dtypes():
    a, b = T.tensor3("a", dtype="int32"), T.matrix("b", dtype="int64")
    av, bv = RNG.integers(-9, 9, (2, 3, 4)).astype("int32"), RNG.integers(-9, 9, (4, 2))
    f = function([a, b], [T.dot(a, b), T.dot(T.cast(a, "float32"), T.cast(b, "float64"))], mode=Mode(linker="c"))
    got_i, got_f = f(av, bv)
    np.testing.assert_array_equal(got_i, np.dot(av, bv))
    assert got_i.dtype == np.int64 and got_f.dtype == np.float64
    np.testing.assert_allclose(got_f, np.dot(av.astype("float32"), bv.astype("float64")), rtol=1e-12)


@pytest.mark.finite_differences
def test_gradient_of_an_lstm_shaped_dot():
    """grad of sum(dot(x3, W) * R): dot(R, W.T) for x3 and tensordot(x3, R, [[0, 1], [0, 1]]) for W."""
    x3, W, R = T.tensor3("x3"), T.dmatrix("W"), T.tensor3("R")
    cost = (T.dot(x3, W) * R).sum()
    gx, gw = T.grad(cost, [x3, W])
    xv, wv, rv = _arr((2, 3, 4)), _arr((4, 5)), _arr((2, 3, 5))
    f = function([x3, W, R], [gx, gw], mode=Mode(linker="c"))
    got_x, got_w = f(xv, wv, rv)
    np.testing.assert_allclose(got_x, np.dot(rv, wv.T), rtol=1e-12)
    np.testing.assert_allclose(got_w, np.tensordot(xv, rv, [[0, 1], [0, 1]]), rtol=1e-12)
    # finite differences over N-d . 2-d, 1-d . N-d and N-d . N-d at once
    verify_grad(lambda a, b, v, c: T.concatenate([T.dot(a, b).flatten(), T.dot(v, c).flatten(),
                                                   T.dot(a, c).flatten()]),
                [xv, wv, _arr((4,)), _arr((3, 4, 2))], rng=np.random.RandomState(46),
                mode=Mode(linker="py"))


def test_lstm_dot_runs_through_blas_gemm():
    """dot(x3d, W) compiles to one matrix product (a Dot22) whose C code calls BLAS gemm."""
    x3, W = T.tensor3("x3"), T.dmatrix("W")
    f = function([x3, W], T.dot(x3, W), mode=Mode(linker="c"))
    products = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, T.Dot)]
    assert [type(n.op) for n in products] == [Dot22], f.maker.fgraph.toposort()
    if dot_c.blas_enabled():
        support = products[0].op.c_support_code_apply(products[0], "node")
        assert blas.library().symbol("dgemm") in support
    xv = _arr((5, 4, 6))[:, ::-1, ::2]    # not contiguous: the reshape copies it
    wv = _arr((3, 7))
    np.testing.assert_allclose(f(xv, wv), np.dot(xv, wv), rtol=1e-12)


def test_tensordot_and_batched_dot_agree_with_dot():
    a, b, c = T.tensor3("a"), T.tensor3("b"), T.tensor4("c")
    av, bv, cv = _arr((2, 3, 4)), _arr((2, 4, 5)), _arr((2, 3, 4, 5))
    outs = [T.tensordot(a, b, [[2], [1]]), T.dot(a, b), T.batched_dot(a, b), T.batched_dot(c, b.dimshuffle(0, 2, 1))]
    f = function([a, b, c], outs, mode=Mode(linker="c"))
    td, d, bd, bd4 = f(av, bv, cv)
    np.testing.assert_allclose(td, np.dot(av, bv), rtol=1e-12)
    np.testing.assert_allclose(d, td, rtol=1e-12)
    np.testing.assert_allclose(bd, np.stack([np.dot(av[i], bv[i]) for i in range(2)]), rtol=1e-12)
    bt = bv.transpose(0, 2, 1)
    np.testing.assert_allclose(bd4, np.stack([np.dot(cv[i], bt[i]) for i in range(2)]), rtol=1e-12)


# ------------------------------------------------------------------ BLAS names (item 16)


def _names(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


@pytest.mark.parametrize("linker", ["py", "c"])
def test_compiled_products_have_blas_names(linker):
    x, y, z = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("z")
    v, u, a = T.dvector("v"), T.dvector("u"), T.dscalar("a")
    graphs = {
        "Gemv": [T.dot(x, v), T.dot(u, y)],
        "Dot22": [T.dot(x, y)],
        "Gemm": [z + a * T.dot(x, y), z - 0.25 * T.dot(x, y), T.dot(x, y) * a + z, z - T.dot(x, y)],
        "Ger": [z + a * T.outer(v, u), z - T.outer(v, u) * 0.5,
                z + a * T.dot(v.dimshuffle(0, "x"), u.dimshuffle("x", 0))],   # Theano's outer: a dot
        "Dot": [T.dot(v, u)],                                                  # vector.vector stays Dot
    }
    rng = np.random.default_rng(7)
    vals = dict(x=rng.standard_normal((3, 4)), y=rng.standard_normal((4, 5))[:, ::-1], v=rng.standard_normal(8)[::-2],
                u=rng.standard_normal(4), a=np.float64(-1.5))
    z_for = {"Gemm": rng.standard_normal((3, 5))[::-1], "Ger": rng.standard_normal((4, 4)).T}
    inputs = [x, y, z, v, u, a]
    for name, outs in graphs.items():
        for out in outs:
            f = function(inputs, out, mode=Mode(linker=linker), on_unused_input="ignore")
            plain = function(inputs, out, mode=Mode(linker="py", optimizer=None), on_unused_input="ignore")
            names = _names(f)
            assert names == [name], (name, names)
            node = f.maker.fgraph.toposort()[0]
            assert str(node.op) == name and node.op.__class__.__name__ == name
            args = [vals["x"], vals["y"], z_for.get(name, np.zeros((1, 1))), vals["v"], vals["u"], vals["a"]]
            np.testing.assert_allclose(f(*args), plain(*args), rtol=1e-12, atol=1e-14)   # the unfused graph


def test_float32_names_and_what_stays_dot():
    x, y, z = T.matrix("x", dtype="float32"), T.matrix("y", dtype="float32"), T.matrix("z", dtype="float32")
    f = function([x, y, z], [T.dot(x, y), z + np.float32(2) * T.dot(x.T, y)], mode=Mode(linker="c"))
    assert sorted(_names(f)) == ["DimShuffle", "Dot22", "Gemm"], _names(f)
    xv, yv, zv = _arr((4, 4), "float32"), _arr((4, 5), "float32")[:, ::-1], _arr((4, 5), "float32")
    d, g = f(xv, yv, zv)
    np.testing.assert_allclose(d, xv.dot(yv), rtol=1e-5)
    np.testing.assert_allclose(g, zv + np.float32(2) * xv.T.dot(yv), rtol=1e-5)
    # integers and mixed dtypes keep the plain Dot; a product used twice keeps its Dot22
    i, j = T.matrix("i", dtype="int64"), T.matrix("j", dtype="int64")
    assert _names(function([i, j], T.dot(i, j))) == ["Dot"]
    w = T.dmatrix("w")
    assert _names(function([x, w], T.dot(x, w))) == ["Dot"]
    p = T.dot(x, y)
    assert sorted(_names(function([x, y, z], [p, z + p]))) == ["Dot22", "Elemwise"]


def test_gemm_and_ger_broadcast_like_the_unfused_graph():
    """A run-time length 1 of z (or of the product) is repeated, as z + a * dot(x, y) does; shapes
    that do not broadcast raise, naming the op and both shapes."""
    x, y, z, v, u = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("z"), T.dvector("v"), T.dvector("u")
    for linker in ("py", "c"):
        gemm = function([x, y, z], z + 2.0 * T.dot(x, y), mode=Mode(linker=linker))
        ger = function([v, u, z], z - 0.5 * T.outer(v, u), mode=Mode(linker=linker))
        assert _names(gemm) == ["Gemm"] and _names(ger) == ["Ger"]
        for xs, ys, zs in [((3, 4), (4, 5), (1, 5)), ((1, 4), (4, 5), (3, 5)), ((3, 4), (4, 1), (3, 5)),
                           ((1, 4), (4, 1), (3, 5)), ((0, 4), (4, 5), (1, 5)), ((3, 0), (0, 5), (3, 5)),
                           ((3, 4), (4, 5), (1, 1))]:
            a, b, c = _arr(xs), _arr(ys), _arr(zs)
            got, want = gemm(a, b, c), c + 2.0 * np.dot(a, b)
            assert got.shape == want.shape, (xs, ys, zs)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        for n, m, zs in [(3, 5, (1, 5)), (1, 5, (3, 5)), (3, 1, (3, 5)), (3, 5, (1, 1)), (0, 5, (1, 5))]:
            a, b, c = _arr((n,)), _arr((m,)), _arr(zs)
            got, want = ger(a, b, c), c - 0.5 * np.outer(a, b)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        with pytest.raises(ValueError, match=r"Gemm: z has shape \(2, 5\) but dot\(x, y\) has shape \(3, 5\)"):
            gemm(_arr((3, 4)), _arr((4, 5)), _arr((2, 5)))
        with pytest.raises(ValueError, match=r"Ger: A has shape \(2, 5\) but outer\(x, y\) has shape \(3, 5\)"):
            ger(_arr((3,)), _arr((5,)), _arr((2, 5)))


def test_theano_tutorial_check_finds_cpu_blas_nodes():
    """The tutorial's logistic regression: 'Used the cpu' when a Gemv/Gemm is in the compiled graph."""
    x, y = T.dmatrix("x"), T.dvector("y")
    w, b = T.dvector("w"), T.dscalar("b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    train = function([x, y, w, b], [w - 0.1 * gw, b - 0.1 * gb])
    assert any(n.op.__class__.__name__ in ["Gemv", "CGemv", "Gemm", "CGemm"] for n in train.maker.fgraph.toposort())
    X, Y, W = _arr((6, 3)), (RNG.random(6) > 0.5).astype("float64"), _arr((3,))
    nw, nb = train(X, Y, W, 0.2)
    p = 1 / (1 + np.exp(-X.dot(W) - 0.2))
    np.testing.assert_allclose(nw, W - 0.1 * (X.T.dot(p - Y) / 6 + 0.02 * W), rtol=1e-12)
    np.testing.assert_allclose(nb, 0.2 - 0.1 * (p - Y).mean(), rtol=1e-12)


def test_blas_ops_refuse_bad_inputs_and_have_gradients():
    m, v, s = T.dmatrix("m"), T.dvector("v"), T.dscalar("s")
    with pytest.raises(TypeError, match="Dot22: takes two matrices"):
        Dot22()(m, v)
    with pytest.raises(TypeError, match="Gemv: takes a matrix and a vector"):
        Gemv()(m, m)
    with pytest.raises(TypeError, match="Gemm: a .* must be 0-d"):
        Gemm()(m, m, m, m, s)
    with pytest.raises(TypeError, match="Gemm: z, a, x, y, b must share one dtype"):
        Gemm()(m, s, m, T.matrix(dtype="float32"), s)
    with pytest.raises(TypeError, match="Ger: x .* must be 1-d"):
        Ger()(m, s, m, v)
    with pytest.raises(ValueError, match="Gemm: the columns of x and rows of y differ"):
        Gemm()(m, s, T.TensorType("float64", (2, 3))(), T.TensorType("float64", (4, 2))(), s)
    assert blas.Gemv is Gemv and blas.Gemm is Gemm and blas.Dot22 is Dot22 and blas.Ger is Ger
    rs = np.random.RandomState(3)
    verify_grad(lambda z, a, x, y, b: Gemm()(z, a, x, y, b),
                [_arr((3, 2)), np.float64(0.7), _arr((3, 4)), _arr((4, 2)), np.float64(-1.3)], rng=rs,
                mode=Mode(linker="py"))
    verify_grad(lambda A, a, x, y: Ger()(A, a, x, y), [_arr((3, 2)), np.float64(0.7), _arr((3,)), _arr((2,))],
                rng=rs, mode=Mode(linker="py"))


def test_the_accumulating_rewrites_can_be_excluded():
    x, y, z = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("z")
    out = z + 3.0 * T.dot(x, y)
    assert _names(function([x, y, z], out, mode=Mode(linker="py"))) == ["Gemm"]
    assert sorted(_names(function([x, y, z], out, mode=Mode(linker="py").excluding("gemm")))) == \
        ["Dot22", "FusedElemwise"]
    assert sorted(_names(function([x, y, z], out, mode=Mode(linker="py").excluding("blas")))) == \
        ["Dot", "FusedElemwise"]


def test_gradients_of_broadcasting_gemm_and_ger():
    rs = np.random.RandomState(5)
    verify_grad(lambda z, a, x, y, b: Gemm()(z, a, x, y, b),
                [_arr((1, 2)), np.float64(0.7), _arr((3, 4)), _arr((4, 2)), np.float64(-1.3)], rng=rs,
                mode=Mode(linker="py"))
    verify_grad(lambda z, a, x, y, b: Gemm()(z, a, x, y, b),
                [_arr((3, 2)), np.float64(0.7), _arr((1, 4)), _arr((4, 2)), np.float64(-1.3)], rng=rs,
                mode=Mode(linker="py"))
    verify_grad(lambda A, a, x, y: Ger()(A, a, x, y), [_arr((3, 1)), np.float64(0.7), _arr((3,)), _arr((2,))],
                rng=rs, mode=Mode(linker="py"))


def test_static_shapes_of_gemm_and_ger():
    def m(*shape):
        return T.TensorType("float64", shape)()

    s = T.dscalar()
    assert Gemm()(m(1, 5), s, m(3, 4), m(4, None), s).type.shape == (3, 5)   # z's 1 repeated, its 5 kept
    assert Gemm()(m(None, None), s, m(3, 4), m(4, 1), s).type.shape == (3, None)
    assert Ger()(m(2, 1), s, T.TensorType("float64", (None,))(), T.TensorType("float64", (6,))()).type.shape == \
        (2, 6)
    with pytest.raises(ValueError, match="Gemm: the rows of z and x differ \\(2 vs 3\\)"):
        Gemm()(m(2, 5), s, m(3, 4), m(4, 5), s)
